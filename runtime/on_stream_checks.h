// The checks every on-stream call (runtime/on_stream.cpp) makes of its arguments, one
// rule each, so that a range, reachability or stream rule reads the same in every call.
// All expect runtime().mutex held; `call` names the public call in the error message.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "runtime/driver.h"
#include "runtime/non_copyable.h"
#include "runtime/runtime.h"

namespace tmashmem {

// Made by the signal calls, under the lock, after the initialisation check: makes the
// runtime's context current on this thread (driver calls act in the current context; the
// legacy default stream 0 is that context's) and, at scope exit, the thread's previous
// context again, so that a call leaves the caller's current context as it found it.
class ContextScope : NonCopyable {
 public:
  ContextScope() = default;
  ~ContextScope() {
    if (restore_) driver().cuCtxSetCurrent(previous_);
  }

  tmashmem_status_t enter(const Runtime& rt, const char* call);

 private:
  CUcontext previous_ = nullptr;
  bool restore_ = false;
};

// Whether `rt.device` runs cuStreamWriteValue64 / cuStreamWaitValue64
// (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS). Asked on first use after init and
// remembered until finalize; the caller holds rt.mutex, which guards the answer.
tmashmem_status_t device_has_mem_ops(Runtime& rt, const char* call, bool* out);

// `pe` in [0, n_pes).
tmashmem_status_t check_pe(const Runtime& rt, const char* call, int pe);

// The address of symmetric range [address, address + bytes) on `pe`, checked: inside the
// backed part of this PE's heap (by offsets, so no size wraps the address space), and `pe`
// load/store reachable. Every PE's heap is backed equally far (growth is collective), so
// the range is then backed on `pe` too. `name` is the argument's name in the message.
tmashmem_status_t translate(const Runtime& rt, const char* call, const char* name,
                            const void* address, size_t bytes, int pe, void** out);

// `sig` is not NULL and 8-byte aligned.
tmashmem_status_t check_signal(const char* call, const uint64_t* sig);

// `stream` checked as far as CUDA lets a check be cheap and safe: the special handles (0,
// CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) are the current context's and are accepted
// without a driver call; any other handle is asked for its context (cuStreamGetCtx, a host
// lookup), which must be the runtime's. CUDA leaves a destroyed or made-up handle
// undefined: the driver reports most as CUDA_ERROR_INVALID_HANDLE or
// CUDA_ERROR_CONTEXT_IS_DESTROYED, but may also crash in that lookup (tmashmem.h says so).
tmashmem_status_t check_stream(const Runtime& rt, const char* call, CUstream stream);

// The fix an error about a stream handle names (check_stream, the collectives' capture query).
extern const char* const kLiveStreamFix;

// The signal and comparison of a wait; *local gets this PE's (checked) address of `sig`.
tmashmem_status_t check_wait(const Runtime& rt, const char* call, uint64_t* sig, int cmp,
                             void** local);

}  // namespace tmashmem
