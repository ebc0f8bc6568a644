// The launch interface between the fused calls' host half (runtime/fused.cpp: argument
// checks, translation, workspace layout) and their kernels (device/fused_allgather.cu), which
// register this table while libtmashmem loads, like runtime/stream_kernels.h's.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "runtime/driver.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

struct AllgatherMatmulCall {
  tmashmem_ctx_t ctx;
  const void* a_shard;
  const void* b;
  void* c;
  void* a_gathered;  // never NULL here (the host half resolves the workspace case)
  void* workspace;
  int m_shard, n, k;
  int64_t ldb, ldc;
  int comm_sms;
  int copy_own;  // 1: the gathered A is returned (this PE's rows copied too); 0: peers' rows only
};

struct MatmulReduceScatterCall {
  tmashmem_ctx_t ctx;
  const void* a;
  const void* b;
  void* c_shard;
  void* workspace;
  int m, n, k;
  int64_t lda, ldb, ldc;
  int mode;  // tmashmem_reduce_scatter_mode_t
};

struct FusedKernels {
  // Plans and launches the all-gather GEMM on `stream`. A shape the planner rejects returns
  // code -1 with the planner's sentence in `name`.
  CudaOutcome (*allgather_matmul)(const AllgatherMatmulCall& call, CUstream stream);
  // The same for the GEMM + reduce-scatter.
  CudaOutcome (*matmul_reduce_scatter)(const MatmulReduceScatterCall& call, CUstream stream);
  // Workspace bytes, from the kernels' own layout (tmashmem/device/fused/*_launch.cuh): the
  // all-gather's signal words (the gathered A, when kept in the workspace, follows at the
  // next 1024-byte boundary), and the whole reduce-scatter workspace of `mode`.
  uint64_t (*allgather_signal_bytes)(int64_t m_shard, int n_pes);
  uint64_t (*reduce_scatter_bytes)(int64_t m_shard, int64_t n, int n_pes, int mode);
};

// Called once by device/fused_allgather.cu; `kernels` must outlive the process.
void register_fused_kernels(const FusedKernels* kernels);

}  // namespace tmashmem
