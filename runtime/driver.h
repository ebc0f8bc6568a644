// The CUDA driver, loaded at run time into one table of function pointers.
//
// The library never links libcuda: load_driver() dlopens libcuda.so.1 and resolves
// every entry point through cuGetProcAddress at a fixed ABI version, so a machine
// without a driver gets TMASHMEM_ERROR_NO_DRIVER instead of a loader failure.
// Tests install a CPU emulation of the same table with install_driver().
#pragma once

#include <cuda.h>

#include "tmashmem/tmashmem.h"

namespace tmashmem {

// X(name, signature...): every driver entry point the runtime uses; X must be a
// variadic macro `X(name, ...)` because signatures contain commas. The ABI version
// each is resolved at is kDriverAbiVersion (CUDA 12.0 signatures).
#define TMASHMEM_DRIVER_FUNCTIONS(X)                                                             \
  X(cuInit, CUresult (*)(unsigned int))                                                          \
  X(cuDriverGetVersion, CUresult (*)(int*))                                                      \
  X(cuGetErrorName, CUresult (*)(CUresult, const char**))                                        \
  X(cuGetErrorString, CUresult (*)(CUresult, const char**))                                      \
  X(cuDeviceGetCount, CUresult (*)(int*))                                                        \
  X(cuDeviceGet, CUresult (*)(CUdevice*, int))                                                   \
  X(cuDeviceGetName, CUresult (*)(char*, int, CUdevice))                                         \
  X(cuDeviceGetUuid, CUresult (*)(CUuuid*, CUdevice))                                            \
  X(cuDeviceGetAttribute, CUresult (*)(int*, CUdevice_attribute, CUdevice))                      \
  X(cuDeviceTotalMem, CUresult (*)(size_t*, CUdevice))                                           \
  X(cuDeviceCanAccessPeer, CUresult (*)(int*, CUdevice, CUdevice))                               \
  X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext*, CUdevice))                                \
  X(cuDevicePrimaryCtxRelease, CUresult (*)(CUdevice))                                           \
  X(cuCtxGetCurrent, CUresult (*)(CUcontext*))                                                   \
  X(cuCtxSetCurrent, CUresult (*)(CUcontext))                                                    \
  X(cuCtxGetDevice, CUresult (*)(CUdevice*))                                                     \
  X(cuCtxSynchronize, CUresult (*)(void))                                                        \
  X(cuMemGetInfo, CUresult (*)(size_t*, size_t*))                                                \
  X(cuMemAlloc, CUresult (*)(CUdeviceptr*, size_t))                                              \
  X(cuMemFree, CUresult (*)(CUdeviceptr))                                                        \
  X(cuMemcpyHtoD, CUresult (*)(CUdeviceptr, const void*, size_t))                                \
  X(cuMemcpyDtoH, CUresult (*)(void*, CUdeviceptr, size_t))                                      \
  X(cuMemsetD8, CUresult (*)(CUdeviceptr, unsigned char, size_t))                                \
  X(cuMemGetAllocationGranularity,                                                               \
    CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags))         \
  X(cuMemCreate, CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, \
                              unsigned long long))                                               \
  X(cuMemRelease, CUresult (*)(CUmemGenericAllocationHandle))                                    \
  X(cuMemExportToShareableHandle, CUresult (*)(void*, CUmemGenericAllocationHandle,              \
                                               CUmemAllocationHandleType, unsigned long long))   \
  X(cuMemImportFromShareableHandle,                                                              \
    CUresult (*)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType))               \
  X(cuMemAddressReserve,                                                                         \
    CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long))                 \
  X(cuMemAddressFree, CUresult (*)(CUdeviceptr, size_t))                                         \
  X(cuMemMap,                                                                                    \
    CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)) \
  X(cuMemUnmap, CUresult (*)(CUdeviceptr, size_t))                                               \
  X(cuMemSetAccess, CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t))           \
  X(cuStreamGetCtx, CUresult (*)(CUstream, CUcontext*))                                         \
  X(cuStreamIsCapturing, CUresult (*)(CUstream, CUstreamCaptureStatus*))                         \
  X(cuLaunchKernelEx, CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**))           \
  X(cuStreamWriteValue64, CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int))         \
  X(cuStreamWaitValue64, CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int))          \
  X(cuTensorMapEncodeTiled,                                                                      \
    CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,        \
                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, \
                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill))

// The multicast entry points (CUDA 12.1), resolved at kDriverMulticastAbiVersion when the
// driver has them and left null otherwise (a missing one is a reason the multicast gate
// gives, not a load failure). Only runtime/multicast.cpp calls them, and only after the
// gate allowed multicast (docs/design.md, decision 7).
#define TMASHMEM_DRIVER_MULTICAST_FUNCTIONS(X)                                                  \
  X(cuMulticastGetGranularity,                                                                 \
    CUresult (*)(size_t*, const CUmulticastObjectProp*, CUmulticastGranularity_flags))         \
  X(cuMulticastCreate, CUresult (*)(CUmemGenericAllocationHandle*, const CUmulticastObjectProp*)) \
  X(cuMulticastAddDevice, CUresult (*)(CUmemGenericAllocationHandle, CUdevice))                \
  X(cuMulticastBindMem, CUresult (*)(CUmemGenericAllocationHandle, size_t,                     \
                                     CUmemGenericAllocationHandle, size_t, size_t,             \
                                     unsigned long long))                                      \
  X(cuMulticastUnbind, CUresult (*)(CUmemGenericAllocationHandle, CUdevice, size_t, size_t))

