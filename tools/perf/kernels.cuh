// The benchmark kernels, one template per operation, shared by tmashmem-perf and
// perf_nvshmem: `Rt` is the runtime's device face (backend.cuh), passed by value, so both
// programs run the same loops, partitions, destinations and stamps and differ only in the
// calls inside them. At the end, tmashmem's tile (TMA) views and kernels.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <vector>

#include "tools/perf/backend.cuh"
#include "tools/perf/harness.cuh"
#if PERF_TMASHMEM
#include "tmashmem/tensor.h"
#endif

namespace perf {

// put: local src -> PE pe's dst; get: PE pe's src -> local dst. Each CTA moves its share
// `iters` times over with the block-scope call.
template <class Rt, bool kPut>
__global__ void block_kernel(const __grid_constant__ Rt rt, char* dst, const char* src,
                             size_t bytes, int pe, long iters) {
  const Range r = share(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;  // the whole CTA leaves together
  for (long it = 0; it < iters; ++it)
    rt.template block<kPut>(dst + r.begin, src + r.begin, r.end - r.begin, pe);
}

// The non-blocking form: each thread moves rt.nbi_share of its CTA's share (tmashmem: its
// part, blockDim.x issuers with `stage_bytes` of dynamic shared memory each; NVSHMEM: the
// whole share with the block-scope call), then rt.quiet_cta completes everything.
template <class Rt, bool kPut>
__global__ void nbi_kernel(const __grid_constant__ Rt rt, char* dst, const char* src, size_t bytes,
                           int pe, long iters, uint32_t stage_bytes) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Range r = rt.nbi_share(share(bytes, blockIdx.x, gridDim.x));
  if (r.end > r.begin)
    for (long it = 0; it < iters; ++it)
      rt.template nbi<kPut>(dst + r.begin, src + r.begin, r.end - r.begin, pe, smem, stage_bytes);
  rt.quiet_cta();
}

enum class MsgOp { RawStore, P, Put, PutSignal };

// Message m of thread g (of T) lands in slot g + (m mod laps) * T, so consecutive messages
// of a warp go to consecutive slots and the destination holds `laps * T` slots of `size`
// bytes. The source holds the pattern at the same offsets, so the destination must equal it
// wherever a message landed. kQuietEach: quiet after every message (the latency form, one
// thread); otherwise one quiet at the end (the rate form). RawStore is the reference for p:
// one plain 8-byte store through the peer mapping `raw_dst`.
template <class Rt, MsgOp kOp, bool kQuietEach>
__global__ void msg_kernel(const __grid_constant__ Rt rt, char* dst, char* raw_dst, const char* src,
                           size_t size, uint64_t* sig, long laps, int pe, long iters) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  const size_t g = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  long lap = 0;
  for (long m = 0; m < iters; ++m) {
    const size_t off = (g + size_t(lap) * threads) * size;
    if constexpr (kOp == MsgOp::RawStore)
      *reinterpret_cast<volatile uint64_t*>(raw_dst + off) =
          *reinterpret_cast<const uint64_t*>(src + off);
    else if constexpr (kOp == MsgOp::P)
      rt.p(reinterpret_cast<uint64_t*>(dst + off), *reinterpret_cast<const uint64_t*>(src + off),
           pe);
    else if constexpr (kOp == MsgOp::Put)
      rt.put(dst + off, src + off, size, pe);
    else
      rt.template put_signal<true>(dst + off, src + off, size, sig + g, 1, pe);
    if constexpr (kQuietEach) rt.quiet();
    if (++lap == laps) lap = 0;
  }
  if constexpr (!kQuietEach) rt.quiet();
}

// What one ping-pong round sends: a signal (tmashmem: signal_op, a release; NVSHMEM:
// nvshmemx_signal_op, relaxed), a relaxed signal (tmashmem only), or a put + signal from one
// thread or from the whole block.
enum class PingOp { Signal, SignalRelaxed, PutSignalThread, PutSignalBlock };

