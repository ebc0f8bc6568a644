// The one host fill of the reachability mask that tmashmem_ctx_t and every
// tmashmem_tensor_handle_t carry (tmashmem/ctx.h, field `reachable`).
#pragma once

#include <stdint.h>

#include "runtime/runtime.h"

namespace tmashmem {

// Bit s: local PE rt.first_local_pe + s is load/store reachable. The caller holds
// rt.mutex and the runtime is initialised.
uint64_t reachable_mask(const Runtime& rt);

// Every PE of the job load/store reachable from this one (one node, peer access
// everywhere): what the device barrier and the collectives need (all_reachable of
// tmashmem/device/ctx.cuh). Same caller contract.
bool every_pe_reachable(const Runtime& rt);

}  // namespace tmashmem
