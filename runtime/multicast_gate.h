// The multicast gate (docs/design.md, decision 7): hardware multicast may be used only when the
// device supports it, the user has not turned it off, and no platform kill switch
// is set. This release never creates multicast objects; the gate is what
// tmashmem-info reports and what a later release will consult before
// cuMulticastCreate.
#pragma once

#include <string>

#include "runtime/config.h"

namespace tmashmem {

// True when multicast could be used; otherwise `why` says which condition says no.
bool multicast_allowed(const Config& config, bool device_supports_multicast, std::string* why);

}  // namespace tmashmem
