// The deadline of the library's bounded waits, on the GPU's global timer (sreg.cuh).
#pragma once

#include <stdint.h>

#include "tmashmem/device/detail/sreg.cuh"

namespace tmashmem {
namespace detail {

// A deadline for a bounded wait: 0 means "no bound". The clock starts at the 64th
// call to expired() and is read only every 64th call after that, so a wait that
// ends within 64 calls (a call per poll, or per burst of polls) never reads the
// global timer (it costs more than a poll), and a wait reports expiry no earlier
// than timeout_ns after it began.
struct Deadline {
  uint64_t timeout_ns;
  uint64_t end_ns = 0;
  unsigned calls = 0;
  __device__ __forceinline__ explicit Deadline(uint64_t timeout) : timeout_ns(timeout) {}
  __device__ __forceinline__ bool expired() {
    if (timeout_ns == 0 || (++calls & 63u) != 0) return false;
    const uint64_t now = global_timer_ns();
    if (end_ns == 0) {
      end_ns = now + timeout_ns;
      return false;
    }
    return now >= end_ns;
  }
};

}  // namespace detail
}  // namespace tmashmem
