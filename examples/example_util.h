// The host code every example shares: a CUDA-error check that names the program, and what
// an example does when tmashmem_init fails.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>

#include "tmashmem/tmashmem.h"

// True when `error` is cudaSuccess; otherwise says which call (`what`) of `program` failed.
inline bool example_cuda_ok(const char* program, cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s failed: %s\n", program, what, cudaGetErrorString(error));
  return false;
}

// Says why tmashmem_init returned `st` and gives the example's exit status: 2 when there
// is no CUDA device or driver (nothing to run on this machine), 1 for any other failure.
inline int example_init_failure(const char* program, tmashmem_status_t st) {
  const bool no_device = st == TMASHMEM_ERROR_NO_DEVICE || st == TMASHMEM_ERROR_NO_DRIVER;
  std::printf("%s: %s: %s\n", program, no_device ? "no CUDA device" : "tmashmem_init failed",
              tmashmem_last_error());
  return no_device ? 2 : 1;
}
