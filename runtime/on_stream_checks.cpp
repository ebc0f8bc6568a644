// The argument checks of the on-stream calls (runtime/on_stream_checks.h).
#include "runtime/on_stream_checks.h"

#include <string>

#include "runtime/error.h"

namespace tmashmem {

tmashmem_status_t device_has_mem_ops(Runtime& rt, const char* call, bool* out) {
  if (rt.device_mem_ops_64 < 0) {
    int answer = 0;
    const CUresult r = driver().cuDeviceGetAttribute(
        &answer, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, rt.device);
    if (r != CUDA_SUCCESS) {
      const std::string what = format_string(
          "%s: cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device %d)",
          call, rt.device_ordinal);
      return cuda_error(r, what.c_str(), __FILE__, __LINE__,
                        "set TMASHMEM_STREAM_MEM_OPS=0 to use the library's kernels without "
                        "asking");
    }
    rt.device_mem_ops_64 = answer != 0 ? 1 : 0;
  }
  *out = rt.device_mem_ops_64 == 1;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t ContextScope::enter(const Runtime& rt, const char* call) {
  TMASHMEM_TRY(check_initialized(call));  // before the driver table is known to be loaded
  CUcontext previous = nullptr;
  const bool known_previous = driver().cuCtxGetCurrent(&previous) == CUDA_SUCCESS;
  TMASHMEM_TRY(require_initialized(call));
  restore_ = known_previous && previous != rt.context;
  previous_ = previous;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t check_pe(const Runtime& rt, const char* call, int pe) {
  const int n = rt.bootstrap->size();
  if (pe < 0 || pe >= n)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: pe %d is out of range; pass a PE in [0, %d) (tmashmem_n_pes())", call, pe,
                     n);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t translate(const Runtime& rt, const char* call, const char* name,
                            const void* address, size_t bytes, int pe, void** out) {
  *out = nullptr;
  if (address == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s is NULL; pass a symmetric address (from tmashmem_malloc)", call, name);
  size_t offset = 0;
  const size_t backed = rt.heap.backed_bytes();
  if (!rt.heap.offset_of(address, &offset) || offset >= backed || bytes > backed - offset)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s [%p, +%zu bytes) is not inside this PE's symmetric heap (%zu bytes "
                     "from %p); pass an address range from tmashmem_malloc",
                     call, name, address, bytes, backed,
                     reinterpret_cast<void*>(rt.heap.my_base()));
  void* remote = pe >= 0 && pe < rt.bootstrap->size() ? rt.heap.translate(address, pe) : nullptr;
  if (remote == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: PE %d is not load/store reachable from PE %d (no peer mapping), so %s "
                     "cannot be reached there; use a PE on this node with peer access",
                     call, pe, rt.bootstrap->rank(), name);
  *out = remote;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t check_signal(const char* call, const uint64_t* sig) {
  if (sig == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: sig is NULL; pass a uint64_t from tmashmem_malloc/tmashmem_calloc", call);
  if ((reinterpret_cast<uintptr_t>(sig) & (sizeof(uint64_t) - 1)) != 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: sig %p is not 8-byte aligned; signals are naturally aligned uint64_t",
                     call, static_cast<const void*>(sig));
  return TMASHMEM_SUCCESS;
}

const char* const kLiveStreamFix =
    "pass a live stream (not destroyed) of the device tmashmem_init chose (tmashmem_device()), "
    "or 0 for the default stream";

tmashmem_status_t check_stream(const Runtime& rt, const char* call, CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
    return TMASHMEM_SUCCESS;
  CUcontext owner = nullptr;
  const CUresult r = driver().cuStreamGetCtx(stream, &owner);
  if (r != CUDA_SUCCESS)
    return cuda_error(
        r, format_string("%s: cuStreamGetCtx(stream %p)", call, static_cast<void*>(stream)).c_str(),
        __FILE__, __LINE__, kLiveStreamFix);
  if (owner != rt.context)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: stream %p belongs to CUDA context %p, not to the runtime's context %p "
                     "(device %d); pass a stream created on device %d (tmashmem_device())",
                     call, static_cast<void*>(stream), static_cast<void*>(owner),
                     static_cast<void*>(rt.context), rt.device_ordinal, rt.device_ordinal);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t check_wait(const Runtime& rt, const char* call, uint64_t* sig, int cmp,
                             void** local) {
  TMASHMEM_TRY(check_signal(call, sig));
  if (cmp < TMASHMEM_CMP_EQ || cmp > TMASHMEM_CMP_LE)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: cmp %d is not a comparison; pass one of TMASHMEM_CMP_EQ, _NE, _GT, "
                     "_GE, _LT, _LE (%d..%d)",
                     call, cmp, TMASHMEM_CMP_EQ, TMASHMEM_CMP_LE);
  return translate(rt, call, "sig", sig, sizeof(uint64_t), rt.bootstrap->rank(), local);
}

}  // namespace tmashmem