constexpr int kDriverMulticastAbiVersion = 12010;

// Note: cuda.h renames some entry points to versioned symbols (cuMemAlloc ->
// cuMemAlloc_v2, ...). The macro argument is expanded in the member name but not in
// the string given to cuGetProcAddress, which wants the base name; so the members
// carry the _v2 names and lookups use the base names, which is what the driver expects.
//
// The driver answers a base name with the newest version of that entry point whose
// CUDA version is <= kDriverAbiVersion. For the stream memory operations that is the
// _v2 ABI: cuStreamWriteValue64 / cuStreamWaitValue64 exist as version 9000 (v1, which
// needed the NVreg_EnableStreamMemOPs module parameter and is reported by
// CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1) and version 11070 (_v2, always
// available where CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS is 1); cudaTypedefs.h
// names them PFN_cuStreamWaitValue64_v9000 and _v11070. At 12000 the lookup therefore
// gives _v2, the same symbol cuda.h binds (`#define cuStreamWaitValue64
// cuStreamWaitValue64_v2`) and the member name carries. Both versions have the same C
// signature, so only the version number decides which one the table holds. Every driver
// load_driver accepts (CUDA 12.0 or later) has _v2; whether the device can run it is
// CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, which the on-stream calls check.
constexpr int kDriverAbiVersion = 12000;

template <typename T>
using DriverFn = T;  // lets a parenthesised function-pointer type precede a member name

struct DriverApi {
#define TMASHMEM_DRIVER_MEMBER(name, ...) DriverFn<__VA_ARGS__> name = nullptr;
  TMASHMEM_DRIVER_FUNCTIONS(TMASHMEM_DRIVER_MEMBER)
  TMASHMEM_DRIVER_MULTICAST_FUNCTIONS(TMASHMEM_DRIVER_MEMBER)
#undef TMASHMEM_DRIVER_MEMBER
  const char* origin = "";  // "libcuda.so.1" or the name of an installed emulation

  // The first multicast entry point the table lacks, or nullptr when it has them all.
  const char* missing_multicast_entry() const {
#define TMASHMEM_DRIVER_MISSING(name, ...) \
  if (!name) return #name;
    TMASHMEM_DRIVER_MULTICAST_FUNCTIONS(TMASHMEM_DRIVER_MISSING)
#undef TMASHMEM_DRIVER_MISSING
    return nullptr;
  }
};

// The table in use. Valid after a successful load_driver() (or install_driver()).
const DriverApi& driver();

// Loads libcuda.so.1 once (thread-safe) unless a table was installed. Calls cuInit.
tmashmem_status_t load_driver();

// Replace the table (tests: the CPU emulation). Pass nullptr to go back to libcuda.
// Not thread-safe; call before tmashmem_init.
void install_driver(const DriverApi* api);

// The outcome of a CUDA runtime API call (device/on_stream.cu): code 0 is success; name
// and text describe any other (cudaGetErrorName, cudaGetErrorString).
struct CudaOutcome {
  int code = 0;
  const char* name = "";
  const char* text = "";
  bool out_of_memory = false;
};

// The outcome of a driver call made through driver(): code 0 on success (nothing looked up),
// else the driver's name and text for `result` (the conversion cuda_error uses).
CudaOutcome cuda_outcome(CUresult result);

// The one formatter of failed CUDA calls, driver or runtime API, as the thread's error:
// "<what> failed: <name> (<text>)[ at <file>:<line>][; <fix>]". The status is
// TMASHMEM_ERROR_OUT_OF_MEMORY for an out-of-memory result, else TMASHMEM_ERROR_CUDA.
tmashmem_status_t cuda_error(CUresult result, const char* what, const char* file, int line,
                             const char* fix = nullptr);
tmashmem_status_t cuda_error(const CudaOutcome& outcome, const char* what,
                             const char* fix = nullptr, const char* file = nullptr, int line = 0);

}  // namespace tmashmem

// Calls a driver entry point through the table; on failure records the error and
// returns TMASHMEM_ERROR_CUDA (or OUT_OF_MEMORY) from the enclosing function.
#define TMASHMEM_CU(call)                                                            \
  do {                                                                               \
    CUresult tmashmem_cu_result_ = ::tmashmem::driver().call;                        \
    if (tmashmem_cu_result_ != CUDA_SUCCESS)                                         \
      return ::tmashmem::cuda_error(tmashmem_cu_result_, #call, __FILE__, __LINE__); \
  } while (0)
