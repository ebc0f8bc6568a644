// On-stream operations (tmashmem.h, "On-stream operations"): the library's small
// kernels, CUDA stream memory operations and copy-engine transfers, enqueued on the
// caller's stream.
//
// Nothing here synchronises the host or allocates, so every call can be captured
// into a CUDA graph: the kernels take their arguments by value (the device context,
// already translated peer addresses), the stream memory operations carry their
// address and value in the captured node, and the barrier's state lives in the signal
// pad, read at run time, so a replayed graph keeps counting barriers correctly.
//
// The library links its own static copy of the CUDA runtime (its symbols are kept
// private to libtmashmem); kernels run in the device's primary context, the one the
// runtime initialised, so streams of the application's runtime work here. Stream
// memory operations go through the runtime's driver table (runtime/driver.h) in the
// runtime's context, made current for the duration of the call (SignalScope).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/runtime.h"
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

// ---- stream memory operations ----------------------------------------------------

constexpr const char* kMemOpsFix =
    "pass a stream of the device tmashmem_init chose (tmashmem_device()), or set "
    "TMASHMEM_STREAM_MEM_OPS=0 to use the library's kernels instead";

// Whether `rt.device` runs cuStreamWriteValue64 / cuStreamWaitValue64
// (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS). Asked once per device and
// remembered for the process; the caller holds rt.mutex, which guards the cache.
tmashmem_status_t device_has_mem_ops(const Runtime& rt, const char* call, bool* out) {
  static bool known = false;
  static CUdevice known_device = 0;
  static bool known_answer = false;
  if (!known || known_device != rt.device) {
    int answer = 0;
    const CUresult r = driver().cuDeviceGetAttribute(
        &answer, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, rt.device);
    if (r != CUDA_SUCCESS) {
      const std::string what = format_string(
          "%s: cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device %d)",
          call, rt.device_ordinal);
      const tmashmem_status_t status = cuda_error(r, what.c_str(), __FILE__, __LINE__);
      return restore_error(status, last_error() +
                                       "; set TMASHMEM_STREAM_MEM_OPS=0 to use the library's "
                                       "kernels without asking");
    }
    known = true;
    known_device = rt.device;
    known_answer = answer != 0;
  }
  *out = known_answer;
  return TMASHMEM_SUCCESS;
}

// A failed cuStreamWriteValue64 / cuStreamWaitValue64 `what` (the call with its
// arguments) as the thread's error, with what to change.
tmashmem_status_t mem_op_failure(CUresult result, const std::string& what) {
  const tmashmem_status_t status = cuda_error(result, what.c_str(), __FILE__, __LINE__);
  return restore_error(status, last_error() + "; " + kMemOpsFix);
}

// Entry of the signal calls. enter() checks initialisation with require_initialized,
// which also makes the runtime's context current on this thread (driver calls act in
// the current context: the legacy default stream 0 is that context's), and decides
// whether this call may use stream memory operations (TMASHMEM_STREAM_MEM_OPS on and
// the device able to). The destructor makes the thread's previous context current
// again, so that, as with DeviceScope, a call leaves the caller's current device as
// it found it.
class SignalScope {
 public:
  explicit SignalScope(const char* call) : call_(call) {}
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
  ~SignalScope() {
    if (restore_) driver().cuCtxSetCurrent(previous_);
  }

  tmashmem_status_t enter() {
    Runtime& rt = runtime();
    std::lock_guard<std::mutex> lock(rt.mutex);
    CUcontext previous = nullptr;
    const bool known_previous =
        rt.initialized && driver().cuCtxGetCurrent(&previous) == CUDA_SUCCESS;
    TMASHMEM_TRY(require_initialized(call_));
    restore_ = known_previous && previous != rt.context;
    previous_ = previous;
    if (rt.config.stream_mem_ops) TMASHMEM_TRY(device_has_mem_ops(rt, call_, &mem_ops_));
    return TMASHMEM_SUCCESS;
  }

  // True when this call enqueues stream memory operations where they apply.
  bool mem_ops() const { return mem_ops_; }

