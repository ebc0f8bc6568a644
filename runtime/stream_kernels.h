// The launch interface between the on-stream calls' host half (runtime/on_stream.cpp) and
// the library's own kernels (device/on_stream.cu).
//
// The host half checks arguments, translates addresses and enqueues CUDA stream memory
// operations through the driver table itself; everything that needs the CUDA runtime (the
// kernels, the copy-engine transfers, the runtime's current device) goes through this
// table. device/on_stream.cu registers it while libtmashmem loads (a static initialiser).
// A build without device/ has no table: the CPU tests on the emulated driver link the
// runtime alone, and every path that needs the table returns TMASHMEM_ERROR_NOT_SUPPORTED
// naming the call (kNoKernelsMessage), which those tests assert.
//
// Every entry returns the outcome of its own CUDA runtime calls only: it clears an error an
// earlier entry left pending before it starts, and clears its own before it returns.

#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "runtime/driver.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

struct StreamKernels {
  // Makes CUDA device `ordinal` the runtime's current device on this thread; *previous
  // gets the device to give back to leave_device (-1: nothing to give back).
  CudaOutcome (*enter_device)(int ordinal, int* previous);
  void (*leave_device)(int previous);
  // One 32-thread block running the device barrier (tmashmem/device/barrier.cuh).
  CudaOutcome (*barrier_all)(const tmashmem_ctx_t& ctx, CUstream stream);
  // One thread: system fence, then the releasing update of `remote` with `op`.
  CudaOutcome (*signal_op)(uint64_t* remote, uint64_t value, int op, CUstream stream);
  // One thread: waits until `*local <cmp> value`, then a system fence.
  CudaOutcome (*signal_wait)(const uint64_t* local, int cmp, uint64_t value, CUstream stream);
  // One thread: waits at most timeout_ns (GPU global timer) until `*local <cmp> value`,
  // then a system fence, then writes TMASHMEM_SUCCESS or TMASHMEM_ERROR_TIMEOUT to *status
  // (mapped host or managed memory) and fences again so the host sees it after a sync.
  CudaOutcome (*signal_wait_timeout)(const uint64_t* local, int cmp, uint64_t value,
                                     uint64_t timeout_ns, int32_t* status, CUstream stream);
  // cudaMemcpyAsync(dest, src, bytes, cudaMemcpyDefault, stream).
  CudaOutcome (*copy)(void* dest, const void* src, size_t bytes, CUstream stream);
};

// Called once by device/on_stream.cu; `kernels` must outlive the process.
void register_stream_kernels(const StreamKernels* kernels);
// The registered table, or nullptr in a build without the device library.
const StreamKernels* stream_kernels();

constexpr const char* kNoKernelsMessage =
    "this build of the runtime has no device library (device/on_stream.cu registers the "
    "library's kernels and CUDA runtime calls), so this path cannot run; link libtmashmem";

}  // namespace tmashmem
