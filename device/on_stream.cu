// On-stream operations (tmashmem.h, "On-stream operations"): the library's small
// kernels and copy-engine transfers, enqueued on the caller's stream.
//
// Nothing here synchronises the host or allocates, so every call can be captured
// into a CUDA graph: the kernels take their arguments by value (the device context,
// already translated peer addresses), and the barrier's state lives in the signal
// pad, read at run time, so a replayed graph keeps counting barriers correctly.
//
// The library links its own static copy of the CUDA runtime (its symbols are kept
// private to libtmashmem); kernels run in the device's primary context, the one the
// runtime initialised, so streams of the application's runtime work here.
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/error.h"
#include "tmashmem/device/barrier.cuh"
#include "tmashmem/device/signal.cuh"
#include "tmashmem/tmashmem.h"

namespace tmashmem {
namespace {

// ---- kernels -------------------------------------------------------------------

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

// ---- host helpers --------------------------------------------------------------

tmashmem_status_t cuda_failure(const char* call, const char* what, cudaError_t error) {
  return set_error(TMASHMEM_ERROR_CUDA, "%s: %s failed: %s (%s)", call, what,
                   cudaGetErrorName(error), cudaGetErrorString(error));
}

// Makes the runtime's device current on this thread for the library's CUDA
// runtime while a call enqueues work, and restores the previous one afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(const char* call) : call_(call) {}
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }

  tmashmem_status_t enter() {
    const int wanted = tmashmem_device();
    int current = -1;
    cudaError_t error = cudaGetDevice(&current);
    if (error != cudaSuccess) return cuda_failure(call_, "cudaGetDevice", error);
    if (current == wanted) return TMASHMEM_SUCCESS;
    error = cudaSetDevice(wanted);
    if (error != cudaSuccess) return cuda_failure(call_, "cudaSetDevice", error);
    previous_ = current;
    switched_ = true;
    return TMASHMEM_SUCCESS;
  }

 private:
  const char* call_;
  int previous_ = -1;
  bool switched_ = false;
};

tmashmem_status_t check_initialized(const char* call) {
  if (!tmashmem_initialized())
    return set_error(TMASHMEM_ERROR_NOT_INITIALIZED, "%s: call tmashmem_init first", call);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t check_pe(const char* call, int pe) {
  const int n = tmashmem_n_pes();
  if (pe < 0 || pe >= n)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: pe %d is out of range; pass a PE in [0, %d) (tmashmem_n_pes())", call, pe,
                     n);
  return TMASHMEM_SUCCESS;
}

