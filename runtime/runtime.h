// The runtime's process-wide state and the internal entry points the C API (and
// tensors, on-stream ops) are built from.
//
// Locking: every public call that touches the state takes runtime().mutex; the
// helpers below expect it held. Collective helpers must be called by every PE in
// the same order.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "runtime/allocator.h"
#include "runtime/config.h"
#include "runtime/fd_channel.h"
#include "runtime/heap.h"
#include "runtime/multicast.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

// PEs of one node: reachability travels as one 64-bit mask (tmashmem_ctx_t.reachable,
// the tensor map table), one bit per local PE.
constexpr int kMaxLocalPes = 64;
// The alignment of every symmetric block unless a larger one is asked (tmashmem.h).
constexpr size_t kHeapAlignment = 256;

struct Runtime {
  std::mutex mutex;
  bool initialized = false;
  Config config;
  std::unique_ptr<Bootstrap> bootstrap;
  BootstrapDecision bootstrap_choice;  // what started it and why (tmashmem_bootstrap_choice)

  CUdevice device = 0;
  int device_ordinal = -1;
  CUcontext context = nullptr;
  bool retained_primary = false;  // we retained (and must release) the primary context
  bool set_current = false;       // we made it current (and must unset it)

  uint64_t job_id = 0;
  CUmemAllocationHandleType handle_type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  FdChannel channel;
  HeapMulticast multicast;  // before heap: the heap's destructor may still reach it
  SymmetricHeap heap;
  OffsetAllocator allocator;
  void* signal_pad = nullptr;
  // The on-stream collectives' staging region (runtime/collectives.cpp), allocated on the
  // heap by the first staged call (nullptr: not yet).
  void* coll_staging = nullptr;
  // Their low-latency state, allocated zeroed at init where the job may use it (nullptr:
  // the LL form is off).
  void* coll_low_latency = nullptr;

  int first_local_pe = 0;
  int n_local_pes = 1;
  int my_slot = 0;
  std::vector<bool> reachable;  // by local slot
  bool one_gpu = false;         // every PE of the job uses this PE's GPU
  // What the collectives' CTA choices count, the same on every PE so that their defaults
  // agree: the most PEs of the job that share one GPU, and the fewest SMs of any PE's GPU.
  int most_pes_per_gpu = 1;
  int fewest_sms = 1;
  // The on-stream collectives run their symmetry check on every call, not only on the first
  // of an argument set: TMASHMEM_DEBUG >= 1 on any PE (agreed at init, the same everywhere).
  bool coll_check_every_call = false;
  // CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS of `device`, asked by the first
  // on-stream signal call (-1: not asked yet).
  int device_mem_ops_64 = -1;
};

Runtime& runtime();

// TMASHMEM_ERROR_NOT_INITIALIZED with a message naming `call` unless initialised: the
// one such message of every call.
tmashmem_status_t check_initialized(const char* call);
// check_initialized, then makes the runtime's context current on this thread (calls may
// come from any host thread; the driver calls that follow act in the current context).
tmashmem_status_t require_initialized(const char* call);

// The POD kernels take by value (tmashmem_device_ctx), from the initialised runtime.
void fill_device_ctx(const Runtime& rt, tmashmem_ctx_t* ctx);

// The bootstrap's options from the settings and the attr (NULL: the settings alone);
// a malformed unique id or rank/size setting is TMASHMEM_ERROR_INVALID_VALUE.
tmashmem_status_t bootstrap_options(const Config& config, const tmashmem_init_attr_t* attr,
                                    BootstrapOptions* out);

// Waits for all work of the runtime's (current) context; a failure is a CUDA error status.
tmashmem_status_t synchronize_context();

// COLLECTIVE. All-gathers `call` and all of its named arguments; a different call, a
// different number of arguments or any differing argument is TMASHMEM_ERROR_SYMMETRY on
// every PE, naming the argument, the PEs and the values, and ending with `fix` (default:
// "every PE must pass the same value").
using NamedArg = std::pair<std::string, uint64_t>;
// "" when every PE's value equals PE 0's; else "8192 on PE 1, 16 on PE 3 and 2 more
// PEs" for the messages of symmetry errors. `values` is indexed by PE.
std::string describe_differences(const std::vector<uint64_t>& values);
std::string describe_differences(const std::vector<std::string>& values);
tmashmem_status_t check_symmetric(const char* call, const std::vector<NamedArg>& args,
                                  const char* fix = nullptr);

// COLLECTIVE, the first step of init: the Scope::Job settings of runtime/settings.h are
// all-gathered; a value that differs between PEs is TMASHMEM_ERROR_SYMMETRY on every PE,
// naming the setting, the PEs and the values (docs/design.md, decision 5).
tmashmem_status_t check_settings_agree(Bootstrap& bootstrap, const Config& config);

// COLLECTIVE. The allocation path behind malloc/calloc/align and symmetric tensors:
// checks symmetry, places the block, grows the heap on every PE if needed, zeroes
// it when asked (then barriers, so no PE writes into a block still being zeroed).
// `size` 0 gives *out = nullptr and success. The symmetry check compares `call_args` (the
// call's own arguments, as the caller passed them; empty: {"size", size}), then alignment.
tmashmem_status_t symmetric_alloc(const char* call, size_t size, size_t alignment, bool zero,
                                  const std::vector<NamedArg>& call_args, void** out);
// COLLECTIVE. Frees a block from symmetric_alloc.
tmashmem_status_t symmetric_free(const char* call, void* ptr);

// COLLECTIVE, at init after the signal pad (runtime/collectives.cpp): the on-stream
// collectives' low-latency state, zeroed, where the job may use it.
tmashmem_status_t coll_low_latency_init(Runtime& rt);

// Frees the device map tables of tensors still alive at finalize (their handles
// stay valid host objects: a later tmashmem_tensor_destroy frees the rest).
void release_tensor_tables();

// Local slot of `pe` (or -1 when it is on another node).
int local_slot(int pe);

}  // namespace tmashmem
