// Remote memory access: scalar p/g, blocking put/get at thread, warp and block
// scope, and non-blocking bulk put_nbi/get_nbi through cp.async.bulk.
//
// Addresses: `dest` of a put and `src` of a get are symmetric addresses in THIS PE's
// heap (what tmashmem_malloc returned); the call reaches PE `pe`'s copy. The other
// side (`src` of a put, `dest` of a get) is device memory of this GPU: the heap or
// cudaMalloc memory (the blocking forms also accept mapped pinned host memory).
// `pe` must be reachable (is_reachable); debug builds (TMASHMEM_DEVICE_DEBUG) trap
// otherwise. Ranges may not overlap (memcpy semantics). Any alignment and any size
// are correct; 16-byte vector accesses are used wherever source and destination
// allow it.
//
// Memory-ordering contract (see order.cuh for fence/quiet):
//
// - p: one relaxed system-scope store of a naturally aligned 1/2/4/8-byte value.
// - g: one relaxed system-scope load; returns a value some store wrote.
// - put / put_warp / put_block: weak stores into the peer. On return the source may
//   be reused (by any thread of the group, for the warp and block forms). They are
//   not ordered with other puts or signals of this thread unless a fence(),
//   quiet(), or a signal with release semantics (signal_op, put_signal) follows.
// - get / get_warp / get_block: weak loads from the peer; on return the data is in
//   `dest` and visible to the group. A get observes the peer's writes that are
//   published to this PE (by a signal this PE acquired, or a barrier).
// - put_nbi / get_nbi: thread scope. The 16-byte aligned middle of the range goes
//   global -> shared (staging) -> global with cp.async.bulk; the unaligned head
//   and tail (and everything, when source and destination differ in address mod
//   16) are copied with ordinary loads and stores before the call returns. On
//   return the source has been read completely and the staging buffer is free;
//   the destination is final only after quiet() (or fence(), put_signal_nbi,
//   barrier_all) by this thread. The call issues the generic->async proxy fence
//   for the calling thread's own earlier accesses, so a source it wrote with
//   ordinary stores may be passed directly. A source written by OTHER threads of
//   the block needs fence_proxy_async_global() in each of those threads before the
//   barrier that orders them before the call (order.cuh); the same holds for a
//   get_nbi destination that other threads read or wrote before.
// - Warp and block forms are collective: every thread of the warp (resp. block)
//   calls with the same arguments, converged; they end with __syncwarp() (resp.
//   __syncthreads()). Partial last warps of a block are supported.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstring>
#include <type_traits>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/order.cuh"

namespace tmashmem {

/// Shared memory a thread lends to put_nbi / get_nbi for staging the bulk copy.
/// `smem` points into __shared__ memory (static or dynamic) that nobody else
/// touches during the call; `bytes` is its size. The first 16 bytes (after
/// rounding `smem` up to 16) hold two mbarriers, the rest two staging chunks.
/// At least kBulkStageMinBytes; a few KiB to a few tens of KiB per issuing thread
/// reach full speed. Each thread issuing bulk copies at the same time needs its own.
struct BulkStage {
  void* smem;
  uint32_t bytes;
};

/// Smallest usable BulkStage: alignment slack, two mbarriers, two 16-byte chunks.
constexpr uint32_t kBulkStageMinBytes = 15 + 16 + 2 * 16;

namespace detail {

// ---- thread groups -----------------------------------------------------------

__device__ __forceinline__ unsigned block_thread_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ __forceinline__ unsigned block_thread_count() {
  return blockDim.x * blockDim.y * blockDim.z;
}

// Lanes of the calling thread's warp that exist in the block (the last warp of a
// block whose size is not a multiple of 32 is partial).
__device__ __forceinline__ unsigned warp_member_mask() {
  const unsigned warp_start = block_thread_rank() & ~31u;
  const unsigned lanes = min(32u, block_thread_count() - warp_start);
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

// ---- relaxed system-scope scalar accesses (p / g) -----------------------------

template <class T>
struct ScalarBits {
  static_assert(std::is_trivially_copyable<T>::value, "p/g need a trivially copyable type");
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "p/g move 1, 2, 4 or 8 bytes; use put/get for larger objects");
  using type = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t,
                         std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
};

template <class T>
__device__ __forceinline__ void store_relaxed_sys(T* p, T value) {
  typename ScalarBits<T>::type bits;
  memcpy(&bits, &value, sizeof(T));
  if constexpr (sizeof(T) == 1) {
    asm volatile("st.relaxed.sys.u8 [%0], %1;" ::"l"(p), "h"(static_cast<uint16_t>(bits))
                 : "memory");
  } else if constexpr (sizeof(T) == 2) {
    asm volatile("st.relaxed.sys.u16 [%0], %1;" ::"l"(p), "h"(bits) : "memory");
  } else if constexpr (sizeof(T) == 4) {
    asm volatile("st.relaxed.sys.u32 [%0], %1;" ::"l"(p), "r"(bits) : "memory");
  } else {
    asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(bits) : "memory");
  }
}

template <class T>
__device__ __forceinline__ T load_relaxed_sys(const T* p) {
  typename ScalarBits<T>::type bits;
  if constexpr (sizeof(T) == 1) {
    uint16_t wide;
    asm volatile("ld.relaxed.sys.u8 %0, [%1];" : "=h"(wide) : "l"(p) : "memory");
    bits = static_cast<uint8_t>(wide);
  } else if constexpr (sizeof(T) == 2) {
    asm volatile("ld.relaxed.sys.u16 %0, [%1];" : "=h"(bits) : "l"(p) : "memory");
  } else if constexpr (sizeof(T) == 4) {
    asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(bits) : "l"(p) : "memory");
  } else {
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(bits) : "l"(p) : "memory");
  }
  T value;
  memcpy(&value, &bits, sizeof(T));
  return value;
}

