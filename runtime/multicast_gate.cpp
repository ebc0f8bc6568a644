#include "runtime/multicast_gate.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tmashmem {
namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

}  // namespace

MulticastMode multicast_mode(const Config& config) {
  if (config.multicast == "off") return MulticastMode::Off;
  if (config.multicast == "on") return MulticastMode::On;
  return MulticastMode::Auto;
}

const char* multicast_mode_name(MulticastMode mode) {
  switch (mode) {
    case MulticastMode::On:
      return "on";
    case MulticastMode::Off:
      return "off";
    case MulticastMode::Auto:
      break;
  }
  return "auto";
}

bool multicast_allowed(const Config& config, bool device_supports_multicast, std::string* why,
                       bool driver_has_multicast) {
  if (multicast_mode(config) == MulticastMode::Off) {
    *why = "off: TMASHMEM_MULTICAST=off";
    return false;
  }
  // Platform kill switches: any of them set means multicast stays off, whatever else says.
  if (env_is("NVSHMEM_DISABLE_NVLS", "1")) {
    *why = "off: NVSHMEM_DISABLE_NVLS=1";
    return false;
  }
  if (env_is("NCCL_NVLS_ENABLE", "0")) {
    *why = "off: NCCL_NVLS_ENABLE=0";
    return false;
  }
  if (env_is("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")) {
    *why = "off: TORCH_SYMM_MEM_DISABLE_MULTICAST=1";
    return false;
  }
  if (!driver_has_multicast) {
    *why = "off: the CUDA driver has no cuMulticast* entry points (needs a CUDA 12.1 driver)";
    return false;
  }
  if (!device_supports_multicast) {
    *why = "off: the device reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 0";
    return false;
  }
  *why = "available: used when every PE of the job allows it (TMASHMEM_MULTICAST=auto or on)";
  return true;
}

MulticastVote multicast_vote(const Config& config, bool device_supports_multicast,
                             bool driver_has_multicast, const std::string& node_problem) {
  MulticastVote vote;
  std::memset(&vote, 0, sizeof vote);
  vote.mode = static_cast<int32_t>(multicast_mode(config));
  std::string why;
  vote.allowed = multicast_allowed(config, device_supports_multicast, &why, driver_has_multicast);
  vote.node_ok = node_problem.empty();
  if (vote.allowed && !vote.node_ok) why = "off: " + node_problem;
  std::snprintf(vote.why, sizeof vote.why, "%s", why.c_str());
  return vote;
}

MulticastDecision decide_multicast(const std::vector<MulticastVote>& votes) {
  MulticastDecision d;
  if (votes.empty()) {
    d.why = "off: no PEs";
    return d;
  }
  const auto mode0 = static_cast<MulticastMode>(votes[0].mode);
  d.required = mode0 == MulticastMode::On;
  for (size_t pe = 0; pe < votes.size(); ++pe) {
    const auto mode = static_cast<MulticastMode>(votes[pe].mode);
    if (mode != mode0) {
      d.required = d.required || mode == MulticastMode::On;
      char text[200];
      std::snprintf(text, sizeof text,
                    "off: the PEs disagree: TMASHMEM_MULTICAST=%s on PE 0 but %s on PE %zu",
                    multicast_mode_name(mode0), multicast_mode_name(mode), pe);
      d.why = text;
      return d;
    }
  }
  for (size_t pe = 0; pe < votes.size(); ++pe) {
    if (votes[pe].allowed && votes[pe].node_ok) continue;
    // The vote's text starts with "off: "; say whose condition it is.
    std::string why(votes[pe].why, strnlen(votes[pe].why, sizeof votes[pe].why));
    if (why.compare(0, 5, "off: ") == 0) why = why.substr(5);
    d.why = "off on PE " + std::to_string(pe) + ": " + why;
    return d;
  }
  d.use = true;
  d.why = "used";
  return d;
}

}  // namespace tmashmem