// Ping-pong between PE 0 (initiator) and PE 1, one CTA each. Round i sends base + i + 1
// (PingOp): a signal, a relaxed signal, or a put_signal of `bytes` from one thread or from
// the whole block whose first and last words carry the value (the receiver checks both after
// its wait). kBounded: waits are bounded by timeout_ns where the runtime has a bound
// (*error = 1 on a timeout); otherwise they wait forever (the host watchdog ends a hung
// run). *error = 2 on wrong data. The initiator stamps every timed round trip.
//
// Thread-scope rounds run in a one-thread CTA and keep their status in a register; only the
// block-scope round shares it through shared memory and __syncthreads (a shared-memory round
// trip on the critical path costs about 0.04 us per wait).
template <class Rt, PingOp kOp, bool kBounded = true>
__global__ void pingpong_kernel(const __grid_constant__ Rt rt, char* buf, char* src, size_t bytes,
                                uint64_t* flag, uint64_t base, long warmup, long iters, int peer,
                                int initiator, uint64_t timeout_ns, uint64_t* stamps, int* error) {
  constexpr bool kBlock = kOp == PingOp::PutSignalBlock;
  constexpr bool kData = kBlock || kOp == PingOp::PutSignalThread;
  __shared__ int block_failed;
  if (kBlock && threadIdx.x == 0) block_failed = 0;
  if (kBlock) __syncthreads();
  const size_t last = bytes / 8 - 1;
  uint64_t* out = reinterpret_cast<uint64_t*>(src);
  const volatile uint64_t* in = reinterpret_cast<const volatile uint64_t*>(buf);
  int failed = 0;  // thread 0's status (every thread's, for kBlock)
  auto receive = [&](uint64_t v) {
    if (threadIdx.x == 0) {
      // A literal 0 lets the compiler drop the deadline from the poll loop.
      if (!rt.wait_ge(flag, v, kBounded ? timeout_ns : 0, peer)) {
        failed = 1;
      } else if (kData) {
        const uint64_t first = in[0], final_word = in[last];  // both loads in flight at once
        if (first != v || final_word != v) failed = 2;
      }
    }
    if constexpr (kBlock) {
      if (threadIdx.x == 0 && failed) block_failed = failed;
      __syncthreads();
      failed = block_failed;
    }
  };
  auto send = [&](uint64_t v) {
    if constexpr (kBlock) {
      if (threadIdx.x == 0) {
        out[0] = v;
        out[last] = v;
      }
      __syncthreads();
      rt.put_signal_block(buf, src, bytes, flag, v, peer);
    } else if constexpr (kOp == PingOp::PutSignalThread) {
      out[0] = v;
      out[last] = v;
      rt.template put_signal<false>(buf, src, bytes, flag, v, peer);
    } else if constexpr (kOp == PingOp::SignalRelaxed) {
      rt.signal_relaxed(flag, v, peer);
    } else {
      rt.signal(flag, v, peer);
    }
  };
  for (long i = 0; i < warmup + iters; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (initiator && threadIdx.x == 0 && i == warmup) stamp_start(stamps, iters);
    if (!initiator) receive(v);
    if (failed) break;
    send(v);
    if (initiator) receive(v);
    if (failed) break;
    if (initiator && threadIdx.x == 0 && i >= warmup) stamp_iteration(stamps, i - warmup);
  }
  if (threadIdx.x == 0) {
    if (initiator && !failed) stamp_end(stamps, iters);
    stamp_sm(stamps, iters);
    if (failed) *error = failed;
  }
}

// Back-to-back device barriers over every PE, gridDim.x CTAs per PE. With kCheck, before
// barrier i thread 0 of CTA 0 stores base + i + 1 into marks[my_pe] on every PE, and after
// it checks that every PE's mark reached that value (a PE may already have stored the next
// one). *error = 1 on a timeout, 3 on a stale mark. CTA 0's thread 0 stamps every barrier.
template <class Rt, bool kCheck, bool kSyncOnly>
__global__ void barrier_kernel(const __grid_constant__ Rt rt, uint64_t* marks, uint64_t base,
                               long warmup, long iters, uint64_t timeout_ns, uint64_t* stamps,
                               int* error) {
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  const int me = rt.my_pe(), n = rt.n_pes();
  for (long i = 0; i < warmup + iters; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (leader && i == warmup) stamp_start(stamps, iters);
    if (kCheck && leader) {
      for (int q = 0; q < n; ++q) rt.p(&marks[me], v, q);
      if (kSyncOnly && !Rt::kSyncAllCompletesStores) rt.quiet();
    }
    if (!(kSyncOnly ? rt.sync_all(timeout_ns) : rt.barrier_all(timeout_ns))) {
      if (threadIdx.x == 0) *error = 1;
      return;
    }
    if (kCheck && leader) {
      for (int q = 0; q < n; ++q) {
        const uint64_t seen = rt.read_local(&marks[q]);
        if (seen < v || seen > v + 1) *error = 3;
      }
    }
    if (leader && i >= warmup) stamp_iteration(stamps, i - warmup);
  }
  if (leader) stamp_end(stamps, iters);
}

