// The all-gather GEMM as a device building block (tensor-parallel column-linear layer):
// each PE holds an [m_shard, K] shard of A (symmetric) and its own B [N, K];
//   C [n_pes * m_shard, N] = all_gather(A) * B^T,
// and the gathered A lands in a local buffer [n_pes * m_shard, K] that the GEMM reads.
//
// One kernel that copies and multiplies. The GEMM's tile order is rotated to start at this
// PE's own rows, which it loads straight from the shard (a tensor map of its own), so the
// first tiles never wait. Meanwhile copiers pull the peers' shards into the gathered buffer
// in the order the GEMM reaches them (the next PE's rows first, wrapping), and this PE's own
// shard last (the gathered copy is an output only), publishing each chunk (the rows of one
// cluster-tile row, from one PE) with a flag set to the call's epoch; the producer waits for
// a chunk's flag before its first TMA load of those rows. Each remote row crosses the link
// once. Two kinds of copiers:
//   comm_ctas == 0  the three warps of every GEMM CTA's producer warpgroup that the GEMM
//                   leaves idle: a chunk is cut into pieces that all GEMM CTAs copy side by
//                   side (16-byte loads and stores, four in flight per thread, the next four
//                   pieces prefetched into L2), so the chunk the GEMM needs next is copied by the
//                   whole grid; the CTA that copies a chunk's last piece flags it;
//   comm_ctas > 0   CTAs 0 .. comm_ctas - 1, one thread each, whole chunks by bulk copies
//                   through a shared-memory ring (chunk_copy.cuh); those SMs do no GEMM work.
//
// Protocol of call e (sync.cuh has the words): at start, the copier of the first claim publishes
// permit = e to every peer (this PE's shard, written by the stream's earlier work, is
// ready); a copier waits for permit[p] >= e before its first read of PE p's shard; when all
// chunks of p's shard have been copied, done[this PE] = e goes to p; the call's last CTA waits
// until every peer has sent done = e (nobody still reads this PE's shard, so the stream's next
// work may overwrite it), then bumps the epoch. Every wait is bounded (trap with a message).
//
// Co-residency: GEMM CTAs wait for copies made by other CTAs and for peers' kernels, so the
// grid must fit on the SMs this PE may use at once (PEs sharing a GPU share its SMs: the
// planner divides them, allgather_gemm_launch.cuh); comm CTAs take the lowest block indices.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/gemm_tma.cuh"
#include "tmashmem/device/detail/warpgroup.cuh"
#include "tmashmem/device/fused/chunk_copy.cuh"
#include "tmashmem/device/fused/sync.cuh"
#include "tmashmem/device/gemm/kernel.cuh"

