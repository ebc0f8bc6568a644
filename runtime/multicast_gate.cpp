#include "runtime/multicast_gate.h"

#include <cstdlib>
#include <cstring>

namespace tmashmem {
namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

}  // namespace

bool multicast_allowed(const Config& config, bool device_supports_multicast, std::string* why) {
  if (config.multicast == "off") {
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
  if (!device_supports_multicast) {
    *why = "off: the device reports no multicast support";
    return false;
  }
  *why = "available (not used by this release)";
  return true;
}

}  // namespace tmashmem