#if PERF_TMASHMEM
// tmashmem's tile (TMA) views and kernels: one thread per CTA issues everything.
// tile_copy_kernel is the bandwidth form of tile put and tile get: a pipelined copy through
// shared memory of the CTA's share of the tiles of a 2-D tensor (rows of 256 u32 = 1 KiB,
// boxes of box[1] rows). Tile put reads this PE's tensor with tma_get_tile and writes PE
// `pe`'s with tma_put_tile; tile get the other way round. tile_msg_kernel is the
// small-message form: back-to-back tma_put_tile of one tile from shared memory.
constexpr uint32_t kTileRowBytes = 1024;  // tile tensors: rows of 256 u32
constexpr uint32_t kTileMaxRows = 32;     // the largest tile the bandwidth rows use: 32 KiB
constexpr uint32_t kTileGroups = 6;       // tile_copy_kernel's groups of shared-memory tiles
constexpr size_t kTileSmemBudget = 200 * 1024;

// A 2-D u32 view of `bytes` at `p` (symmetric), rows of `inner` bytes, tiles of `box_rows`
// rows. COLLECTIVE. Destroyed with destroy().
struct TileView {
  tmashmem_tensor_t tensor = nullptr;
  tmashmem_tensor_handle_t handle{};
  TileView() = default;
  TileView(void* p, size_t bytes, uint32_t inner, uint32_t box_rows) {
    tmashmem_tensor_desc_t d;
    const uint64_t dims[2] = {inner / 4, bytes / inner};
    const uint32_t box[2] = {inner / 4, box_rows};
    tm_check(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U32, 2, dims, box),
             "tmashmem_tensor_desc_init");
    d.l2_promotion = TMASHMEM_L2_PROMOTION_256B;
    tm_check(tmashmem_tensor_view(p, &d, &tensor), "tmashmem_tensor_view");
    tm_check(tmashmem_tensor_handle(tensor, &handle), "tmashmem_tensor_handle");
  }
  void destroy() {
    if (tensor) tm_check(tmashmem_tensor_destroy(tensor), "tmashmem_tensor_destroy");
    tensor = nullptr;
  }
};

// The tile views a test made (source and destination per tile size), destroyed together.
using TileViews = std::vector<TileView>;
inline void destroy(TileViews& views) {
  for (TileView& v : views) v.destroy();
}

// Shared memory the kernels below need: `slots` tiles (128-byte aligned inside a buffer
// that may start anywhere 16-byte aligned) and one mbarrier per slot (at most).
inline size_t tile_smem_bytes(uint32_t box_bytes, uint32_t slots) {
  return 128 + size_t(box_bytes) * slots + 8 * size_t(slots);
}

// The tile of the bandwidth rows for `bytes` over `ctas` CTAs, in rows of 1 KiB: about one
// tile per CTA per lap. One issuing thread spends about 0.1 us per tile whatever its size
// (the get and the put are ~95 cycles each to issue: docs/runs.md, "Eighth session"), so a
// small copy must give every CTA its own tile rather than a few CTAs several. A power of
// two from 1 to 32 rows that divides `bytes`; `fixed` (--tile-rows) overrides it.
inline uint32_t tile_rows_for(size_t bytes, int ctas, uint32_t fixed) {
  if (fixed) return fixed;
  const size_t per_cta = (bytes + size_t(ctas) - 1) / size_t(ctas);
  uint32_t rows = 1;
  while (rows < kTileMaxRows && size_t(rows) * kTileRowBytes < per_cta) rows *= 2;
  while (rows > 1 && bytes % (size_t(rows) * kTileRowBytes)) rows /= 2;
  return rows;
}

// tile_copy_kernel's group width for tiles of `box_bytes`: the most of 8, 4, 2 or 1 tiles
// per group whose kTileGroups groups fit kTileSmemBudget (0: not even one tile per group):
// 192 KiB of tiles in flight per CTA wherever the tile allows, what a 32-SM copy of 64 MiB
// and more needed in the A/B of docs/runs.md ("Eighth session").
inline uint32_t tile_group_width(uint32_t box_bytes) {
  for (uint32_t w = 8; w >= 1; w /= 2)
    if (tile_smem_bytes(box_bytes, kTileGroups * w) <= kTileSmemBudget) return w;
  return 0;
}

