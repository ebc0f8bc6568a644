// The outcome of a CUDA runtime or driver call as the host half reads it (CudaOutcome,
// runtime/driver.h): the one conversion that every table of the device library
// (device/on_stream.cu, device/collectives.cu, device/fused_*.cu) reports with.
#pragma once

#include <cuda.h>
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

// The outcome of a driver call the device library makes through the runtime's table
// (driver()), in the same form.
inline CudaOutcome cuda_outcome(CUresult result) {
  CudaOutcome o;
  o.code = static_cast<int>(result);
  if (result != CUDA_SUCCESS) {
    if (driver().cuGetErrorName(result, &o.name) != CUDA_SUCCESS || o.name == nullptr)
      o.name = "an unknown CUresult";
    if (driver().cuGetErrorString(result, &o.text) != CUDA_SUCCESS || o.text == nullptr)
      o.text = "";
    o.out_of_memory = result == CUDA_ERROR_OUT_OF_MEMORY;
  }
  return o;
}

}  // namespace tmashmem
