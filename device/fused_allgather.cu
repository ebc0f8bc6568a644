// The all-gather GEMM kernel of tmashmem_allgather_matmul_on_stream (tmashmem/fused.h), and
// the registration of the fused kernels' table with the host half (runtime/fused.cpp) while
// libtmashmem loads. One configuration: 128 x 256 tiles, 4 stages, no cluster (the GEMM's
// fastest single configuration across shapes, docs/gemm.md); the kernel itself is the
// building block of tmashmem/device/fused/allgather_gemm.cuh.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "device/fused_launch.h"
#include "tmashmem/device/fused/allgather_gemm_launch.cuh"
#include "tmashmem/fused.h"

namespace tmashmem::device_fused {

using AllgatherCfg = gemm::GemmConfig<256, 4, 1, __nv_bfloat16>;

CudaOutcome rejected(const char* why) {
  CudaOutcome o;
  o.code = -1;
  o.name = why;
  return o;
}

CudaOutcome allgather_matmul(const AllgatherMatmulCall& c, CUstream stream) {
  fused::AllgatherGemmProblem p{c.m_shard,
                                c.n,
                                c.k,
                                static_cast<const __nv_bfloat16*>(c.a_shard),
                                static_cast<const __nv_bfloat16*>(c.b),
                                c.ldb,
                                static_cast<__nv_bfloat16*>(c.c),
                                c.ldc,
                                static_cast<__nv_bfloat16*>(c.a_gathered),
                                static_cast<uint64_t*>(c.workspace)};
  p.copy_own = c.copy_own != 0;
  // The public encoding (0: by shape, TMASHMEM_COMM_WARPS) in the planner's.
  p.comm_ctas = c.comm_sms == 0                     ? fused::kAllgatherCommByShape
                : c.comm_sms == TMASHMEM_COMM_WARPS ? 0
                                                    : c.comm_sms;
  fused::AllgatherGemmPlan<AllgatherCfg> plan;
  if (const char* why = fused::allgather_gemm_plan(c.ctx, p, &plan)) return rejected(why);
  return cuda_outcome(fused::allgather_gemm_run(c.ctx, plan, stream));
}

namespace {

const FusedKernels kFused = {allgather_matmul, matmul_reduce_scatter,
                             fused::allgather_gemm_workspace_bytes, reduce_scatter_bytes};

struct Registration {
  Registration() { register_fused_kernels(&kFused); }
} g_registration;

}  // namespace
}  // namespace tmashmem::device_fused
