// The small queries of the C API: who am I, errors, barrier, device context.
#include <cstring>
#include <mutex>

#include "runtime/agreement.h"
#include "runtime/driver.h"
#include "runtime/enum_name.h"
#include "runtime/error.h"
#include "runtime/reachable.h"
#include "runtime/runtime.h"

namespace tmashmem {

void fill_device_ctx(const Runtime& rt, tmashmem_ctx_t* ctx) {
  std::memset(ctx, 0, sizeof *ctx);
  ctx->version = TMASHMEM_CTX_VERSION;
  ctx->my_pe = rt.bootstrap->rank();
  ctx->n_pes = rt.bootstrap->size();
  ctx->first_local_pe = rt.first_local_pe;
  ctx->n_local_pes = rt.n_local_pes;
  ctx->reachable = reachable_mask(rt);
  ctx->heap_base = rt.heap.my_base();
  ctx->peer_stride = rt.heap.stride();
  ctx->heap_size = rt.heap.backed_bytes();
  ctx->signal_pad = reinterpret_cast<uint64_t>(rt.signal_pad);
  ctx->mc_base = rt.multicast.base();
  if (rt.one_gpu) ctx->flags |= TMASHMEM_CTX_FLAG_ONE_GPU;
}

tmashmem_status_t synchronize_context() {
  const CUresult r = driver().cuCtxSynchronize();
  return r == CUDA_SUCCESS ? TMASHMEM_SUCCESS
                           : cuda_error(r, "cuCtxSynchronize", __FILE__, __LINE__);
}

namespace {

// What a small query returns: `field` of the runtime read under its lock, or -1 before
// init.
template <typename Field>
int query_if_initialized(Field field) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  return rt.initialized ? field(rt) : -1;
}

}  // namespace

}  // namespace tmashmem

using namespace tmashmem;

uint64_t tmashmem::reachable_mask(const Runtime& rt) {
  uint64_t mask = 0;
  for (int s = 0; s < rt.n_local_pes && s < 64; ++s)
    if (rt.reachable[static_cast<size_t>(s)]) mask |= uint64_t(1) << s;
  return mask;
}

bool tmashmem::every_pe_reachable(const Runtime& rt) {
  if (rt.first_local_pe != 0 || rt.n_local_pes != rt.bootstrap->size()) return false;
  for (int s = 0; s < rt.n_local_pes; ++s)
    if (s != rt.my_slot && !rt.reachable[static_cast<size_t>(s)]) return false;
  return true;
}

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

int tmashmem_initialized(void) { return runtime().initialized ? 1 : 0; }

int tmashmem_my_pe(void) {
  return query_if_initialized([](const Runtime& rt) { return rt.bootstrap->rank(); });
}

int tmashmem_n_pes(void) {
  return query_if_initialized([](const Runtime& rt) { return rt.bootstrap->size(); });
}

int tmashmem_local_pe(void) {
  return query_if_initialized([](const Runtime& rt) { return rt.my_slot; });
}

int tmashmem_n_local_pes(void) {
  return query_if_initialized([](const Runtime& rt) { return rt.n_local_pes; });
}

int tmashmem_device(void) {
  return query_if_initialized([](const Runtime& rt) { return rt.device_ordinal; });
}

tmashmem_status_t tmashmem_barrier_all(void) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  TMASHMEM_TRY(require_initialized("tmashmem_barrier_all"));
  // Work this PE queued before the barrier is complete (and so visible to peers)
  // before any PE leaves it. Every PE reaches the agreement (itself a barrier) even
  // when its synchronisation failed, so the PEs stay in step.
  return agree(*rt.bootstrap, synchronize_context(), "tmashmem_barrier_all",
               "synchronizing its device");
}

void* tmashmem_signal_pad(void) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (check_initialized("tmashmem_signal_pad") != TMASHMEM_SUCCESS) return nullptr;
  return rt.signal_pad;
}

tmashmem_status_t tmashmem_device_ctx(tmashmem_ctx_t* ctx) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  TMASHMEM_TRY(require_initialized("tmashmem_device_ctx"));
  if (!ctx)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "tmashmem_device_ctx(NULL): pass a tmashmem_ctx_t to fill");
  fill_device_ctx(rt, ctx);
  return TMASHMEM_SUCCESS;
}

const char* tmashmem_error_string(tmashmem_status_t status) {
  static const char* const kNames[] = {"success",  // in tmashmem_status_t's order
                                       "invalid value",
                                       "not initialized",
                                       "already initialized",
                                       "no CUDA driver",
                                       "no CUDA device",
                                       "CUDA driver error",
                                       "out of memory",
                                       "collective arguments differ between PEs",
                                       "bootstrap error",
                                       "timeout",
                                       "not supported",
                                       "operating-system error",
                                       "internal error"};
  return tmashmem::enum_name(kNames, status, "unknown tmashmem status");
}

const char* tmashmem_last_error(void) { return last_error().c_str(); }

}  // extern "C"
#pragma GCC visibility pop