namespace tmashmem::fused {

/// The kernel's run-time arguments beside the four tensor maps (A: the gathered buffer,
/// rank 3 {K, m_shard, n_pes}; own A: this PE's shard, rank 3 {K, m_shard, 1}, the same box;
/// B; C: rank 3 {N, m_shard, n_pes}).
struct AllgatherGemmArgs {
  gemm::GemmArgs gemm;           // batches = n_pes, m = m_shard
  const __nv_bfloat16* a_shard;  // symmetric [m_shard, K], rows contiguous
  __nv_bfloat16* a_gathered;     // this PE's [n_pes * m_shard, K], rows contiguous
  int copy_own;                  // 1: this PE's shard is copied into a_gathered too (the
                                 // gathered A is returned); 0: only the peers' rows land there
  uint64_t* ws;                  // symmetric signal workspace (sync.cuh), zeroed once
  int comm_ctas;                 // > 0: CTAs 0 .. comm_ctas - 1 copy (bulk copies); 0: the
                                 // idle producer warps of every GEMM CTA copy
  int chunk_rows;                // rows per chunk: kBlockM * kClusterM
  int pieces_per_chunk;          // copy items per chunk (1 with comm_ctas > 0)
  uint32_t piece_bytes;          // bytes of one piece (a multiple of 16)
  int piece_counters;            // word of the workspace where the per-chunk piece counts start
  uint64_t timeout_ns;           // bound on every wait
};

/// Shared memory of a communication CTA's copy ring (it reuses the GEMM's dynamic shared
/// memory, which is larger).
using AllgatherRing = CopyRing<6, 32 * 1024>;

/// Piece `j` of the copy order: position j / pieces_per_chunk in the chunk order (the peers'
/// chunks in the GEMM's order, then the own shard's, when copy_own), which flag and PE, and the
/// bytes to move (0 for a piece past the end of a short chunk).
struct AllgatherPiece {
  int chunk, pe;
  const char* src;
  char* dst;
  uint32_t bytes;
};

__device__ __forceinline__ AllgatherPiece allgather_piece(const Ctx& ctx,
                                                          const AllgatherGemmArgs& a, int j) {
  const int total = a.gemm.cluster_rows, per_pe = a.gemm.batch_cluster_rows;
  const int position = j / a.pieces_per_chunk, piece = j - position * a.pieces_per_chunk;
  AllgatherPiece c;
  c.chunk = (a.gemm.row_rotation + per_pe + position) % total;
  c.pe = c.chunk / per_pe;
  const int row0 = (c.chunk - c.pe * per_pe) * a.chunk_rows;
  const int rows = min(a.chunk_rows, a.gemm.m - row0);
  const int64_t row_bytes = int64_t(a.gemm.k) * 2;
  const int64_t chunk_bytes = rows * row_bytes, offset = int64_t(piece) * a.piece_bytes;
  c.src = reinterpret_cast<const char*>(ptr(ctx, a.a_shard, c.pe)) + row0 * row_bytes + offset;
  c.dst = reinterpret_cast<char*>(a.a_gathered) + (int64_t(c.pe) * a.gemm.m + row0) * row_bytes +
          offset;
  c.bytes = static_cast<uint32_t>(
      offset >= chunk_bytes ? 0 : min(int64_t(a.piece_bytes), chunk_bytes - offset));
  return c;
}

/// One thread, once per call: this PE's shard is final (the stream's earlier work is
/// complete), so peers may read it.
__device__ __forceinline__ void allgather_permit(const Ctx& ctx, const AllgatherGemmArgs& a,
                                                 uint64_t epoch) {
  detail::fence_acq_rel_sys();
  for (int q = 0; q < ctx.n_pes; ++q)
    if (q != ctx.my_pe) fused_publish(ctx, a.ws, words::kPermit + ctx.my_pe, epoch, q);
}

/// One thread, once a piece's bytes are written and ordered before it (bulk copies:
/// completed and proxy-fenced; ordinary stores: a barrier with the writers): counts the piece;
/// the chunk's last piece flags a peer's chunk, and tells PE p when all of its shard has been
/// read. (Own chunks are not flagged: the GEMM reads the shard itself.)
__device__ __forceinline__ void allgather_piece_done(const Ctx& ctx, const AllgatherGemmArgs& a,
                                                     uint64_t epoch, const AllgatherPiece& c) {
  if (c.pe == ctx.my_pe) return;
  if (a.pieces_per_chunk > 1) {
    unsigned long long* count = as_counter(a.ws + a.piece_counters + c.chunk);
    __threadfence();  // this piece's writes, before the count that publishes them
    if (atomicAdd(count, 1ull) + 1 != static_cast<unsigned long long>(a.pieces_per_chunk)) return;
    __threadfence();  // every counted piece's writes, before the flag
    *count = 0;       // for the next call (which starts after this kernel)
  }
  detail::st_release_gpu(a.ws + words::kFlags + c.chunk, epoch);
  const unsigned long long before = atomicAdd(as_counter(a.ws + words::kCounter + c.pe), 1ull);
  if (before + 1 == static_cast<unsigned long long>(a.gemm.batch_cluster_rows))
    fused_publish(ctx, a.ws, words::kDone + ctx.my_pe, epoch, c.pe);
}

/// How many of a copier's pieces ahead of the one it copies are being prefetched into L2.
constexpr int kAllgatherPrefetchDepth = 4;

/// The copy loop of one copier: it claims the pieces of the copy order one by one, in order,
/// from the call's claim word (a copier that falls behind or starts late holds up no piece the
/// GEMM waits for); `stride` copiers share them (the L2 prefetch guesses their claims from it).
/// `Copier`:
///   leader()        the thread that waits, signals, claims and prefetches;
///   claimed(j)      the leader's claim j, returned to every thread of the copier;
///   sync()          all of the copier's threads (a barrier; nothing for one thread);
///   copy(piece)     moves the piece's bytes (every thread of the copier);
///   after_acquire() after a peer's permit was acquired, before its shard is read;
///   before_done()   the piece's writes complete and ordered before a generic release.
template <class Copier>
__device__ __forceinline__ void allgather_copy(const Ctx& ctx, const AllgatherGemmArgs& a,
                                               uint64_t epoch, int stride, Copier& copier) {
  // The own shard's chunks come last in the order: without copy_own the walk ends before them.
  const int chunks = a.gemm.cluster_rows - (a.copy_own ? 0 : a.gemm.batch_cluster_rows);
  const int pieces = chunks * a.pieces_per_chunk;
  uint64_t permitted = uint64_t(1) << ctx.my_pe;  // bit p: PE p's shard may be read (n_pes <= 64)
  bool first_claim = true;
  for (;;) {
    int j = 0;
    if (copier.leader()) j = static_cast<int>(atomicAdd(as_counter(a.ws + words::kClaim), 1ull));
    j = copier.claimed(j);
    // The first claim of the call: its copier tells the peers that this PE's shard is ready.
    if (j == 0 && copier.leader()) allgather_permit(ctx, a, epoch);
    if (j >= pieces) break;
    const AllgatherPiece c = allgather_piece(ctx, a, j);
    if (!((permitted >> c.pe) & 1u)) {
      if (copier.leader())
        fused_wait_ge(a.ws + words::kPermit + c.pe, epoch, a.timeout_ns, "allgather_matmul",
                      ctx.my_pe, "the shard of PE", c.pe);
      copier.sync();
      copier.after_acquire();
      permitted |= uint64_t(1) << c.pe;
    }
    // Keep this copier's next kAllgatherPrefetchDepth pieces on their way into L2 (of the
    // PEs whose permit has been seen), so that the loads of each piece hit L2.
    for (int d = first_claim ? 1 : kAllgatherPrefetchDepth; d <= kAllgatherPrefetchDepth; ++d) {
      const int next_j = j + d * stride;
      if (!copier.leader() || next_j >= pieces) break;
      const AllgatherPiece next = allgather_piece(ctx, a, next_j);
      if (next.bytes > 0 && ((permitted >> next.pe) & 1u))
        detail::bulk_prefetch_l2(next.src, next.bytes);
    }
    first_claim = false;
    copier.copy(c);
    copier.before_done();
    if (copier.leader()) allgather_piece_done(ctx, a, epoch, c);
  }
}

/// Copier: the 96 idle threads of a GEMM CTA's producer warpgroup, ordinary 16-byte loads
/// (streaming) and stores.
struct ProducerWarpsCopier {
  static constexpr uint32_t kThreads = 96;
  uint32_t t;  // 0 .. kThreads - 1
  __device__ __forceinline__ bool leader() const { return t == 0; }
  __device__ __forceinline__ void sync() const {
    detail::named_barrier_sync(gemm::kProducerWarpsBarrier, kThreads);
  }
  __device__ __forceinline__ void after_acquire() const {}
  // The leader's claim through shared memory; the second barrier keeps the next claim's
  // write behind every thread's read of this one.
  __device__ __forceinline__ int claimed(int j) const {
    __shared__ int claim;
    if (leader()) claim = j;
    sync();
    j = claim;
    sync();
    return j;
  }
  // The barrier makes every thread's stores visible to the leader, whose fence and release
  // (allgather_piece_done) are cumulative over them.
  __device__ __forceinline__ void before_done() const { sync(); }
  __device__ __forceinline__ void copy(const AllgatherPiece& c) const {
    const uint4* src = reinterpret_cast<const uint4*>(c.src) + t;
    uint4* dst = reinterpret_cast<uint4*>(c.dst) + t;
    const uint32_t n = c.bytes / 16;
    uint32_t j = t;
    for (; j + 3 * kThreads < n; j += 4 * kThreads) {  // four 16-byte loads in flight
      const uint4 v0 = __ldcs(src), v1 = __ldcs(src + kThreads);
      const uint4 v2 = __ldcs(src + 2 * kThreads), v3 = __ldcs(src + 3 * kThreads);
      dst[0] = v0, dst[kThreads] = v1, dst[2 * kThreads] = v2, dst[3 * kThreads] = v3;
      src += 4 * kThreads, dst += 4 * kThreads;
    }
    for (; j < n; j += kThreads, src += kThreads, dst += kThreads) *dst = __ldcs(src);
  }
};

/// Copier: one thread of a communication CTA, bulk copies through the ring.
struct RingCopier {
  AllgatherRing* ring;
  __device__ __forceinline__ bool leader() const { return true; }
  __device__ __forceinline__ int claimed(int j) const { return j; }
  __device__ __forceinline__ void sync() const {}
  // The acquire, then the bulk (async-proxy) reads of the peer's shard.
  __device__ __forceinline__ void after_acquire() const { detail::fence_proxy_async_global(); }
  __device__ __forceinline__ void before_done() const {
    detail::bulk_wait<0>();
    detail::fence_proxy_async_global();  // async-proxy writes, then the generic release
  }
  __device__ __forceinline__ void copy(const AllgatherPiece& c) const {
    ring->copy(c.dst, c.src, c.bytes);
  }
};

/// The producer hooks: this PE's own rows come from its shard's map and never wait; a peer's
/// rows wait for their chunk's flag before the first load. With copy_ctas > 0 the idle
/// producer warps claim and copy pieces.
struct AllgatherHooks : gemm::NoHooks {
  // Tiles claimed in order (gemm/tile_queue.cuh).
  static constexpr bool kClaimTiles = true;
  __device__ __forceinline__ unsigned long long* tile_claims() const {
    return as_counter(args->ws + words::kTileClaim);
  }