// ---- cooperative copy at any alignment --------------------------------------

// Copies a few bytes with 8-, 4-, 2- or 1-byte accesses, the widest that both
// addresses' alignment and the remaining length allow (a lone 8-byte message is
// one store, not eight).
__device__ __forceinline__ void copy_small(char* dst, const char* src, size_t n) {
  while (n != 0) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
    if (n >= 8 && (a & 7u) == 0) {
      *reinterpret_cast<uint64_t*>(dst) = *reinterpret_cast<const uint64_t*>(src);
      dst += 8, src += 8, n -= 8;
    } else if (n >= 4 && (a & 3u) == 0) {
      *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src);
      dst += 4, src += 4, n -= 4;
    } else if (n >= 2 && (a & 1u) == 0) {
      *reinterpret_cast<uint16_t*>(dst) = *reinterpret_cast<const uint16_t*>(src);
      dst += 2, src += 2, n -= 2;
    } else {
      *dst++ = *src++;
      --n;
    }
  }
}

// Copies n bytes from src to dst, shared by `count` threads of which the caller is
// `rank`. The destination is written in aligned 16-byte stores except for at most
// 15 head bytes and a short tail. When src and dst agree mod 16, loads are 16-byte
// too; when they agree mod 4, four aligned 4-byte loads feed each store; otherwise
// five aligned 4-byte loads are funnel-shifted into each store. The aligned word
// loads never touch memory outside the 4-byte words that hold source bytes (the
// last 16-byte unit moves to the byte tail when it would), so they stay inside
// the source allocation.
__device__ __forceinline__ void copy_bytes(char* dst, const char* src, size_t n, unsigned rank,
                                           unsigned count) {
  if (n == 0) return;
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  size_t head = (16u - (d & 15u)) & 15u;
  if (head > n) head = n;
  size_t units = (n - head) >> 4;
  const uintptr_t s_body = reinterpret_cast<uintptr_t>(src) + head;
  const unsigned shift = static_cast<unsigned>(s_body & 3u);
  // With a shifted source the fifth word of the last unit may reach past src + n.
  if (shift != 0 && units != 0 && n - (head + units * 16) < 4u - shift) --units;
  const size_t tail = head + units * 16;

  // Head and tail are short (< 16 and < 20 bytes): one thread moves them with the
  // widest accesses their alignment allows.
  if (rank == 0) {
    copy_small(dst, src, head);
    copy_small(dst + tail, src + tail, n - tail);
  }
  if (units == 0) return;

  uint4* d4 = reinterpret_cast<uint4*>(dst + head);
  if ((s_body & 15u) == 0) {
    const uint4* s4 = reinterpret_cast<const uint4*>(s_body);
    size_t i = rank;
    // Four independent 16-byte loads in flight per thread before their stores.
    for (; i + 3 * size_t(count) < units; i += 4 * size_t(count)) {
      const uint4 a = s4[i];
      const uint4 b = s4[i + count];
      const uint4 c = s4[i + 2 * size_t(count)];
      const uint4 e = s4[i + 3 * size_t(count)];
      d4[i] = a;
      d4[i + count] = b;
      d4[i + 2 * size_t(count)] = c;
      d4[i + 3 * size_t(count)] = e;
    }
    for (; i < units; i += count) d4[i] = s4[i];
  } else if (shift == 0) {
    const uint32_t* sw = reinterpret_cast<const uint32_t*>(s_body);
    for (size_t i = rank; i < units; i += count) {
      const uint32_t* w = sw + 4 * i;
      d4[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  } else {
    const uint32_t* sw = reinterpret_cast<const uint32_t*>(s_body - shift);
    const unsigned bits = 8u * shift;
    for (size_t i = rank; i < units; i += count) {
      const uint32_t* w = sw + 4 * i;
      const uint32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
      d4[i] = make_uint4(__funnelshift_r(w0, w1, bits), __funnelshift_r(w1, w2, bits),
                         __funnelshift_r(w2, w3, bits), __funnelshift_r(w3, w4, bits));
    }
  }
}

// ---- cp.async.bulk primitives -----------------------------------------------

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint64_t gmem_address(const void* p) {
  return static_cast<uint64_t>(__cvta_generic_to_global(p));
}

__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbarrier_inval(uint32_t bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// global -> shared, completing `bytes` transactions on `bar`.
__device__ __forceinline__ void bulk_load(uint32_t smem_dst, const void* gmem_src, uint32_t bytes,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_dst),
      "l"(gmem_address(gmem_src)), "r"(bytes), "r"(bar)
      : "memory");
}

// shared -> global, in the current bulk async-group.
__device__ __forceinline__ void bulk_store(void* gmem_dst, uint32_t smem_src, uint32_t bytes) {
  asm volatile(
      "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem_address(gmem_dst)),
      "r"(smem_src), "r"(bytes)
      : "memory");
}

__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most N of this thread's bulk groups still read their source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Largest chunk per stage: mbarrier transaction counts stay far below their limit.
constexpr uint32_t kBulkMaxChunk = 128u * 1024u;

// Copies `bytes` (a multiple of 16; dst, src 16-byte aligned) global -> shared ->
// global, double-buffered in `stage`. Returns when every bulk store has read its
// staging chunk; the stores themselves are pending in this thread's bulk groups.
// Returns false (and copies nothing) when the stage is too small.
__device__ __forceinline__ bool bulk_copy_aligned(char* dst, const char* src, size_t bytes,
                                                  BulkStage stage) {
  const uintptr_t raw = reinterpret_cast<uintptr_t>(stage.smem);
  const uintptr_t start = (raw + 15u) & ~uintptr_t(15);
  const size_t slack = start - raw;
  if (stage.smem == nullptr || stage.bytes < slack + 16 + 32) return false;
  uint32_t chunk = static_cast<uint32_t>(((stage.bytes - slack - 16) / 2) & ~size_t(15));
  if (chunk > kBulkMaxChunk) chunk = kBulkMaxChunk;

  // Stage s (0 or 1) has its mbarrier at base + 8 s and its chunk at base + 16 + s chunk.
  const uint32_t base = smem_address(reinterpret_cast<void*>(start));
  auto bar = [&](unsigned s) -> uint32_t { return base + 8u * s; };
  auto buf = [&](unsigned s) -> uint32_t { return base + 16u + s * chunk; };
  mbarrier_init(bar(0), 1);
  mbarrier_init(bar(1), 1);
  // Makes the mbarrier initialisation, this thread's earlier generic writes of the
  // source, and earlier generic use of the staging memory visible to the bulk copies.
  fence_proxy_async();

  const size_t n_chunks = (bytes + chunk - 1) / chunk;
  auto length = [&](size_t i) -> uint32_t {
    const size_t left = bytes - i * chunk;
    return static_cast<uint32_t>(left < chunk ? left : chunk);
  };
  auto load = [&](size_t i) {
    const unsigned s = static_cast<unsigned>(i & 1);
    mbarrier_arrive_expect_tx(bar(s), length(i));
    bulk_load(buf(s), src + i * chunk, length(i), bar(s));
  };

  load(0);
  if (n_chunks > 1) load(1);
  for (size_t i = 0; i < n_chunks; ++i) {
    const unsigned s = static_cast<unsigned>(i & 1);
    mbarrier_wait_parity(bar(s), static_cast<uint32_t>((i >> 1) & 1));
    bulk_store(dst + i * chunk, buf(s), length(i));
    bulk_commit();
    // Refill the stage chunk i-1 used with chunk i+1, once its store has read it.
    if (i >= 1 && i + 1 < n_chunks) {
      bulk_wait_read<1>();
      load(i + 1);
    }
  }
  bulk_wait_read<0>();
  mbarrier_inval(bar(0));
  mbarrier_inval(bar(1));
  return true;
}

// put_nbi / get_nbi body: bulk middle when dst and src agree mod 16, plain copy
// of the head and tail (and of everything otherwise).
__device__ __forceinline__ void bulk_copy(char* dst, const char* src, size_t n, BulkStage stage) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  const uintptr_t s = reinterpret_cast<uintptr_t>(src);
  if (((d ^ s) & 15u) != 0) {
    copy_bytes(dst, src, n, 0, 1);
    return;
  }
  size_t head = (16u - (d & 15u)) & 15u;
  if (head > n) head = n;
  const size_t body = (n - head) & ~size_t(15);
  copy_bytes(dst, src, head, 0, 1);
  copy_bytes(dst + head + body, src + head + body, n - head - body, 0, 1);
  if (body != 0 && !bulk_copy_aligned(dst + head, src + head, body, stage))
    copy_bytes(dst + head, src + head, body, 0, 1);
}

}  // namespace detail

