// The all-gather GEMM as a device building block (tensor-parallel column-linear layer):
// each PE holds an [m_shard, K] shard of A (symmetric) and its own B [N, K];
//   C [n_pes * m_shard, N] = all_gather(A) * B^T,
// and the gathered A lands in a local buffer [n_pes * m_shard, K] that the GEMM reads.
//
// One kernel that copies and multiplies. The copiers pull chunks of the shards (one chunk =
// the rows of one cluster-tile row of the GEMM, from one PE) into the gathered buffer, in
// the GEMM's tile order (own shard first, then the following PEs', wrapping), and publish
// each chunk with a flag set to the call's epoch. Two kinds of copiers:
//   comm_ctas == 0  the three warps of every GEMM CTA's producer warpgroup that the GEMM
//                   leaves idle (16-byte loads and stores, four in flight per thread);
//   comm_ctas > 0   CTAs 0 .. comm_ctas - 1, one thread each, with bulk copies through a
//                   shared-memory ring (chunk_copy.cuh); those SMs do no GEMM work.
// The GEMM CTAs run the engine (gemm/kernel.cuh) with a producer hook that waits for a
// chunk's flag before the first TMA load of its rows; their tile order is rotated to start
// at this PE's own rows, which are copied first (locally), so compute starts at once. Each
// remote row crosses the link once.
//
// Protocol of call e (sync.cuh has the words): at start, the first copier publishes
// permit = e to every peer (this PE's shard, written by the stream's earlier work, is
// ready); a copier waits for permit[p] >= e before its first read of PE p's shard; when all chunks
// of p's shard have been copied, done[this PE] = e goes to p; the call's last CTA waits until every
// peer has sent done = e (nobody still reads this PE's shard, so the stream's next work may
// overwrite it), then bumps the epoch. Every wait is bounded (trap with a message).
//
// Co-residency: GEMM CTAs wait for comm CTAs and for peers' kernels, so the grid must fit
// on the SMs this PE may use at once (PEs sharing a GPU share its SMs: the planner divides
// them, launch.cuh); comm CTAs take the lowest block indices.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/warpgroup.cuh"
#include "tmashmem/device/fused/chunk_copy.cuh"
#include "tmashmem/device/fused/sync.cuh"
#include "tmashmem/device/gemm/kernel.cuh"

