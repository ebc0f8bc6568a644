// NCCL loaded at run time (dlopen), for the multi-GPU baseline of the fused benchmark:
// a binary built here then runs on machines without libnccl, and NCCL is asked for only
// when the PEs are on distinct GPUs (NCCL refuses two ranks on one GPU).
#pragma once

#include <dlfcn.h>

#include <cstddef>

namespace nccl_dyn {

using Comm = void*;
struct UniqueId {
  char internal[128];
};
// ncclDataType_t / ncclRedOp_t values of nccl.h.
constexpr int kBfloat16 = 9;
constexpr int kFloat32 = 7;
constexpr int kSum = 0;

struct Api {
  int (*get_unique_id)(UniqueId*) = nullptr;
  int (*comm_init_rank)(Comm*, int, UniqueId, int) = nullptr;
  int (*comm_destroy)(Comm) = nullptr;
  int (*all_gather)(const void*, void*, size_t, int, Comm, void*) = nullptr;
  int (*reduce_scatter)(const void*, void*, size_t, int, int, Comm, void*) = nullptr;
  bool ok = false;
};

inline Api load() {
  Api a;
  void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return a;
  a.get_unique_id = reinterpret_cast<decltype(a.get_unique_id)>(dlsym(h, "ncclGetUniqueId"));
  a.comm_init_rank = reinterpret_cast<decltype(a.comm_init_rank)>(dlsym(h, "ncclCommInitRank"));
  a.comm_destroy = reinterpret_cast<decltype(a.comm_destroy)>(dlsym(h, "ncclCommDestroy"));
  a.all_gather = reinterpret_cast<decltype(a.all_gather)>(dlsym(h, "ncclAllGather"));
  a.reduce_scatter = reinterpret_cast<decltype(a.reduce_scatter)>(dlsym(h, "ncclReduceScatter"));
  a.ok = a.get_unique_id && a.comm_init_rank && a.comm_destroy && a.all_gather && a.reduce_scatter;
  return a;
}

}  // namespace nccl_dyn
