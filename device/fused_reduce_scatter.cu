// The GEMM + reduce-scatter kernels of tmashmem_matmul_reduce_scatter_on_stream
// (tmashmem/fused.h), both modes; the kernels are the building block of
// tmashmem/device/fused/gemm_reduce_scatter.cuh.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "device/fused_launch.h"
#include "tmashmem/device/fused/gemm_reduce_scatter_launch.cuh"
#include "tmashmem/fused.h"

namespace tmashmem::device_fused {

namespace {

template <class Cfg, fused::ReduceScatterMode Mode>
CudaOutcome plan_and_run(const MatmulReduceScatterCall& c, CUstream stream) {
  fused::ReduceScatterProblem p{c.m,   c.n,
                                c.k,   static_cast<const __nv_bfloat16*>(c.a),
                                c.lda, static_cast<const __nv_bfloat16*>(c.b),
                                c.ldb, static_cast<__nv_bfloat16*>(c.c_shard),
                                c.ldc, static_cast<uint64_t*>(c.workspace)};
  p.mode = Mode;
  fused::ReduceScatterPlan<Cfg, Mode> plan;
  if (const char* why = fused::reduce_scatter_plan(c.ctx, p, &plan)) return rejected(why);
  return cuda_outcome(fused::reduce_scatter_run(c.ctx, plan, stream));
}

}  // namespace

uint64_t reduce_scatter_bytes(int64_t m_shard, int64_t n, int n_pes, int mode) {
  return fused::reduce_scatter_workspace_bytes(
      static_cast<int>(m_shard), static_cast<int>(n), n_pes,
      mode == TMASHMEM_REDUCE_SCATTER_DETERMINISTIC ? fused::ReduceScatterMode::deterministic
                                                    : fused::ReduceScatterMode::fast);
}

CudaOutcome matmul_reduce_scatter(const MatmulReduceScatterCall& c, CUstream stream) {
  if (c.mode == TMASHMEM_REDUCE_SCATTER_DETERMINISTIC)
    return plan_and_run<fused::ReduceScatterDeterministicCfg,
                        fused::ReduceScatterMode::deterministic>(c, stream);
  return plan_and_run<fused::ReduceScatterFastCfg, fused::ReduceScatterMode::fast>(c, stream);
}

}  // namespace tmashmem::device_fused
