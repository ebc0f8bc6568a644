// The multicast gate (docs/design.md, decision 7): the one place that decides whether
// hardware NVLink multicast may be used. Nothing calls a cuMulticast* entry point
// unless decide_multicast() said `use` (runtime/multicast.cpp checks it before each
// setup step).
//
// Conditions, each of which keeps multicast off (the first that applies is reported):
//   TMASHMEM_MULTICAST=off on some PE; NVSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0 or
//   TORCH_SYMM_MEM_DISABLE_MULTICAST=1 in some PE's environment; a driver without the
//   cuMulticast* entry points; a local GPU with CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
//   0; two PEs of a node on one GPU; a pair of a node's PEs without peer access; PEs
//   that disagree on TMASHMEM_MULTICAST.
// `auto` uses multicast when none applies; `on` makes any of them an init error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config.h"

namespace tmashmem {

// This PE's own conditions (environment, setting, driver, device); true when none stops
// multicast. `why` says which condition stopped it, or that it is available.
bool multicast_allowed(const Config& config, bool device_supports_multicast, std::string* why,
                       bool driver_has_multicast = true);

enum class MulticastMode : int32_t { Auto = 0, On = 1, Off = 2 };
MulticastMode multicast_mode(const Config& config);
const char* multicast_mode_name(MulticastMode mode);

// What one PE contributes to the decision; all-gathered over every PE of the job, so
// that every PE decides the same (multicast is used on every node or on none).
struct MulticastVote {
  int32_t mode;     // MulticastMode of this PE's TMASHMEM_MULTICAST
  int32_t allowed;  // multicast_allowed() for this PE
  int32_t node_ok;  // this PE's node: one GPU per PE, every pair peer-reachable
  int32_t reserved;
  char why[112];  // multicast_allowed()'s reason, or what is wrong with the node
};

struct MulticastDecision {
  bool use = false;       // create the multicast object
  bool required = false;  // TMASHMEM_MULTICAST=on (everywhere): failing to use it is an error
  std::string why;        // "used", or the condition that stopped it (names the PE)
};

// Fills this PE's vote. `node_problem` is empty when this PE's node is fine, else what
// is wrong with it ("PEs 0 and 1 share one GPU").
MulticastVote multicast_vote(const Config& config, bool device_supports_multicast,
                             bool driver_has_multicast, const std::string& node_problem);

// The job-wide decision from every PE's vote (indexed by PE).
MulticastDecision decide_multicast(const std::vector<MulticastVote>& votes);

}  // namespace tmashmem
