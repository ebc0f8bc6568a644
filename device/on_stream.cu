// The library's own kernels for the on-stream calls and the CUDA runtime calls around
// them, registered with the runtime as its StreamKernels table (runtime/stream_kernels.h)
// while libtmashmem loads. The host half of the calls (argument checks, address
// translation, stream memory operations) is runtime/on_stream.cpp.
//
// Nothing here synchronises the host or allocates, so every call can be captured into a
// CUDA graph: the kernels take their arguments by value (the device context, already
// translated peer addresses), and the barrier's state lives in the signal pad, read at run
// time, so a replayed graph keeps counting barriers correctly.
//
// The library links its own static copy of the CUDA runtime (its symbols are kept private
// to libtmashmem); kernels run in the device's primary context, the one the runtime
// initialised, so streams of the application's runtime work here.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/stream_kernels.h"
#include "tmashmem/device/barrier.cuh"
#include "tmashmem/device/signal.cuh"
#include "tmashmem/tmashmem.h"

namespace tmashmem {
namespace {

constexpr int kBarrierThreads = 32;  // one warp runs the device barrier

__global__ void barrier_all_kernel(const __grid_constant__ tmashmem_ctx_t ctx) { barrier_all(ctx); }

__global__ void signal_op_kernel(uint64_t* remote_sig, uint64_t value, SignalOp op) {
  // The stream's earlier work is complete when this kernel starts; the fence and
  // the releasing update publish it to whoever acquires the signal.
  detail::fence_sc_sys();
  detail::signal_update_release(remote_sig, value, op);
}

__global__ void signal_wait_kernel(const uint64_t* sig, Cmp cmp, uint64_t value) {
  signal_wait_until(sig, cmp, value);
  // The acquire above, then kernel completion, orders the stream's later work after
  // the writes the signalling PE published.
  detail::fence_sc_sys();
}

CudaOutcome outcome(cudaError_t error) {
  CudaOutcome o;
  o.code = static_cast<int>(error);
  if (error != cudaSuccess) {
    o.name = cudaGetErrorName(error);
    o.text = cudaGetErrorString(error);
    o.out_of_memory = error == cudaErrorMemoryAllocation;
  }
  return o;
}

// The launch's outcome: the pending error, read (and cleared) right after it.
CudaOutcome launched() { return outcome(cudaGetLastError()); }

CudaOutcome enter_device(int ordinal, int* previous) {
  *previous = -1;
  int current = -1;
  cudaError_t error = cudaGetDevice(&current);
  if (error == cudaSuccess && current != ordinal) {
    error = cudaSetDevice(ordinal);
    if (error == cudaSuccess) *previous = current;
  }
  return outcome(error);
}

void leave_device(int previous) {
  if (previous >= 0) cudaSetDevice(previous);
}

CudaOutcome barrier_all(const tmashmem_ctx_t& ctx, CUstream stream) {
  barrier_all_kernel<<<1, kBarrierThreads, 0, stream>>>(ctx);
  return launched();
}

CudaOutcome signal_op(uint64_t* remote, uint64_t value, int op, CUstream stream) {
  signal_op_kernel<<<1, 1, 0, stream>>>(remote, value, static_cast<SignalOp>(op));
  return launched();
}

CudaOutcome signal_wait(const uint64_t* local, int cmp, uint64_t value, CUstream stream) {
  signal_wait_kernel<<<1, 1, 0, stream>>>(local, static_cast<Cmp>(cmp), value);
  return launched();
}

CudaOutcome copy(void* dest, const void* src, size_t bytes, CUstream stream) {
  const cudaError_t error = cudaMemcpyAsync(dest, src, bytes, cudaMemcpyDefault, stream);
  return outcome(error);
}

const StreamKernels kKernels = {enter_device, leave_device, barrier_all,
                                signal_op,    signal_wait,  copy};

struct Registration {
  Registration() { register_stream_kernels(&kKernels); }
} g_registration;

}  // namespace
}  // namespace tmashmem
