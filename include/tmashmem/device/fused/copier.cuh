// The default copier of the all-gather GEMM (tmashmem_allgather_matmul_on_stream with
// comm_sms 0): a pure function of the job and the shape. Plain C++ without CUDA, so that CPU
// tests include it; allgather_gemm_plan (allgather_gemm_launch.cuh) calls it with the PE's
// share of the SMs.
#pragma once

namespace tmashmem::fused {

/// AllgatherGemmProblem::comm_ctas asking for allgather_default_comm_ctas (what
/// tmashmem_allgather_matmul_on_stream's comm_sms 0 passes).
constexpr int kAllgatherCommByShape = -1;

/// From this many columns of B per PE the GEMM CTAs' idle producer warps keep up with the
/// GEMM (docs/fused.md, "Copiers").
constexpr int kAllgatherWarpsMinN = 2048;

/// comm_ctas for AllgatherGemmProblem (0: the producer warps) for `n_pes` PEs, `n` columns of
/// B on this PE and `usable_sms` SMs of this PE: the warps with one PE or from
/// kAllgatherWarpsMinN columns, else an eighth of the PE's SMs as copy CTAs (at least 2; the
/// warps where those would be more than half of the PE's SMs). The eighth session's copier
/// sweep (2 and 4 PEs sharing one H200) found the warps within 0.02 of the best copier with
/// n >= 2048 but on two rows, and an eighth of the SMs (8 of 66, 4 of 33) the best count at
/// n = 1024, where the warps lost 0.10-0.17.
constexpr int allgather_default_comm_ctas(int n_pes, int n, int usable_sms) {
  if (n_pes <= 1 || n >= kAllgatherWarpsMinN) return 0;
  const int copy = usable_sms / 8 > 2 ? usable_sms / 8 : 2;
  return 2 * copy <= usable_sms ? copy : 0;
}

}  // namespace tmashmem::fused
