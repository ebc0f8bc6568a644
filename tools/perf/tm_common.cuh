// Host helpers of tmashmem-perf: checked tmashmem calls, symmetric buffers, 2-D tile
// views, shared-memory limits. Included by the test files (tm_*.cuh) of the one
// translation unit tmashmem_perf.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "tmashmem/tensor.h"
#include "tmashmem/tmashmem.h"
#include "tools/perf/perf_common.h"
#include "tools/perf/perf_cuda.cuh"

namespace perf_tm {

using namespace perf;

constexpr size_t kGuard = 4096;                  // poisoned bytes after every destination
constexpr size_t kMsgRegion = size_t(64) << 20;  // message-rate destinations wrap within this
constexpr uint32_t kTileRowBytes = 1024;         // tile tensors: rows of 256 u32

inline void tm_check(tmashmem_status_t st, const char* what) {
  if (st != TMASHMEM_SUCCESS)
    die(std::string(what) + ": " + tmashmem_error_string(st) + ": " + tmashmem_last_error());
}

inline char* sym_alloc(size_t bytes) {
  void* p = tmashmem_malloc(bytes);
  if (!p) die("tmashmem_malloc(" + std::to_string(bytes) + "): " + tmashmem_last_error());
  return static_cast<char*>(p);
}

inline tmashmem_ctx_t device_ctx() {
  tmashmem_ctx_t ctx;
  tm_check(tmashmem_device_ctx(&ctx), "tmashmem_device_ctx");
  return ctx;
}

template <class T>
T* peer_ptr(T* p, int pe) {
  void* q = tmashmem_ptr(p, pe);
  if (!q) die("tmashmem_ptr: PE " + std::to_string(pe) + " is not load/store reachable");
  return static_cast<T*>(q);
}

// A 2-D u32 view of `bytes` at `p` (symmetric), rows of `inner` bytes, tiles of
// `box_rows` rows. COLLECTIVE.
struct TileView {
  tmashmem_tensor_t tensor = nullptr;
  tmashmem_tensor_handle_t handle{};
};

inline TileView make_view(void* p, size_t bytes, uint32_t inner, uint32_t box_rows) {
  tmashmem_tensor_desc_t d;
  const uint64_t dims[2] = {inner / 4, bytes / inner};
  const uint32_t box[2] = {inner / 4, box_rows};
  tm_check(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U32, 2, dims, box),
           "tmashmem_tensor_desc_init");
  d.l2_promotion = TMASHMEM_L2_PROMOTION_256B;
  TileView v;
  tm_check(tmashmem_tensor_view(p, &d, &v.tensor), "tmashmem_tensor_view");
  tm_check(tmashmem_tensor_handle(v.tensor, &v.handle), "tmashmem_tensor_handle");
  return v;
}

inline void set_smem(const void* kernel, size_t bytes, const char* name) {
  int dev = 0, optin = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (bytes > static_cast<size_t>(optin))
    die(std::string(name) + " needs " + std::to_string(bytes) +
        " bytes of shared memory per CTA; the device allows " + std::to_string(optin) +
        " (lower --stage, --nbi-threads, --tile-stages or --tile-rows)");
  PERF_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(bytes)));
}

}  // namespace perf_tm
