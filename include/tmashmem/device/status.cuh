// Result of the device calls that can fail without a programming error: bounded
// waits that expire, and barriers over PEs that cannot be reached.
#pragma once

namespace tmashmem {

enum class Status : int {
  /// The call did what it says.
  Ok = 0,
  /// A bounded wait (signal_wait_until, barrier_all, sync_all with timeout_ns > 0)
  /// expired before its condition held. State touched by the call is as it was seen.
  Timeout = 1,
  /// A PE the call needs is not load/store reachable from this PE (see is_reachable).
  Unreachable = 2,
};

/// Short name of a status ("ok", "timeout", "unreachable"), for messages.
__host__ __device__ __forceinline__ const char* status_name(Status status) {
  constexpr const char* kNames[] = {"ok", "timeout", "unreachable"};  // in Status's order
  const unsigned i = static_cast<unsigned>(status);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "unknown";
}

}  // namespace tmashmem