// ---- scalars ------------------------------------------------------------------

/// Stores `value` into PE `pe`'s copy of `*dest`: one relaxed system-scope store.
/// T is trivially copyable of 1, 2, 4 or 8 bytes; `dest` naturally aligned.
/// Unordered with other puts until fence()/quiet() or a releasing signal.
template <class T>
__device__ __forceinline__ void p(const Ctx& ctx, T* dest, T value, int pe) {
  detail::store_relaxed_sys(detail::peer_address(ctx, dest, pe, sizeof(T), "p"), value);
}

/// Loads PE `pe`'s copy of `*src`: one relaxed system-scope load (never cached
/// across calls, so it may be polled). T and alignment as for p().
template <class T>
__device__ __forceinline__ T g(const Ctx& ctx, const T* src, int pe) {
  return detail::load_relaxed_sys(detail::peer_address(ctx, src, pe, sizeof(T), "g"));
}

// ---- blocking bulk, byte counts ---------------------------------------------------

/// Copies `bytes` from local `src` to PE `pe`'s copy of symmetric `dest`. Thread
/// scope. On return `src` may be reused; delivery is ordered by fence()/quiet() or
/// a releasing signal.
__device__ __forceinline__ void putmem(const Ctx& ctx, void* dest, const void* src, size_t bytes,
                                       int pe) {
  char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put");
  detail::copy_bytes(remote, static_cast<const char*>(src), bytes, 0, 1);
}

