// The low-latency (LL) form of the small collectives: every 8-byte word a PE sends carries
// 4 bytes of data in its low half and the step's flag (coll_ll_flag of its epoch) in its
// high half, written with one relaxed store per 16-byte line of two words. A receiver polls
// the data itself until every word of a line carries the step's flag: no signal, no fence
// (but in two steps of every 2^31, below), no Ready or Done round trip; the data crosses
// once, at half the link's payload rate, so the form pays where a call is latency-bound
// (docs/collectives.md, "The low-latency form").
//
// Layout (CollLl): per PE, a zeroed symmetric region with the slots' step counters at its
// head and then one region of `region_bytes` per (slot, epoch parity, source PE). Line i
// of PE p's piece for PE q in the step of epoch e on slot b lies in q's region
// (b, e % 2, p) at 16 * i.
//
// Why no peer overwrites a line still to be read. Every LL step is symmetric: every PE
// sends at least line 0 to every other PE and waits for line 0 (at least) from every
// other PE. PE p writes q's (b, e % 2, p) in step e, which q last read in step e - 2. p
// finished step e - 1, in which it received a line q wrote in step e - 1, after q had
// finished step e - 2: q's reads of it had returned (their values were stored or
// reduced before q's barrier at the end of the step).
//
// Why no stale line passes for a new one. A step's flag is its epoch's low 31 bits with
// bit 31 set (coll_ll_flag): never 0, the flag of a zeroed line, and the same for two
// epochs only if they are a multiple of 2^31 apart. A line not rewritten since (later
// pieces were shorter) could carry such a flag, so every PE zeroes its regions of one
// parity in the steps of epochs 0 and 1 modulo 2^31 (the cleaning steps): in step e the
// regions of parity (e + 1) % 2, which peers last wrote in step e - 1 (read by this PE
// then) and write next in step e + 1, after they have seen this PE's line 0 of step e,
// sent after the zeroing (release there, acquire on the receivers' side). Every 2^31
// epochs each parity is zeroed once, between any two steps with the same flag
// (docs/collectives.md, "The low-latency form").
//
// Contract: that of the staged forms (staged.cuh): on Ok, dest is complete here, src may
// be reused and no peer touches src or dest for this call. What a step reads from this PE
// (src) must be final when it starts: written by this CTA (any thread: the step begins
// with a barrier), before the kernel, or published grid-wide. Every PE runs the same LL
// steps on the same slots in the same order, one CTA per slot at a time, with the same
// part, parts and sizes; LL slots are their own (a CollLl's counters), not a CollState's.
// CTA `part` moves part `part` of `parts` of every piece, cut as the other forms cut it
// (coll_slice: 16-byte boundaries), so it reads the same part of src as they do.
// A CTA's piece for one peer takes 2 bytes of region per byte (lines of 16 bytes per 8
// bytes of data); a larger one than region_bytes / 2 traps with a message. A timeout
// (timeout_ns, 0: none) prints the PE, the call, the slot, the epoch, the peer and the
// line, and returns Status::Timeout in every thread; the PEs then no longer agree on the
// slot's epoch: do not use the state again. Collective over the CTA.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"
#include "tmashmem/device/collectives/reduce_math.cuh"
#include "tmashmem/device/detail/clock.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/ld_st.cuh"
#include "tmashmem/device/detail/threads.cuh"