namespace tmashmem::fused {

/// The kernel's run-time arguments beside the three tensor maps (A: the gathered buffer,
/// rank 3 {K, m_shard, n_pes}; B; C: rank 3 {N, m_shard, n_pes}).
struct AllgatherGemmArgs {
  gemm::GemmArgs gemm;           // batches = n_pes, m = m_shard
  const __nv_bfloat16* a_shard;  // symmetric [m_shard, K], rows contiguous
  __nv_bfloat16* a_gathered;     // this PE's [n_pes * m_shard, K], rows contiguous
  uint64_t* ws;                  // symmetric signal workspace (sync.cuh), zeroed once
  int comm_ctas;                 // > 0: CTAs 0 .. comm_ctas - 1 copy (bulk copies); 0: the
                                 // idle producer warps of every GEMM CTA copy
  int chunk_rows;                // rows per chunk: kBlockM * kClusterM
  uint64_t timeout_ns;           // bound on every wait
};

/// Shared memory of a communication CTA's copy ring (it reuses the GEMM's dynamic shared
/// memory, which is larger).
using AllgatherRing = CopyRing<6, 32 * 1024>;

/// Chunk `i` of the copy order (own shard first, then the next PEs'): which flag, which PE,
/// and the bytes to move.
struct AllgatherChunk {
  int chunk, pe;
  const char* src;
  char* dst;
  size_t bytes;
};

__device__ __forceinline__ AllgatherChunk allgather_chunk(const Ctx& ctx,
                                                          const AllgatherGemmArgs& a, int i) {
  const int total = a.gemm.cluster_rows, per_pe = a.gemm.batch_cluster_rows;
  AllgatherChunk c;
  c.chunk = (a.gemm.row_rotation + i) % total;
  c.pe = c.chunk / per_pe;
  const int row0 = (c.chunk - c.pe * per_pe) * a.chunk_rows;
  const int rows = min(a.chunk_rows, a.gemm.m - row0);
  const int64_t row_bytes = int64_t(a.gemm.k) * 2;
  c.src = reinterpret_cast<const char*>(ptr(ctx, a.a_shard, c.pe)) + row0 * row_bytes;
  c.dst = reinterpret_cast<char*>(a.a_gathered) + (int64_t(c.pe) * a.gemm.m + row0) * row_bytes;
  c.bytes = static_cast<size_t>(rows * row_bytes);
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

/// One thread: waits until PE p's shard may be read.
__device__ __forceinline__ void allgather_wait_permit(const Ctx& ctx, const AllgatherGemmArgs& a,
                                                      uint64_t epoch, int p) {
  fused_wait_ge(a.ws + words::kPermit + p, epoch, a.timeout_ns, "allgather_matmul", ctx.my_pe,
                "the shard of PE", p);
}

/// One thread, once the chunk's bytes are written and ordered before it (bulk copies:
/// completed and proxy-fenced; ordinary stores: a barrier with the writers): flags the
/// chunk, and tells PE p when all of its shard has been read.
__device__ __forceinline__ void allgather_chunk_done(const Ctx& ctx, const AllgatherGemmArgs& a,
                                                     uint64_t epoch, const AllgatherChunk& c) {
  detail::st_release_gpu(a.ws + words::kFlags + c.chunk, epoch);
  if (c.pe != ctx.my_pe) {
    const unsigned long long before =
        atomicAdd(reinterpret_cast<unsigned long long*>(a.ws + words::kCounter + c.pe), 1ull);
    if (before + 1 == static_cast<unsigned long long>(a.gemm.batch_cluster_rows))
      fused_publish(ctx, a.ws, words::kDone + ctx.my_pe, epoch, c.pe);
  }
}

/// The producer hook: wait for the chunk holding a tile row before loading it; and, with
/// copy_ctas > 0, the idle producer warps copy this CTA's share of the chunks.
struct AllgatherHooks : gemm::NoHooks {
  const Ctx* ctx;
  const AllgatherGemmArgs* args;
  uint64_t epoch;
  int copy_index = 0, copy_ctas = 0;  // this CTA among the copying CTAs; 0: it does not copy
  int last_row = -1;

  __device__ __forceinline__ void before_a_loads(int /*batch*/, int cluster_row) {
    if (cluster_row == last_row) return;
    last_row = cluster_row;
    fused_wait_ge(args->ws + words::kFlags + cluster_row, epoch, args->timeout_ns,
                  "allgather_matmul", ctx->my_pe, "A chunk", cluster_row);
    // The rows were written by copies and published by a generic release: the proxy fence
    // orders the acquire before this thread's TMA loads of them.
    detail::fence_proxy_async_global();
  }

  __device__ __forceinline__ void producer_warps(uint32_t t) {
    if (copy_ctas == 0) return;
    constexpr uint32_t kThreads = 96;
    const AllgatherGemmArgs& a = *args;
    if (copy_index == 0 && t == 0) allgather_permit(*ctx, a, epoch);
    uint64_t permitted = 0;  // bit p: PE p's permit seen
    for (int i = copy_index; i < a.gemm.cluster_rows; i += copy_ctas) {
      const AllgatherChunk c = allgather_chunk(*ctx, a, i);
      if (c.pe != ctx->my_pe && !((permitted >> c.pe) & 1u)) {
        if (t == 0) allgather_wait_permit(*ctx, a, epoch, c.pe);
        detail::named_barrier_sync(gemm::kProducerWarpsBarrier, kThreads);
        permitted |= uint64_t(1) << c.pe;
      }
      const uint4* src = reinterpret_cast<const uint4*>(c.src) + t;
      uint4* dst = reinterpret_cast<uint4*>(c.dst) + t;
      const uint32_t n = static_cast<uint32_t>(c.bytes / 16);  // a chunk is < 2^31 bytes
      uint32_t j = t;
      for (; j + 3 * kThreads < n; j += 4 * kThreads) {  // four 16-byte loads in flight
        const uint4 v0 = __ldcs(src), v1 = __ldcs(src + kThreads);
        const uint4 v2 = __ldcs(src + 2 * kThreads), v3 = __ldcs(src + 3 * kThreads);
        dst[0] = v0, dst[kThreads] = v1, dst[2 * kThreads] = v2, dst[3 * kThreads] = v3;
        src += 4 * kThreads, dst += 4 * kThreads;
      }
      for (; j < n; j += kThreads, src += kThreads, dst += kThreads) *dst = __ldcs(src);
      detail::named_barrier_sync(gemm::kProducerWarpsBarrier, kThreads);
      if (t == 0) allgather_chunk_done(*ctx, a, epoch, c);  // release: cumulative over the barrier
    }
  }
};

/// One thread of communication CTA `comm` (0 .. comm_ctas - 1): its share of the chunks,
/// by bulk copies.
__device__ __forceinline__ void allgather_communicate(const Ctx& ctx, const AllgatherGemmArgs& a,
                                                      AllgatherRing& ring, int comm,
                                                      uint64_t epoch) {
  if (comm == 0) allgather_permit(ctx, a, epoch);
  uint64_t permitted = 0;  // bit p: PE p's permit seen (n_pes <= 64)
  for (int i = comm; i < a.gemm.cluster_rows; i += a.comm_ctas) {
    const AllgatherChunk c = allgather_chunk(ctx, a, i);
    if (c.pe != ctx.my_pe && !((permitted >> c.pe) & 1u)) {
      allgather_wait_permit(ctx, a, epoch, c.pe);
      detail::fence_proxy_async_global();  // the acquire, then the bulk reads of p's shard
      permitted |= uint64_t(1) << c.pe;
    }
    ring.copy(c.dst, c.src, c.bytes);
    detail::bulk_wait<0>();
    detail::fence_proxy_async_global();  // async-proxy writes, then the generic release
    allgather_chunk_done(ctx, a, epoch, c);
  }
}

/// The whole kernel body, every thread of every CTA. `smem`: the kernel's dynamic shared
/// memory (gemm::gemm_smem_bytes<Cfg>() bytes). Cluster size Cfg::kClusterM; comm_ctas a
/// multiple of it.
template <class Cfg>
__device__ __forceinline__ void allgather_gemm_cta(const Ctx& ctx, const CUtensorMap* a_map,
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
      allgather_communicate(ctx, a, ring, block, epoch);
    }
  } else {
    AllgatherHooks hooks;
    hooks.ctx = &ctx;
    hooks.args = &a;
    hooks.epoch = epoch;
    if (a.comm_ctas == 0) {
      hooks.copy_index = block;
      hooks.copy_ctas = static_cast<int>(gridDim.x);
    }
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
                          const __grid_constant__ CUtensorMap b_map,
                          const __grid_constant__ CUtensorMap c_map,
                          const __grid_constant__ AllgatherGemmArgs args) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  allgather_gemm_cta<Cfg>(ctx, &a_map, &b_map, &c_map, args, smem_raw);
#else
  (void)ctx, (void)a_map, (void)b_map, (void)c_map, (void)args;
#endif
}

}  // namespace tmashmem::fused
