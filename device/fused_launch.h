// The two halves of the fused kernels' table (runtime/fused_kernels.h): each in its own
// translation unit (device/fused_allgather.cu, device/fused_reduce_scatter.cu), so that they
// compile side by side; fused_allgather.cu registers the table.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "device/cuda_outcome.h"
#include "runtime/fused_kernels.h"

namespace tmashmem::device_fused {

CudaOutcome rejected(const char* why);
CudaOutcome allgather_matmul(const AllgatherMatmulCall& call, CUstream stream);
CudaOutcome matmul_reduce_scatter(const MatmulReduceScatterCall& call, CUstream stream);
uint64_t reduce_scatter_bytes(int64_t m_shard, int64_t n, int n_pes, int mode);

}  // namespace tmashmem::device_fused
