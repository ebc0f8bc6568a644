// The outcome of a CUDA runtime call as the host half reads it (CudaOutcome,
// runtime/driver.h): the one conversion that every table of the device library
// (device/on_stream.cu, device/collectives.cu, device/fused_*.cu) reports with.
#pragma once

#include <cuda_runtime.h>

#include "runtime/driver.h"

namespace tmashmem {

inline CudaOutcome cuda_outcome(cudaError_t error) {
  CudaOutcome o;
  o.code = static_cast<int>(error);
  if (error != cudaSuccess) {
    o.name = cudaGetErrorName(error);
    o.text = cudaGetErrorString(error);
    o.out_of_memory = error == cudaErrorMemoryAllocation;
  }
  return o;
}

}  // namespace tmashmem