/// putmem for a whole warp (collective, converged, same arguments); ends with
/// __syncwarp(), after which any lane may reuse `src`.
__device__ __forceinline__ void putmem_warp(const Ctx& ctx, void* dest, const void* src,
                                            size_t bytes, int pe) {
  char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put_warp");
  const unsigned mask = detail::warp_member_mask();
  detail::copy_bytes(remote, static_cast<const char*>(src), bytes,
                     detail::block_thread_rank() & 31u, __popc(mask));
  __syncwarp(mask);
}

/// putmem for a whole block (collective, same arguments); ends with
/// __syncthreads(), after which any thread may reuse `src`.
__device__ __forceinline__ void putmem_block(const Ctx& ctx, void* dest, const void* src,
                                             size_t bytes, int pe) {
  char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put_block");
  detail::copy_bytes(remote, static_cast<const char*>(src), bytes, detail::block_thread_rank(),
                     detail::block_thread_count());
  __syncthreads();
}

/// Copies `bytes` from PE `pe`'s copy of symmetric `src` to local `dest`. Thread
/// scope; on return `dest` holds the data.
__device__ __forceinline__ void getmem(const Ctx& ctx, void* dest, const void* src, size_t bytes,
                                       int pe) {
  const char* remote = detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get");
  detail::copy_bytes(static_cast<char*>(dest), remote, bytes, 0, 1);
}