__device__ __forceinline__ unsigned char* align128(unsigned char* p) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(p) + 127) & ~uintptr_t(127));
}

// Copies the `rows / box[1]` tiles that start at row `row0` of `src` on `src_pe` into the
// same rows of `dst` on `dst_pe`, `iters` laps over. The CTA's tiles, lap after lap, pass
// through kTileGroups groups of W shared-memory tiles with one mbarrier each: a group's gets
// announce their bytes together and its puts follow one wait, so the issuing thread waits
// once per W tiles (a wait costs about 70 cycles even when the tile has landed). Group g's
// slot takes the gets of group g + kTileGroups - 1 once group g - 1's puts have read it, so
// that kTileGroups - 1 groups of gets are in flight behind the puts. Launch with one
// thread per CTA and tile_smem_bytes(box_bytes, kTileGroups * W) of dynamic shared memory.
// *error = 1 if a get did not complete within timeout_ns.
template <uint32_t W>
__global__ void tile_copy_kernel(const __grid_constant__ tmashmem_tensor_handle_t src, int src_pe,
                                 const __grid_constant__ tmashmem_tensor_handle_t dst, int dst_pe,
                                 uint32_t row0, uint32_t rows, long iters, uint64_t timeout_ns,
                                 int* error) {
  static_assert(W >= 1 && kTileGroups >= 2 && kTileGroups <= 32,
                "tile groups: 2..32 (parity bits)");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* tiles = align128(smem_raw);
  const uint32_t box_bytes = src.box_bytes, box_rows = src.box[1];
  tmashmem::Mbarrier* bars =
      reinterpret_cast<tmashmem::Mbarrier*>(tiles + size_t(box_bytes) * kTileGroups * W);
  const Range mine = share(rows / box_rows, blockIdx.x, gridDim.x, 1);
  const uint32_t n = static_cast<uint32_t>(mine.end - mine.begin);
  if (threadIdx.x != 0 || n == 0) return;
  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  for (uint32_t g = 0; g < kTileGroups; ++g) bars[g].init(1);

  const long total = long(n) * iters, groups = (total + W - 1) / W;
  auto count = [&](long g) { return static_cast<uint32_t>(min(long(W), total - g * long(W))); };
  auto at = [&](uint32_t t) {
    return tmashmem::TileCoord(0,
                               static_cast<int32_t>(row0 + (uint32_t(mine.begin) + t) * box_rows));
  };
  auto tile = [&](uint32_t slot, uint32_t j) { return tiles + size_t(slot * W + j) * box_bytes; };
  uint32_t get_t = 0, put_t = 0;        // the next tile (of n) to get and to put
  uint32_t get_slot = 0, put_slot = 0;  // the group slots they use (g mod kTileGroups)
  auto get_group = [&](long g) {
    const uint32_t slot = get_slot, m = count(g);
    if (++get_slot == kTileGroups) get_slot = 0;
    bars[slot].arrive_expect_tx(m * box_bytes);
    for (uint32_t j = 0; j < m; ++j) {
      tmashmem::tma_get_tile(tile(slot, j), src, src_pe, at(get_t), bars[slot]);
      if (++get_t == n) get_t = 0;
    }
  };
  for (long g = 0; g < groups && g < long(kTileGroups); ++g) get_group(g);
  uint32_t parity = 0;  // bit s: the phase slot s completes next
  for (long g = 0; g < groups; ++g) {
    const uint32_t slot = put_slot, m = count(g);
    if (++put_slot == kTileGroups) put_slot = 0;
    if (bars[slot].wait((parity >> slot) & 1u, timeout_ns) != tmashmem::Status::Ok) {
      *error = 1;  // copies may still be in flight: leave the barriers alone
      tmashmem::quiet();
      return;
    }
    parity ^= 1u << slot;
    for (uint32_t j = 0; j < m; ++j) {
      tmashmem::tma_put_tile(dst, dst_pe, at(put_t), tile(slot, j));
      if (++put_t == n) put_t = 0;
    }
    if (g >= 1 && g + kTileGroups - 1 < groups) {
      tmashmem::bulk_wait_group_read<W>();  // all but this group's puts have read their tiles
      get_group(g + kTileGroups - 1);       // into the slot of group g - 1
    }
  }
  tmashmem::quiet();  // every put has written its tile
  for (uint32_t g = 0; g < kTileGroups; ++g) bars[g].inval();
}

