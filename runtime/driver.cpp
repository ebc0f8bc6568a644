#include "runtime/driver.h"

#include <dlfcn.h>

#include <mutex>

#include "runtime/error.h"

namespace tmashmem {
namespace {

DriverApi g_libcuda;
const DriverApi* g_installed = nullptr;
std::once_flag g_load_once;
tmashmem_status_t g_load_status = TMASHMEM_ERROR_NO_DRIVER;
std::string g_load_message;

// cuGetProcAddress as the driver exports it since CUDA 12.0.
using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
// And before (11.3 .. 12.x keep it exported too).
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

// A CUresult as CudaOutcome, named by `api` (libcuda leaves the strings NULL for codes it
// does not know).
CudaOutcome outcome_of(const DriverApi& api, CUresult result) {
  CudaOutcome o;
  o.code = static_cast<int>(result);
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  o.name = name ? name : "unknown CUresult";
  o.text = text ? text : "no description";
  o.out_of_memory = result == CUDA_ERROR_OUT_OF_MEMORY;
  return o;
}

// The one text of a failed CUDA call, driver or runtime API.
std::string describe_cuda_failure(const char* what, const CudaOutcome& outcome, const char* file,
                                  int line, const char* fix) {
  std::string text = format_string("%s failed: %s (%s)", what, outcome.name ? outcome.name : "?",
                                   outcome.text ? outcome.text : "no description");
  if (file) text += format_string(" at %s:%d", file, line);
  if (fix) text += format_string("; %s", fix);
  return text;
}

void load_libcuda() {
  // RTLD_NOLOAD first: reuse the copy the CUDA runtime may already have opened.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = dlerror();
    g_load_message = format_string(
        "no CUDA driver: dlopen(\"libcuda.so.1\") failed (%s). Install the NVIDIA driver, or add "
        "its folder to LD_LIBRARY_PATH",
        why ? why : "unknown reason");
    g_load_status = TMASHMEM_ERROR_NO_DRIVER;
    return;
  }
  auto v2 = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  auto v1 = reinterpret_cast<GetProcAddressV1>(dlsym(lib, "cuGetProcAddress"));
  if (!v2 && !v1) {
    g_load_message =
        "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress (need driver >= 525, "
        "CUDA 12.0)";
    g_load_status = TMASHMEM_ERROR_NO_DRIVER;
    return;
  }
  auto resolve_at = [&](const char* name, void** slot, int version) -> bool {
    CUresult r;
    if (v2) {
      CUdriverProcAddressQueryResult found;
      r = v2(name, slot, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
      if (r == CUDA_SUCCESS && found != CU_GET_PROC_ADDRESS_SUCCESS) r = CUDA_ERROR_NOT_FOUND;
    } else {
      r = v1(name, slot, version, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    return r == CUDA_SUCCESS && *slot != nullptr;
  };
  auto resolve = [&](const char* name, void** slot) {
    return resolve_at(name, slot, kDriverAbiVersion);
  };
#define TMASHMEM_RESOLVE(name, ...)                                                           \
  if (!resolve(#name, reinterpret_cast<void**>(&g_libcuda.name))) {                           \
    g_load_message = format_string(                                                           \
        "the CUDA driver lacks %s at ABI version %d: update the NVIDIA driver (need >= 525)", \
        #name, kDriverAbiVersion);                                                            \
    g_load_status = TMASHMEM_ERROR_NO_DRIVER;                                                 \
    return;                                                                                   \
  }
  TMASHMEM_DRIVER_FUNCTIONS(TMASHMEM_RESOLVE)
#undef TMASHMEM_RESOLVE
  // Optional: a driver without them still loads; the multicast gate reports the gap.
#define TMASHMEM_RESOLVE_OPTIONAL(name, ...)                                                    \
  if (!resolve_at(#name, reinterpret_cast<void**>(&g_libcuda.name), kDriverMulticastAbiVersion)) \
    g_libcuda.name = nullptr;
  TMASHMEM_DRIVER_MULTICAST_FUNCTIONS(TMASHMEM_RESOLVE_OPTIONAL)
#undef TMASHMEM_RESOLVE_OPTIONAL
  g_libcuda.origin = "libcuda.so.1";
  CUresult r = g_libcuda.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    g_load_message =
        "no CUDA device: the driver is loaded but reports no device (check "
        "CUDA_VISIBLE_DEVICES and nvidia-smi)";
    g_load_status = TMASHMEM_ERROR_NO_DEVICE;
    return;
  }
  if (r != CUDA_SUCCESS) {
    const CudaOutcome failed = outcome_of(g_libcuda, r);
    g_load_message = describe_cuda_failure("cuInit(0)", failed, nullptr, 0,
                                           "is the NVIDIA driver working (nvidia-smi)?");
    g_load_status = TMASHMEM_ERROR_NO_DRIVER;
    return;
  }
  g_load_status = TMASHMEM_SUCCESS;
}

}  // namespace

const DriverApi& driver() { return g_installed ? *g_installed : g_libcuda; }

tmashmem_status_t load_driver() {
  if (g_installed) {
    CUresult r = g_installed->cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE)
      return set_error(TMASHMEM_ERROR_NO_DEVICE,
                       "no CUDA device: cuInit(0) reports CUDA_ERROR_NO_DEVICE (%s); check "
                       "CUDA_VISIBLE_DEVICES and nvidia-smi",
                       g_installed->origin);
    if (r != CUDA_SUCCESS) return cuda_error(r, "cuInit(0)", __FILE__, __LINE__);
    return TMASHMEM_SUCCESS;
  }
  std::call_once(g_load_once, load_libcuda);
  if (g_load_status != TMASHMEM_SUCCESS)
    return set_error(g_load_status, "%s", g_load_message.c_str());
  return TMASHMEM_SUCCESS;
}

void install_driver(const DriverApi* api) { g_installed = api; }

CudaOutcome cuda_outcome(CUresult result) {
  return result == CUDA_SUCCESS ? CudaOutcome() : outcome_of(driver(), result);
}

tmashmem_status_t cuda_error(CUresult result, const char* what, const char* file, int line,
                             const char* fix) {
  return cuda_error(outcome_of(driver(), result), what, fix, file, line);
}

tmashmem_status_t cuda_error(const CudaOutcome& outcome, const char* what, const char* fix,
                             const char* file, int line) {
  return set_error(outcome.out_of_memory ? TMASHMEM_ERROR_OUT_OF_MEMORY : TMASHMEM_ERROR_CUDA, "%s",
                   describe_cuda_failure(what, outcome, file, line, fix).c_str());
}

}  // namespace tmashmem