namespace tmashmem {

/// Where the LL steps' counters and lines live (POD; pass by value).
struct CollLl {
  uint64_t* epochs;     ///< [slots], this PE's step counters (local)
  char* lines;          ///< symmetric: a region per (slot, parity, source PE)
  size_t region_bytes;  ///< bytes of lines per region, a multiple of 16
  int slots;
};

/// Bytes of an LL state's head (the counters), 256-byte aligned.
__host__ __device__ constexpr size_t coll_ll_head_bytes(int slots) {
  return (static_cast<size_t>(slots) * sizeof(uint64_t) + 255u) / 256u * 256u;
}

/// Lines that carry `bytes` of data (one for none: every step sends at least line 0).
__host__ __device__ constexpr size_t coll_ll_lines(size_t bytes) {
  return bytes == 0 ? 1 : (bytes + 7u) / 8u;
}

/// Bytes of zeroed symmetric memory (tmashmem_calloc) a state of `slots` slots needs for
/// pieces of up to `piece_bytes` per CTA and peer at `n_pes` PEs.
__host__ __device__ constexpr size_t coll_ll_state_bytes(int slots, int n_pes, size_t piece_bytes) {
  return coll_ll_head_bytes(slots) + static_cast<size_t>(slots) * 2u * static_cast<size_t>(n_pes) *
                                         16u * coll_ll_lines(piece_bytes);
}

/// The state over `bytes` of zeroed symmetric memory at `base` (the same on every PE).
__host__ __device__ inline CollLl coll_ll_state(void* base, size_t bytes, int slots, int n_pes) {
  char* p = static_cast<char*>(base);
  const size_t head = coll_ll_head_bytes(slots);
  const size_t regions = static_cast<size_t>(slots) * 2u * static_cast<size_t>(n_pes);
  const size_t region = bytes > head ? (bytes - head) / regions / 16u * 16u : 0;
  return CollLl{reinterpret_cast<uint64_t*>(p), p + head, region, slots};
}

/// Epochs between the cleaning steps of one parity; flags repeat with this period.
constexpr uint64_t kCollLlFlagPeriod = uint64_t(1) << 31;

/// The flag of the step of `epoch`: never 0 (a zeroed line's).
__host__ __device__ constexpr uint32_t coll_ll_flag(uint64_t epoch) {
  return static_cast<uint32_t>(epoch % kCollLlFlagPeriod) | 0x80000000u;
}

/// Whether the step of `epoch` zeroes this PE's regions of parity (epoch + 1) % 2.
__host__ __device__ constexpr bool coll_ll_cleans(uint64_t epoch) {
  return epoch % kCollLlFlagPeriod < 2;
}

namespace detail {

__device__ __forceinline__ uint64_t* coll_ll_region(const CollLl& ll, int slot, uint64_t epoch,
                                                    int n_pes, int from) {
  const size_t r = (static_cast<size_t>(slot) * 2u + (epoch & 1u)) * static_cast<size_t>(n_pes) +
                   static_cast<size_t>(from);
  return reinterpret_cast<uint64_t*>(ll.lines + r * ll.region_bytes);
}

// Data bytes of line i of a piece of `len` bytes.
__device__ __forceinline__ size_t coll_ll_valid(size_t len, size_t i) {
  const size_t at = 8 * i;
  return at >= len ? 0 : (len - at < 8 ? len - at : 8);
}

// The `valid` bytes at p as the low bytes of a word (the rest zero).
__device__ __forceinline__ uint64_t coll_ll_load8(const char* p, size_t valid) {
  if (valid == 8 && (reinterpret_cast<uintptr_t>(p) & 7u) == 0)
    return *reinterpret_cast<const uint64_t*>(p);
  uint64_t v = 0;
  for (size_t i = 0; i < valid; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

__device__ __forceinline__ void coll_ll_store8(char* p, uint64_t v, size_t valid) {
  if (valid == 8 && (reinterpret_cast<uintptr_t>(p) & 7u) == 0) {
    *reinterpret_cast<uint64_t*>(p) = v;
    return;
  }
  for (size_t i = 0; i < valid; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

// Line `line` (its address in q's region, remote) := 8 data bytes under `flag`.
__device__ __forceinline__ void coll_ll_put(uint64_t* line, uint64_t data, uint32_t flag) {
  const uint64_t f = uint64_t(flag) << 32;
  st_relaxed_sys_v2(line, (data & 0xffffffffu) | f, (data >> 32) | f);
}

// Polls a line of this PE's region until both words carry `flag` (true, *data the 8 data
// bytes) or the deadline passes (false, *seen the flag of the first word last read).
__device__ __forceinline__ bool coll_ll_poll(const uint64_t* line, uint32_t flag,
                                             uint64_t timeout_ns, uint64_t* data, uint32_t* seen) {
  Deadline deadline(timeout_ns);
  for (;;) {
    uint64_t w0, w1;
    ld_relaxed_sys_v2(line, w0, w1);
    if (static_cast<uint32_t>(w0 >> 32) == flag && static_cast<uint32_t>(w1 >> 32) == flag) {
      *data = (w0 & 0xffffffffu) | (w1 << 32);
      return true;
    }
    if (deadline.expired()) {
      *seen = static_cast<uint32_t>(w0 >> 32);
      return false;
    }
  }
}

__device__ __noinline__ inline void coll_ll_report(const Ctx& ctx, const char* what, int slot,
                                                   uint64_t epoch, int from, size_t line,
                                                   uint32_t seen, uint64_t timeout_ns) {
  printf(
      "[tmashmem PE %d] %s: timed out after %llu ns on low-latency slot %d waiting for PE %d's "
      "line %llu of epoch %llu (flag seen %u); is PE %d running the same collective with the "
      "same arguments and SM count?\n",
      ctx.my_pe, what, static_cast<unsigned long long>(timeout_ns), slot, from,
      static_cast<unsigned long long>(line), static_cast<unsigned long long>(epoch), seen, from);
}

// The one LL step. send(i, put) sends line i (i < send_lines) to every peer: put(q, data)
// writes the line into q's region. receive(i, poll) consumes line i (i < recv_lines):
// poll(q) returns q's line i once it has arrived. Each thread takes lines tid, tid +
// threads, ...; every PE must send at least line 0 to every peer and receive (poll) at
// least line 0 from every peer (see "Why no peer overwrites" above).
template <class Send, class Receive>
__device__ __forceinline__ Status coll_ll_exchange(const Ctx& ctx, const CollLl& ll, int slot,
                                                   size_t send_lines, Send&& send,
                                                   size_t recv_lines, Receive&& receive,
                                                   uint64_t timeout_ns, const char* what) {
  if (!all_reachable(ctx) || slot < 0 || slot >= ll.slots) return Status::Unreachable;
  const size_t most = send_lines > recv_lines ? send_lines : recv_lines;
  if (most * 16 > ll.region_bytes)
    coll_piece_trap(ctx.my_pe, what, most * 16, ll.region_bytes, "low-latency region");
  const int n = ctx.n_pes, me = ctx.my_pe;
  const uint64_t epoch = epoch_begin(ll.epochs, slot);
  const uint32_t flag = coll_ll_flag(epoch);
  const unsigned tid = block_thread_rank(), threads = block_thread_count();
  const bool cleans = coll_ll_cleans(epoch);
  if (cleans) {  // this PE's regions of the other parity, from every source, released
    uint4* zero = reinterpret_cast<uint4*>(coll_ll_region(ll, slot, epoch + 1, n, 0));
    const size_t words = static_cast<size_t>(n) * ll.region_bytes / 16;
    for (size_t i = tid; i < words; i += threads) zero[i] = make_uint4(0, 0, 0, 0);
    fence_acq_rel_sys();
    __syncthreads();
  }
  uint64_t* out = coll_ll_region(ll, slot, epoch, n, me);  // my region, in every PE
  for (size_t i = tid; i < send_lines; i += threads)
    send(i, [&](int q, uint64_t data) { coll_ll_put(ptr(ctx, out + 2 * i, q), data, flag); });
  bool failed = false;
  int bad_from = 0;
  size_t bad_line = 0;
  uint32_t bad_seen = 0;
  for (size_t i = tid; i < recv_lines; i += threads)
    receive(i, [&](int q) -> uint64_t {
      uint64_t data = 0;
      if (failed) return 0;
      uint32_t seen = 0;
      if (!coll_ll_poll(coll_ll_region(ll, slot, epoch, n, q) + 2 * i, flag, timeout_ns, &data,
                        &seen)) {
        failed = true;
        bad_from = q;
        bad_line = i;
        bad_seen = seen;
      }
      return data;
    });
  // Acquire: the peers zeroed their other parity before their line 0 of a cleaning step;
  // this PE's stores of the next step must follow the zeroing.
  if (cleans) fence_acq_rel_sys();
  // One message per warp: its first failing lane's.
  const unsigned failing = __ballot_sync(warp_member_mask(), failed);
  if (failed && (tid & 31u) == static_cast<unsigned>(__ffs(failing) - 1))
    coll_ll_report(ctx, what, slot, epoch, bad_from, bad_line, bad_seen, timeout_ns);
  const bool any = __syncthreads_or(failed);
  epoch_end(ll.epochs, slot, epoch);
  return any ? Status::Timeout : Status::Ok;
}

// The gathering kinds' LL step: my piece for q is src + q * src_stride (slice s of
// `bytes`), q's piece lands in dest at q * bytes. src_stride 0: all-gather; bytes:
// all-to-all.
__device__ __forceinline__ Status coll_ll_blocks(const Ctx& ctx, const CollLl& ll, int slot,
                                                 void* dest, const void* src, size_t bytes,
                                                 size_t src_stride, int part, int parts,
                                                 uint64_t timeout_ns, const char* what) {
  const CollSlice s = coll_slice(bytes, part, parts);
  const size_t lines = coll_ll_lines(s.len);
  char* d = static_cast<char*>(dest) + s.offset;
  const char* f = static_cast<const char*>(src) + s.offset;
  const int n = ctx.n_pes, me = ctx.my_pe;
  auto send = [&](size_t i, auto put) {
    const size_t at = 8 * i, valid = detail::coll_ll_valid(s.len, i);
    if (src_stride == 0) {
      const uint64_t v = coll_ll_load8(f + at, valid);
      for (int k = 1; k < n; ++k) put(coll_peer(ctx, k), v);
      char* own = d + size_t(me) * bytes + at;
      if (own != f + at) coll_ll_store8(own, v, valid);
    } else {
      for (int k = 1; k < n; ++k) {
        const int q = coll_peer(ctx, k);
        put(q, coll_ll_load8(f + size_t(q) * src_stride + at, valid));
      }
      coll_ll_store8(d + size_t(me) * bytes + at,
                     coll_ll_load8(f + size_t(me) * src_stride + at, valid), valid);
    }
  };
  auto receive = [&](size_t i, auto poll) {
    const size_t at = 8 * i, valid = detail::coll_ll_valid(s.len, i);
    for (int k = 1; k < n; ++k) {
      const int q = coll_peer(ctx, k);
      coll_ll_store8(d + size_t(q) * bytes + at, poll(q), valid);
    }
  };
  return coll_ll_exchange(ctx, ll, slot, lines, send, lines, receive, timeout_ns, what);
}

template <class Bits>
__device__ __forceinline__ Bits coll_ll_element(uint64_t word, int l) {
  using U = typename std::conditional<sizeof(Bits) == 2, uint16_t, uint32_t>::type;
  const U u = static_cast<U>(word >> (8 * sizeof(Bits) * l));
  Bits b;
  memcpy(&b, &u, sizeof b);
  return b;
}

template <class Bits>
__device__ __forceinline__ uint64_t coll_ll_word(Bits b, int l) {
  using U = typename std::conditional<sizeof(Bits) == 2, uint16_t, uint32_t>::type;
  U u;
  memcpy(&u, &b, sizeof u);
  return uint64_t(u) << (8 * sizeof(Bits) * l);
}

}  // namespace detail

/// allgather_block (allgather.cuh) in the LL form (dest may hold src in place).
__device__ __forceinline__ Status allgather_ll_block(const Ctx& ctx, const CollLl& ll, int slot,
                                                     void* dest, const void* src, size_t bytes,
                                                     int part, int parts, uint64_t timeout_ns,
                                                     const char* what = "allgather") {
  return detail::coll_ll_blocks(ctx, ll, slot, dest, src, bytes, 0, part, parts, timeout_ns, what);
}

/// alltoall_block (alltoall.cuh) in the LL form.
__device__ __forceinline__ Status alltoall_ll_block(const Ctx& ctx, const CollLl& ll, int slot,
                                                    void* dest, const void* src, size_t bytes,
                                                    int part, int parts, uint64_t timeout_ns,
                                                    const char* what = "alltoall") {
  return detail::coll_ll_blocks(ctx, ll, slot, dest, src, bytes, bytes, part, parts, timeout_ns,
                                what);
}

/// broadcast_block (broadcast.cuh) in the LL form (dest == src allowed). The non-roots
/// send line 0, without data, to every peer, so that the step is symmetric.
__device__ __forceinline__ Status broadcast_ll_block(const Ctx& ctx, const CollLl& ll, int slot,
                                                     void* dest, const void* src, size_t bytes,
                                                     int root, int part, int parts,
                                                     uint64_t timeout_ns,
                                                     const char* what = "broadcast") {
  const CollSlice s = coll_slice(bytes, part, parts);
  const size_t lines = coll_ll_lines(s.len);
  char* d = static_cast<char*>(dest) + s.offset;
  const char* f = static_cast<const char*>(src) + s.offset;
  const int n = ctx.n_pes;
  const bool is_root = ctx.my_pe == root;
  auto send = [&](size_t i, auto put) {
    const size_t valid = detail::coll_ll_valid(s.len, i);
    const uint64_t v = is_root ? detail::coll_ll_load8(f + 8 * i, valid) : 0;
    for (int k = 1; k < n; ++k) put(coll_peer(ctx, k), v);
    if (is_root && d != f) detail::coll_ll_store8(d + 8 * i, v, valid);
  };
  auto receive = [&](size_t i, auto poll) {
    if (!is_root) detail::coll_ll_store8(d + 8 * i, poll(root), detail::coll_ll_valid(s.len, i));
    if (i != 0) return;
    for (int k = 1; k < n; ++k)
      if (coll_peer(ctx, k) != root) poll(coll_peer(ctx, k));  // the others' line 0
  };
  return detail::coll_ll_exchange(ctx, ll, slot, is_root ? lines : 1, send, is_root ? 1 : lines,
                                  receive, timeout_ns, what);
}

/// reduce_scatter_block (chunk q of my src to PE q; chunk_stride = count) or one-shot
/// allreduce_block (my whole src to every PE; chunk_stride 0) in the LL form; reduces in
/// PE order in fp32 like the other forms (reduce_math.cuh: bit-identical results).
template <tmashmem_dtype_t D, RedOp Op>
__device__ __forceinline__ Status coll_reduce_ll_block(const Ctx& ctx, const CollLl& ll, int slot,
                                                       void* dest, const void* src, size_t count,
                                                       size_t chunk_stride, int part, int parts,
                                                       uint64_t timeout_ns, const char* what) {
  using E = CollElem<D>;
  using Bits = typename E::Bits;
  using Acc = typename E::Acc;
  constexpr int kLanes = 8 / sizeof(Bits);  // elements per line (slices start at 16 bytes)
  const CollSlice s = coll_slice(count * sizeof(Bits), part, parts);
  const size_t lines = coll_ll_lines(s.len), stride = chunk_stride * sizeof(Bits);
  const char* f = static_cast<const char*>(src) + s.offset;
  char* d = static_cast<char*>(dest) + s.offset;
  const int n = ctx.n_pes, me = ctx.my_pe;
  auto send = [&](size_t i, auto put) {
    const size_t at = 8 * i, valid = detail::coll_ll_valid(s.len, i);
    for (int k = 1; k < n; ++k) {
      const int q = coll_peer(ctx, k);
      put(q, detail::coll_ll_load8(f + size_t(q) * stride + at, valid));
    }
  };
  auto receive = [&](size_t i, auto poll) {
    const size_t at = 8 * i, valid = detail::coll_ll_valid(s.len, i);
    Acc acc[kLanes];
    for (int q = 0; q < n; ++q) {
      const uint64_t word =
          q == me ? detail::coll_ll_load8(f + size_t(me) * stride + at, valid) : poll(q);
#pragma unroll
      for (int l = 0; l < kLanes; ++l) {
        const Acc x = E::load(detail::coll_ll_element<Bits>(word, l));
        acc[l] = q == 0 ? x : detail::coll_combine<Op>(acc[l], x);
      }
    }
    uint64_t out = 0;
#pragma unroll
    for (int l = 0; l < kLanes; ++l) out |= detail::coll_ll_word<Bits>(E::store(acc[l]), l);
    detail::coll_ll_store8(d + at, out, valid);
  };
  return detail::coll_ll_exchange(ctx, ll, slot, lines, send, lines, receive, timeout_ns, what);
}

}  // namespace tmashmem