// Tile put from shared memory, the op alone: the CTA's `rows / box[1]` tiles (from row
// `row0`) are got from this PE's `src` once, then put into the same rows of `dst` on `pe`
// `iters` laps over, at most kResidentInFlight puts still reading shared memory. What an
// epilogue does with tiles it made in shared memory; tile_copy_kernel's rows add a get per
// put, and the two share the SM's TMA unit. One thread per CTA, tile_smem_bytes(box_bytes, n)
// of shared memory for the CTA's n tiles (the bw test's `resident_smem`). *error = 1 if the
// first gets did not complete.
constexpr int kResidentInFlight = 16;
__global__ void tile_resident_put_kernel(const __grid_constant__ tmashmem_tensor_handle_t src,
                                         const __grid_constant__ tmashmem_tensor_handle_t dst,
                                         int pe, uint32_t row0, uint32_t rows, long iters,
                                         uint64_t timeout_ns, int* error) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* tiles = align128(smem_raw);
  const uint32_t box_bytes = src.box_bytes, box_rows = src.box[1];
  const Range mine = share(rows / box_rows, blockIdx.x, gridDim.x, 1);
  const uint32_t n = static_cast<uint32_t>(mine.end - mine.begin);
  tmashmem::Mbarrier* bar = reinterpret_cast<tmashmem::Mbarrier*>(tiles + size_t(box_bytes) * n);
  if (threadIdx.x != 0 || n == 0) return;
  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  bar->init(1);
  auto at = [&](uint32_t t) {
    return tmashmem::TileCoord(0,
                               static_cast<int32_t>(row0 + (uint32_t(mine.begin) + t) * box_rows));
  };
  bar->arrive_expect_tx(n * box_bytes);
  for (uint32_t t = 0; t < n; ++t)
    tmashmem::tma_get_tile(tiles + size_t(t) * box_bytes, src, src.my_pe, at(t), *bar);
  if (bar->wait(0, timeout_ns) != tmashmem::Status::Ok) {
    *error = 1;
    tmashmem::quiet();
    return;
  }
  for (long it = 0; it < iters; ++it)
    for (uint32_t t = 0; t < n; ++t) {
      tmashmem::tma_put_tile(dst, pe, at(t), tiles + size_t(t) * box_bytes);
      tmashmem::bulk_wait_group_read<kResidentInFlight>();
    }
  tmashmem::quiet();
  bar->inval();
}

// Back-to-back tma_put_tile of one tile (box_bytes) from shared memory into `dst` on
// `pe`: CTA c always writes tile c (rows row0 + c*box[1] ...), its shared tile loaded once
// from `src` (this PE) at the same place, so the destination must equal the source.
// kQuietEach: bulk_wait_group<0> + quiet() after every put (latency); otherwise at
// most 8 puts in flight and one quiet() at the end (rate). One thread per CTA.
template <bool kQuietEach>
__global__ void tile_msg_kernel(const __grid_constant__ tmashmem_tensor_handle_t src,
                                const __grid_constant__ tmashmem_tensor_handle_t dst, int pe,
                                uint32_t row0, long iters, uint64_t timeout_ns, int* error) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* tile = align128(smem_raw);
  tmashmem::Mbarrier* bar = reinterpret_cast<tmashmem::Mbarrier*>(tile + src.box_bytes);
  if (threadIdx.x != 0) return;
  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  bar->init(1);
  const tmashmem::TileCoord at(0, static_cast<int32_t>(row0 + blockIdx.x * src.box[1]));
  bar->arrive_expect_tx(src.box_bytes);
  tmashmem::tma_get_tile(tile, src, src.my_pe, at, *bar);
  if (bar->wait(0, timeout_ns) != tmashmem::Status::Ok) {
    *error = 1;
    return;
  }
  for (long m = 0; m < iters; ++m) {
    tmashmem::tma_put_tile(dst, pe, at, tile);
    if constexpr (kQuietEach)
      tmashmem::quiet();
    else
      tmashmem::bulk_wait_group<8>();
  }
  tmashmem::quiet();
  bar->inval();
}
#else
struct TileViews {};  // NVSHMEM has no tile views
inline void destroy(TileViews&) {}
#endif  // PERF_TMASHMEM

}  // namespace perf
