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

#include "device/cuda_outcome.h"
#include "device/driver_launch.h"
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

// Release builds: the wait returns Status::Timeout at the bound and the outcome goes to
// *status. Debug builds of the device headers (TMASHMEM_DEVICE_DEBUG) print and trap at the
// bound instead, which makes the stream's context unusable (a sticky CUDA error).
__global__ void signal_wait_timeout_kernel(const uint64_t* sig, Cmp cmp, uint64_t value,
                                           uint64_t timeout_ns, int32_t* status) {
  const Status outcome = signal_wait_until(sig, cmp, value, timeout_ns);
  detail::fence_sc_sys();
  *status = outcome == Status::Ok ? TMASHMEM_SUCCESS : TMASHMEM_ERROR_TIMEOUT;
  detail::fence_sc_sys();
}

// Each entry reports its own outcome only. The kernels launch through the driver
// (device/driver_launch.h: a driver launch's outcome is its own result). The library's CUDA
// runtime keeps one pending error per thread, which a failed runtime call leaves set and which
// the next cudaGetLastError would report; so the entries that call the runtime (enter_device,
// copy) clear it before they start, and read and clear their own afterwards. A sticky error
// (the context is unusable) cannot be cleared: it fails this entry's own work too, and is then
// its outcome.
void forget_earlier_errors() { (void)cudaGetLastError(); }

// `error` from a runtime call, with the thread's pending error cleared.
CudaOutcome finished(cudaError_t error) {
  const cudaError_t pending = cudaGetLastError();
  return cuda_outcome(error != cudaSuccess ? error : pending);
}

CudaOutcome enter_device(int ordinal, int* previous) {
  forget_earlier_errors();
  *previous = -1;
  int current = -1;
  cudaError_t error = cudaGetDevice(&current);
  if (error == cudaSuccess && current != ordinal) {
    error = cudaSetDevice(ordinal);
    if (error == cudaSuccess) *previous = current;
  }
  return finished(error);
}

void leave_device(int previous) {
  if (previous >= 0) cudaSetDevice(previous);
}

CudaOutcome barrier_all(const tmashmem_ctx_t& ctx, CUstream stream) {
  return launch_kernel<barrier_all_kernel>({1, kBarrierThreads, stream}, ctx);
}

CudaOutcome signal_op(uint64_t* remote, uint64_t value, int op, CUstream stream) {
  return launch_kernel<signal_op_kernel>({1, 1, stream}, remote, value, static_cast<SignalOp>(op));
}

CudaOutcome signal_wait(const uint64_t* local, int cmp, uint64_t value, CUstream stream) {
  return launch_kernel<signal_wait_kernel>({1, 1, stream}, local, static_cast<Cmp>(cmp), value);
}

CudaOutcome signal_wait_timeout(const uint64_t* local, int cmp, uint64_t value, uint64_t timeout_ns,
                                int32_t* status, CUstream stream) {
  return launch_kernel<signal_wait_timeout_kernel>({1, 1, stream}, local, static_cast<Cmp>(cmp),
                                                   value, timeout_ns, status);
}

CudaOutcome copy(void* dest, const void* src, size_t bytes, CUstream stream) {
  forget_earlier_errors();
  return finished(cudaMemcpyAsync(dest, src, bytes, cudaMemcpyDefault, stream));
}

const StreamKernels kKernels = {enter_device, leave_device,        barrier_all, signal_op,
                                signal_wait,  signal_wait_timeout, copy};

struct Registration {
  Registration() { register_stream_kernels(&kKernels); }
} g_registration;

}  // namespace
}  // namespace tmashmem