  const Ctx* ctx;
  const AllgatherGemmArgs* args;
  const CUtensorMap* own_map;
  uint64_t epoch;
  int copy_ctas = 0;  // CTAs whose producer warps copy; 0: this CTA's do not
  int last_row = -1;

  __device__ __forceinline__ const CUtensorMap* input_map(const CUtensorMap* a_map, int batch,
                                                          int* batch_coord) {
    const bool own = batch == ctx->my_pe;
    *batch_coord = own ? 0 : batch;
    return own ? own_map : a_map;
  }

  __device__ __forceinline__ void before_a_loads(int batch, int /*row0*/, int cluster_row,
                                                 int /*col*/, int /*index*/) {
    if (batch == ctx->my_pe || cluster_row == last_row) return;
    last_row = cluster_row;
    fused_wait_ge(args->ws + words::kFlags + cluster_row, epoch, args->timeout_ns,
                  "allgather_matmul", ctx->my_pe, "A chunk", cluster_row);
    // The rows were written by copies and published by a generic release: the proxy fence
    // orders the acquire before this thread's TMA loads of them.
    detail::fence_proxy_async_global();
  }

  __device__ __forceinline__ void producer_warps(uint32_t t) {
    if (copy_ctas == 0) return;
    ProducerWarpsCopier copier{t};
    allgather_copy(*ctx, *args, epoch, copy_ctas, copier);
  }
};

/// The whole kernel body, every thread of every CTA. `smem`: the kernel's dynamic shared
/// memory (gemm::gemm_smem_bytes<Cfg>() bytes). Cluster size Cfg::kClusterM; comm_ctas a
/// multiple of it. `own_map`: this PE's shard (see AllgatherGemmArgs).
template <class Cfg>
__device__ __forceinline__ void allgather_gemm_cta(const Ctx& ctx, const CUtensorMap* a_map,
                                                   const CUtensorMap* own_map,
                                                   const CUtensorMap* b_map,
                                                   const CUtensorMap* c_map,
                                                   const AllgatherGemmArgs& a, uint8_t* smem) {
  static_assert(AllgatherRing::kSmemBytes <= sizeof(gemm::GemmSharedStorage<Cfg>),
                "the copy ring must fit in the GEMM's shared memory");
  const uint64_t epoch = fused_epoch(a.ws);
  const int block = static_cast<int>(blockIdx.x);
  if (block < a.comm_ctas) {
    if (threadIdx.x == 0) {
      AllgatherRing ring;
      ring.init(smem, a.timeout_ns);
      RingCopier copier{&ring};
      allgather_copy(ctx, a, epoch, a.comm_ctas, copier);
    }
  } else {
    AllgatherHooks hooks;
    hooks.ctx = &ctx;
    hooks.args = &a;
    hooks.own_map = own_map;
    hooks.epoch = epoch;
    if (a.comm_ctas == 0) hooks.copy_ctas = static_cast<int>(gridDim.x);
    if (threadIdx.x == 0) detail::tensormap_prefetch(own_map);
    gemm::gemm_cta<Cfg>(gemm::gemm_shared_storage<Cfg>(smem), a_map, b_map, c_map, a.gemm,
                        (block - a.comm_ctas) / Cfg::kClusterM,
                        (static_cast<int>(gridDim.x) - a.comm_ctas) / Cfg::kClusterM, hooks);
  }
  __syncthreads();
  // A consumer thread finishes: the producer warpgroup runs on kProducerRegs registers.
  if (threadIdx.x == kFinishThread)
    fused_finish(a.ws, epoch, [&] {
      for (int q = 0; q < ctx.n_pes; ++q)
        if (q != ctx.my_pe)
          fused_wait_ge(a.ws + words::kDone + q, epoch, a.timeout_ns, "allgather_matmul", ctx.my_pe,
                        "the reads of this shard by PE", q);
    });
}

/// The kernel the on-stream call and the planner (allgather_gemm_launch.cuh) launch.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    allgather_gemm_kernel(const __grid_constant__ tmashmem_ctx_t ctx,
                          const __grid_constant__ CUtensorMap a_map,
                          const __grid_constant__ CUtensorMap own_map,
                          const __grid_constant__ CUtensorMap b_map,
                          const __grid_constant__ CUtensorMap c_map,
                          const __grid_constant__ AllgatherGemmArgs args) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  allgather_gemm_cta<Cfg>(ctx, &a_map, &own_map, &b_map, &c_map, args, smem_raw);
#else
  (void)ctx, (void)a_map, (void)own_map, (void)b_map, (void)c_map, (void)args;
#endif
}

}  // namespace tmashmem::fused