 private:
  const char* call_;
  CUcontext previous_ = nullptr;
  bool restore_ = false;
  bool mem_ops_ = false;
};

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
  SignalScope scope(call);
  TMASHMEM_TRY(scope.enter());
  TMASHMEM_TRY(check_pe(call, pe));
  TMASHMEM_TRY(check_signal(call, sig));
  if (op != TMASHMEM_SIGNAL_SET && op != TMASHMEM_SIGNAL_ADD)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: op %d is not a signal operation; pass TMASHMEM_SIGNAL_SET (%d) or "
                     "TMASHMEM_SIGNAL_ADD (%d)",
                     call, op, TMASHMEM_SIGNAL_SET, TMASHMEM_SIGNAL_ADD);
  void* remote = nullptr;
  TMASHMEM_TRY(translate(call, "sig", sig, sizeof(uint64_t), pe, &remote));
  if (op == TMASHMEM_SIGNAL_SET && scope.mem_ops()) {
    // Release: the write runs once the stream's earlier work is complete, and with
    // CU_STREAM_WRITE_VALUE_DEFAULT it is preceded by a system-wide memory fence scoped
    // to the stream (like __threadfence_system()), so that work's writes, local or
    // through peer mappings, are visible everywhere before the new value is. The
    // write is one 64-bit store, never torn. ADD stays a kernel: CUDA has no atomic
    // read-modify-write stream memory operation.
    const CUresult r = driver().cuStreamWriteValue64(stream, reinterpret_cast<CUdeviceptr>(remote),
                                                     value, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS)
      return mem_op_failure(
          r, format_string("%s: cuStreamWriteValue64(stream %p, address %p (PE %d's copy of sig "
                           "%p), value %llu, CU_STREAM_WRITE_VALUE_DEFAULT)",
                           call, static_cast<void*>(stream), remote, pe, static_cast<void*>(sig),
                           static_cast<unsigned long long>(value)));
    return TMASHMEM_SUCCESS;
  }
  DeviceScope device(call);
  TMASHMEM_TRY(device.enter());
  signal_op_kernel<<<1, 1, 0, stream>>>(static_cast<uint64_t*>(remote), value,
                                        static_cast<SignalOp>(op));
  return launched(call, "launching the signal kernel");
}

tmashmem_status_t tmashmem_signal_wait_until_on_stream(uint64_t* sig, int cmp, uint64_t value,
                                                       tmashmem_stream_t stream) {
  const char* call = "tmashmem_signal_wait_until_on_stream";
  SignalScope scope(call);
  TMASHMEM_TRY(scope.enter());
  TMASHMEM_TRY(check_signal(call, sig));
  if (cmp < TMASHMEM_CMP_EQ || cmp > TMASHMEM_CMP_LE)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: cmp %d is not a comparison; pass one of TMASHMEM_CMP_EQ, _NE, _GT, _GE, "
                     "_LT, _LE (%d..%d)",
                     call, cmp, TMASHMEM_CMP_EQ, TMASHMEM_CMP_LE);
  void* local = nullptr;
  TMASHMEM_TRY(translate(call, "sig", sig, sizeof(uint64_t), tmashmem_my_pe(), &local));

  // The comparisons cuStreamWaitValue64 can express. Its GEQ is cyclic,
  // (int64_t)(*sig - operand) >= 0, which is the unsigned *sig >= operand whenever the
  // two are less than 2^63 apart (tmashmem.h states the contract). GT v is GEQ v + 1,
  // except for v = UINT64_MAX (never true unsigned). GE 0 is always true unsigned but
  // not cyclic (a signal >= 2^63 fails it), so it takes the kernel, which returns at
  // once. NE, LT and LE have no stream-memory-op form.
  bool use_mem_op = false;
  unsigned int flags = 0;
  uint64_t operand = value;
  if (scope.mem_ops()) {
    if (cmp == TMASHMEM_CMP_EQ) {
      use_mem_op = true;
      flags = CU_STREAM_WAIT_VALUE_EQ;
    } else if (cmp == TMASHMEM_CMP_GE && value != 0) {
      use_mem_op = true;
      flags = CU_STREAM_WAIT_VALUE_GEQ;
    } else if (cmp == TMASHMEM_CMP_GT && value != UINT64_MAX) {
      use_mem_op = true;
      flags = CU_STREAM_WAIT_VALUE_GEQ;
      operand = value + 1;
    }
  }
  if (use_mem_op) {
    // Acquire: the wait completes only after the value is in this GPU's memory, and
    // the signalling PE made its earlier writes visible system-wide before it wrote
    // the value (a fenced stream write or a releasing atomic), so they are in memory
    // too. The stream's later work starts after the wait: kernels begin with a fresh
    // L1 and copies read memory, so both see those writes. No CU_STREAM_WAIT_VALUE_FLUSH:
    // that flag orders remote writes that arrive unfenced (GPUDirect RDMA from a NIC);
    // tmashmem signals come only from GPUs of load/store-reachable PEs, which fence.
    const CUresult r =
        driver().cuStreamWaitValue64(stream, reinterpret_cast<CUdeviceptr>(local), operand, flags);
    if (r != CUDA_SUCCESS)
      return mem_op_failure(
          r, format_string("%s: cuStreamWaitValue64(stream %p, address %p (sig), value %llu, %s)",
                           call, static_cast<void*>(stream), local,
                           static_cast<unsigned long long>(operand),
                           flags == CU_STREAM_WAIT_VALUE_EQ ? "CU_STREAM_WAIT_VALUE_EQ"
                                                            : "CU_STREAM_WAIT_VALUE_GEQ"));
    return TMASHMEM_SUCCESS;
  }
  DeviceScope device(call);
  TMASHMEM_TRY(device.enter());
  signal_wait_kernel<<<1, 1, 0, stream>>>(static_cast<const uint64_t*>(local),
                                          static_cast<Cmp>(cmp), value);
  return launched(call, "launching the signal-wait kernel");
}

}  // extern "C"
