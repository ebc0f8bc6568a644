#include "bootstrap/nccl_api.h"

#include <dlfcn.h>

#include <mutex>

namespace tmashmem {
namespace {

void* open_first(const char* const* names, std::string* tried) {
  for (const char* const* n = names; *n; ++n) {
    void* lib = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
    const char* e = dlerror();
    *tried += std::string(tried->empty() ? "" : "; ") + (e ? e : *n);
  }
  return nullptr;
}

template <typename T>
bool resolve(void* lib, const char* name, T* out, std::string* why) {
  *out = reinterpret_cast<T>(dlsym(lib, name));
  if (!*out) *why = std::string("missing entry point ") + name;
  return *out != nullptr;
}

}  // namespace

const NcclApi* nccl_api(std::string* why) {
  static std::once_flag once;
  static NcclApi api;
  static bool ok = false;
  static std::string failure;
  std::call_once(once, [] {
    static const char* const nccl_names[] = {"libnccl.so.2", "libnccl.so", nullptr};
    static const char* const cudart_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                               nullptr};
    std::string tried;
    void* nccl = open_first(nccl_names, &tried);
    if (!nccl) {
      failure = "the NCCL bootstrap could not load libnccl.so.2 (" + tried +
                "): install NCCL or add its lib directory to LD_LIBRARY_PATH";
      return;
    }
    tried.clear();
    void* cudart = open_first(cudart_names, &tried);
    if (!cudart) {
      failure = "the NCCL bootstrap could not load the CUDA runtime (" + tried +
                "): add the CUDA toolkit's lib directory to LD_LIBRARY_PATH";
      return;
    }
    std::string w;
    ok = resolve(nccl, "ncclGetVersion", &api.GetVersion, &w) &&
         resolve(nccl, "ncclGetErrorString", &api.GetErrorString, &w) &&
         resolve(nccl, "ncclCommCount", &api.CommCount, &w) &&
         resolve(nccl, "ncclCommUserRank", &api.CommUserRank, &w) &&
         resolve(nccl, "ncclCommCuDevice", &api.CommCuDevice, &w) &&
         resolve(nccl, "ncclCommGetAsyncError", &api.CommGetAsyncError, &w) &&
         resolve(nccl, "ncclAllGather", &api.AllGather, &w) &&
         resolve(nccl, "ncclBroadcast", &api.Broadcast, &w) &&
         resolve(nccl, "ncclAllReduce", &api.AllReduce, &w) &&
         resolve(cudart, "cudaGetDevice", &api.GetDevice, &w) &&
         resolve(cudart, "cudaSetDevice", &api.SetDevice, &w) &&
         resolve(cudart, "cudaMalloc", &api.Malloc, &w) &&
         resolve(cudart, "cudaFree", &api.Free, &w) &&
         resolve(cudart, "cudaStreamCreateWithFlags", &api.StreamCreateWithFlags, &w) &&
         resolve(cudart, "cudaStreamDestroy", &api.StreamDestroy, &w) &&
         resolve(cudart, "cudaStreamQuery", &api.StreamQuery, &w) &&
         resolve(cudart, "cudaMemcpyAsync", &api.MemcpyAsync, &w) &&
         resolve(cudart, "cudaMemcpy", &api.Memcpy, &w) &&
         resolve(cudart, "cudaGetErrorString", &api.GetErrorStringCuda, &w);
    if (!ok) failure = "the NCCL bootstrap: " + w + " in libnccl or libcudart";
  });
  if (!ok) *why = failure;
  return ok ? &api : nullptr;
}

}  // namespace tmashmem