// The address of symmetric range [address, address + bytes) on `pe`, checked:
// inside this PE's heap, and `pe` load/store reachable.
tmashmem_status_t translate(const char* call, const char* name, const void* address, size_t bytes,
                            int pe, void** out) {
  *out = nullptr;
  if (address == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s is NULL; pass a symmetric address (from tmashmem_malloc)", call, name);
  void* first = tmashmem_ptr(address, pe);
  void* last = tmashmem_ptr(static_cast<const char*>(address) + (bytes - 1), pe);
  if (first == nullptr || last == nullptr ||
      static_cast<char*>(last) - static_cast<char*>(first) != static_cast<ptrdiff_t>(bytes - 1)) {
    if (tmashmem_ptr(address, tmashmem_my_pe()) == nullptr ||
        tmashmem_ptr(static_cast<const char*>(address) + (bytes - 1), tmashmem_my_pe()) == nullptr)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: %s [%p, +%zu bytes) is not inside this PE's symmetric heap; pass an "
                       "address range from tmashmem_malloc",
                       call, name, address, bytes);
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: PE %d is not load/store reachable from PE %d (no peer mapping), so %s "
                     "cannot be reached there; use a PE on this node with peer access",
                     call, pe, tmashmem_my_pe(), name);
  }
  *out = first;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t check_signal(const char* call, const uint64_t* sig) {
  if (sig == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: sig is NULL; pass a uint64_t from tmashmem_malloc/tmashmem_calloc", call);
  if ((reinterpret_cast<uintptr_t>(sig) & 7u) != 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: sig %p is not 8-byte aligned; signals are naturally aligned uint64_t",
                     call, static_cast<const void*>(sig));
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t launched(const char* call, const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return cuda_failure(call, kernel, error);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t copy_on_stream(const char* call, void* dest, const void* src, size_t bytes,
                                 cudaStream_t stream) {
  const cudaError_t error = cudaMemcpyAsync(dest, src, bytes, cudaMemcpyDefault, stream);
  if (error != cudaSuccess)
    return set_error(TMASHMEM_ERROR_CUDA,
                     "%s: cudaMemcpyAsync(%p <- %p, %zu bytes) failed: %s (%s)", call, dest, src,
                     bytes, cudaGetErrorName(error), cudaGetErrorString(error));
  return TMASHMEM_SUCCESS;
}

}  // namespace
}  // namespace tmashmem

using namespace tmashmem;

extern "C" {

tmashmem_status_t tmashmem_barrier_all_on_stream(tmashmem_stream_t stream) {
  const char* call = "tmashmem_barrier_all_on_stream";
  TMASHMEM_TRY(check_initialized(call));
  tmashmem_ctx_t ctx;
  TMASHMEM_TRY(tmashmem_device_ctx(&ctx));
  if (!all_reachable(ctx))
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                     "%s: the device barrier needs every PE load/store reachable from every other "
                     "(%d PEs, %d on this node); use tmashmem_barrier_all on the host instead",
                     call, ctx.n_pes, ctx.n_local_pes);
  DeviceScope device(call);
  TMASHMEM_TRY(device.enter());
  barrier_all_kernel<<<1, 32, 0, stream>>>(ctx);
  return launched(call, "launching the barrier kernel");
}

tmashmem_status_t tmashmem_putmem_on_stream(void* dest, const void* src, size_t bytes, int pe,
                                            tmashmem_stream_t stream) {
  const char* call = "tmashmem_putmem_on_stream";
  TMASHMEM_TRY(check_initialized(call));
  TMASHMEM_TRY(check_pe(call, pe));
  if (bytes == 0) return TMASHMEM_SUCCESS;
  if (src == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: src is NULL with bytes = %zu; pass the local data to copy", call, bytes);
  void* remote = nullptr;
  TMASHMEM_TRY(translate(call, "dest", dest, bytes, pe, &remote));
  DeviceScope device(call);
  TMASHMEM_TRY(device.enter());
  return copy_on_stream(call, remote, src, bytes, stream);
}

tmashmem_status_t tmashmem_getmem_on_stream(void* dest, const void* src, size_t bytes, int pe,
                                            tmashmem_stream_t stream) {
  const char* call = "tmashmem_getmem_on_stream";
  TMASHMEM_TRY(check_initialized(call));
  TMASHMEM_TRY(check_pe(call, pe));
  if (bytes == 0) return TMASHMEM_SUCCESS;
  if (dest == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: dest is NULL with bytes = %zu; pass local memory to copy into", call,
                     bytes);
  void* remote = nullptr;
  TMASHMEM_TRY(translate(call, "src", src, bytes, pe, &remote));
  DeviceScope device(call);
  TMASHMEM_TRY(device.enter());
  return copy_on_stream(call, dest, remote, bytes, stream);
}

tmashmem_status_t tmashmem_signal_op_on_stream(uint64_t* sig, uint64_t value, int op, int pe,
                                               tmashmem_stream_t stream) {
  const char* call = "tmashmem_signal_op_on_stream";
  TMASHMEM_TRY(check_initialized(call));
  TMASHMEM_TRY(check_pe(call, pe));
  TMASHMEM_TRY(check_signal(call, sig));
  if (op != TMASHMEM_SIGNAL_SET && op != TMASHMEM_SIGNAL_ADD)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: op %d is not a signal operation; pass TMASHMEM_SIGNAL_SET (%d) or "
                     "TMASHMEM_SIGNAL_ADD (%d)",
                     call, op, TMASHMEM_SIGNAL_SET, TMASHMEM_SIGNAL_ADD);
  void* remote = nullptr;
  TMASHMEM_TRY(translate(call, "sig", sig, sizeof(uint64_t), pe, &remote));
  DeviceScope device(call);
  TMASHMEM_TRY(device.enter());
  signal_op_kernel<<<1, 1, 0, stream>>>(static_cast<uint64_t*>(remote), value,
                                        static_cast<SignalOp>(op));
  return launched(call, "launching the signal kernel");
}

tmashmem_status_t tmashmem_signal_wait_until_on_stream(uint64_t* sig, int cmp, uint64_t value,
                                                       tmashmem_stream_t stream) {
  const char* call = "tmashmem_signal_wait_until_on_stream";
  TMASHMEM_TRY(check_initialized(call));
  TMASHMEM_TRY(check_signal(call, sig));
  if (cmp < TMASHMEM_CMP_EQ || cmp > TMASHMEM_CMP_LE)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: cmp %d is not a comparison; pass one of TMASHMEM_CMP_EQ, _NE, _GT, _GE, "
                     "_LT, _LE (%d..%d)",
                     call, cmp, TMASHMEM_CMP_EQ, TMASHMEM_CMP_LE);
  void* local = nullptr;
  TMASHMEM_TRY(translate(call, "sig", sig, sizeof(uint64_t), tmashmem_my_pe(), &local));
  DeviceScope device(call);
  TMASHMEM_TRY(device.enter());
  signal_wait_kernel<<<1, 1, 0, stream>>>(static_cast<const uint64_t*>(local),
                                          static_cast<Cmp>(cmp), value);
  return launched(call, "launching the signal-wait kernel");
}

}  // extern "C"
