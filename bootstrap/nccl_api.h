// The few NCCL and CUDA runtime entry points the NCCL bootstrap calls, resolved at
// run time with dlopen, so that a program that never asks for the NCCL bootstrap
// needs neither libnccl nor libcudart. Types come from nccl.h and
// cuda_runtime_api.h; no symbol of either library is linked.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace tmashmem {

struct NcclApi {
  ncclResult_t (*GetVersion)(int*);
  const char* (*GetErrorString)(ncclResult_t);
  ncclResult_t (*CommCount)(const ncclComm_t, int*);
  ncclResult_t (*CommUserRank)(const ncclComm_t, int*);
  ncclResult_t (*CommCuDevice)(const ncclComm_t, int*);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*);
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t);

  cudaError_t (*GetDevice)(int*);
  cudaError_t (*SetDevice)(int);
  cudaError_t (*Malloc)(void**, size_t);
  cudaError_t (*Free)(void*);
  cudaError_t (*StreamCreateWithFlags)(cudaStream_t*, unsigned int);
  cudaError_t (*StreamDestroy)(cudaStream_t);
  cudaError_t (*StreamQuery)(cudaStream_t);
  cudaError_t (*MemcpyAsync)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  cudaError_t (*Memcpy)(void*, const void*, size_t, cudaMemcpyKind);
  const char* (*GetErrorStringCuda)(cudaError_t);
};

// Loads both libraries once per process (they stay loaded). NULL with *why when either
// library or an entry point is missing.
const NcclApi* nccl_api(std::string* why);

}  // namespace tmashmem