/// getmem for a whole warp; ends with __syncwarp(), after which every lane sees
/// all of `dest`.
__device__ __forceinline__ void getmem_warp(const Ctx& ctx, void* dest, const void* src,
                                            size_t bytes, int pe) {
  const char* remote =
      detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get_warp");
  const unsigned mask = detail::warp_member_mask();
  detail::copy_bytes(static_cast<char*>(dest), remote, bytes, detail::block_thread_rank() & 31u,
                     __popc(mask));
  __syncwarp(mask);
}

/// getmem for a whole block; ends with __syncthreads(), after which every thread
/// sees all of `dest`.
__device__ __forceinline__ void getmem_block(const Ctx& ctx, void* dest, const void* src,
                                             size_t bytes, int pe) {
  const char* remote =
      detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get_block");
  detail::copy_bytes(static_cast<char*>(dest), remote, bytes, detail::block_thread_rank(),
                     detail::block_thread_count());
  __syncthreads();
}

// ---- non-blocking bulk, byte counts -------------------------------------------

/// Starts copying `bytes` from local `src` to PE `pe`'s copy of `dest` with
/// cp.async.bulk, staged through `stage`. Thread scope. On return `src` and
/// `stage` may be reused; the data is delivered after this thread's quiet().
/// Fastest when dest and src are equal mod 16 (otherwise this is a blocking put).
__device__ __forceinline__ void putmem_nbi(const Ctx& ctx, void* dest, const void* src,
                                           size_t bytes, int pe, BulkStage stage) {
  char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put_nbi");
  detail::bulk_copy(remote, static_cast<const char*>(src), bytes, stage);
}

/// Starts copying `bytes` from PE `pe`'s copy of `src` to local `dest` with
/// cp.async.bulk, staged through `stage`. Thread scope. On return `stage` may be
/// reused; `dest` holds the data after this thread's quiet().
__device__ __forceinline__ void getmem_nbi(const Ctx& ctx, void* dest, const void* src,
                                           size_t bytes, int pe, BulkStage stage) {
  const char* remote =
      detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get_nbi");
  detail::bulk_copy(static_cast<char*>(dest), remote, bytes, stage);
}

// ---- typed forms (count in elements of T) ----------------------------------------

/// putmem of `count` elements of T.
template <class T>
__device__ __forceinline__ void put(const Ctx& ctx, T* dest, const T* src, size_t count, int pe) {
  putmem(ctx, dest, src, count * sizeof(T), pe);
}
/// putmem_warp of `count` elements of T.
template <class T>
__device__ __forceinline__ void put_warp(const Ctx& ctx, T* dest, const T* src, size_t count,
                                         int pe) {
  putmem_warp(ctx, dest, src, count * sizeof(T), pe);
}
/// putmem_block of `count` elements of T.
template <class T>
__device__ __forceinline__ void put_block(const Ctx& ctx, T* dest, const T* src, size_t count,
                                          int pe) {
  putmem_block(ctx, dest, src, count * sizeof(T), pe);
}
/// getmem of `count` elements of T.
template <class T>
__device__ __forceinline__ void get(const Ctx& ctx, T* dest, const T* src, size_t count, int pe) {
  getmem(ctx, dest, src, count * sizeof(T), pe);
}
/// getmem_warp of `count` elements of T.
template <class T>
__device__ __forceinline__ void get_warp(const Ctx& ctx, T* dest, const T* src, size_t count,
                                         int pe) {
  getmem_warp(ctx, dest, src, count * sizeof(T), pe);
}
/// getmem_block of `count` elements of T.
template <class T>
__device__ __forceinline__ void get_block(const Ctx& ctx, T* dest, const T* src, size_t count,
                                          int pe) {
  getmem_block(ctx, dest, src, count * sizeof(T), pe);
}
/// putmem_nbi of `count` elements of T.
template <class T>
__device__ __forceinline__ void put_nbi(const Ctx& ctx, T* dest, const T* src, size_t count, int pe,
                                        BulkStage stage) {
  putmem_nbi(ctx, dest, src, count * sizeof(T), pe, stage);
}
/// getmem_nbi of `count` elements of T.
template <class T>
__device__ __forceinline__ void get_nbi(const Ctx& ctx, T* dest, const T* src, size_t count, int pe,
                                        BulkStage stage) {
  getmem_nbi(ctx, dest, src, count * sizeof(T), pe, stage);
}

}  // namespace tmashmem
