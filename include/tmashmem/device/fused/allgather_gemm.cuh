// The all-gather GEMM as a device building block (tensor-parallel column-linear layer):
// each PE holds an [m_shard, K] shard of A (symmetric) and its own B [N, K];
//   C [n_pes * m_shard, N] = all_gather(A) * B^T,
// and the gathered A lands in a local buffer [n_pes * m_shard, K] that the GEMM reads.
//
// One kernel, two roles. CTAs 0 .. comm_ctas - 1 communicate: one thread each pulls chunks
// of the shards (one chunk = the rows of one cluster-tile row of the GEMM, from one PE) with
// bulk copies (chunk_copy.cuh) into the gathered buffer, in the GEMM's tile order (own
// shard first, then the following PEs', wrapping), and publishes each chunk with a flag set
// to the call's epoch. The other CTAs run the GEMM engine (gemm/kernel.cuh) with a
// producer hook that waits for a chunk's flag before the first TMA load of its rows; their
// tile order is rotated to start at this PE's own rows, which are copied first (locally),
// so compute starts at once. Each remote row crosses the link once.
//
// Protocol of call e (sync.cuh has the words): at start, comm CTA 0 publishes permit = e
// to every peer (this PE's shard, written by the stream's earlier work, is ready); a comm
// thread waits for permit[p] >= e before its first read of PE p's shard; when all chunks of
// p's shard have been copied, done[this PE] = e goes to p; the call's last CTA waits until
// every peer has sent done = e (nobody still reads this PE's shard, so the stream's next
// work may overwrite it), then bumps the epoch. Every wait is bounded (trap with a message).
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
#include "tmashmem/device/fused/chunk_copy.cuh"
#include "tmashmem/device/fused/sync.cuh"
#include "tmashmem/device/gemm/kernel.cuh"

namespace tmashmem::fused {

/// The kernel's run-time arguments beside the three tensor maps (A: the gathered buffer,
/// rank 3 {K, m_shard, n_pes}; B; C: rank 3 {N, m_shard, n_pes}).
struct AllgatherGemmArgs {
  gemm::GemmArgs gemm;             // batches = n_pes, m = m_shard
  const __nv_bfloat16* a_shard;    // symmetric [m_shard, K], rows contiguous
  __nv_bfloat16* a_gathered;       // this PE's [n_pes * m_shard, K], rows contiguous
  uint64_t* ws;                    // symmetric signal workspace (sync.cuh), zeroed once
  int comm_ctas;                   // CTAs 0 .. comm_ctas - 1 communicate
  int chunk_rows;                  // rows per chunk: kBlockM * kClusterM
  uint64_t timeout_ns;             // bound on every wait
};

/// Shared memory of a communication CTA's copy ring (it reuses the GEMM's dynamic shared
/// memory, which is larger).
using AllgatherRing = CopyRing<6, 32 * 1024>;

/// The producer hook: wait for the chunk holding a tile row before loading it.
struct AllgatherWaitHook : gemm::NoHooks {
  const uint64_t* flags;
  uint64_t epoch, timeout_ns;
  int me, last_row = -1;
  __device__ __forceinline__ void before_a_loads(int /*batch*/, int cluster_row) {
    if (cluster_row == last_row) return;
    last_row = cluster_row;
    fused_wait_ge(flags + cluster_row, epoch, timeout_ns, "allgather_matmul", me, "A chunk",
                  cluster_row);
    // The rows were written by bulk copies and published by a generic release: the proxy
    // fence orders the acquire before this thread's TMA loads of them.
    detail::fence_proxy_async_global();
  }
};

/// One thread of communication CTA `comm` (0 .. comm_ctas - 1): its share of the chunks.
__device__ __forceinline__ void allgather_communicate(const Ctx& ctx, const AllgatherGemmArgs& a,
                                                      AllgatherRing& ring, int comm,
                                                      uint64_t epoch) {
  const int me = ctx.my_pe, n = ctx.n_pes;
  uint64_t* ws = a.ws;
  if (comm == 0) {
    // This PE's shard is final (the stream's earlier work is complete): let peers read it.
    detail::fence_acq_rel_sys();
    for (int q = 0; q < n; ++q)
      if (q != me) fused_publish(ctx, ws, words::kPermit + me, epoch, q);
  }
  const int per_pe = a.gemm.batch_cluster_rows, total = a.gemm.cluster_rows;
  const int64_t row_bytes = int64_t(a.gemm.k) * 2;
  uint64_t permitted = 0;  // bit p: PE p's permit seen (n <= 64)
  for (int i = comm; i < total; i += a.comm_ctas) {
    const int chunk = (a.gemm.row_rotation + i) % total;
    const int p = chunk / per_pe;
    const int row0 = (chunk - p * per_pe) * a.chunk_rows;
    const int rows = min(a.chunk_rows, a.gemm.m - row0);
    if (p != me && !((permitted >> p) & 1u)) {
      fused_wait_ge(ws + words::kPermit + p, epoch, a.timeout_ns, "allgather_matmul", me,
                    "the shard of PE", p);
      detail::fence_proxy_async_global();  // the acquire, then the bulk reads of p's shard
      permitted |= uint64_t(1) << p;
    }
    if (rows > 0) {
      const char* src = reinterpret_cast<const char*>(ptr(ctx, a.a_shard, p)) + row0 * row_bytes;
      char* dst = reinterpret_cast<char*>(a.a_gathered) + (int64_t(p) * a.gemm.m + row0) * row_bytes;
      ring.copy(dst, src, static_cast<size_t>(rows * row_bytes));
      detail::bulk_wait<0>();
      detail::fence_proxy_async_global();  // async-proxy writes, then the generic release
    }
    detail::st_release_gpu(ws + words::kFlags + chunk, epoch);
    if (p != me) {
      const unsigned long long before = atomicAdd(
          reinterpret_cast<unsigned long long*>(ws + words::kCounter + p), 1ull);
      if (before + 1 == static_cast<unsigned long long>(per_pe))
        fused_publish(ctx, ws, words::kDone + me, epoch, p);  // all of p's shard is read
    }
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
    AllgatherWaitHook hook;
    hook.flags = a.ws + words::kFlags;
    hook.epoch = epoch;
    hook.timeout_ns = a.timeout_ns;
    hook.me = ctx.my_pe;
    gemm::gemm_cta<Cfg>(gemm::gemm_shared_storage<Cfg>(smem), a_map, b_map, c_map, a.gemm,
                        (block - a.comm_ctas) / Cfg::kClusterM,
                        (static_cast<int>(gridDim.x) - a.comm_ctas) / Cfg::kClusterM, hook);
  }
  __syncthreads();
  if (threadIdx.x == 0)
    fused_finish(a.ws, epoch, [&] {
      for (int q = 0; q < ctx.n_pes; ++q)
        if (q != ctx.my_pe)
          fused_wait_ge(a.ws + words::kDone + q, epoch, a.timeout_ns, "allgather_matmul",
                        ctx.my_pe, "the reads of this shard by PE", q);
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
