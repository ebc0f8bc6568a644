// Agreement on the outcome of one step of a collective operation.
#pragma once

#include "tmashmem/tmashmem.h"

namespace tmashmem {

class Bootstrap;

// COLLECTIVE: every PE passes its own status for `step` of `operation`; every PE
// returns success only if all succeeded. A PE that failed keeps its own message; the
// others get "<operation> failed on PE <p> while <step>: <PE p's message>" with the
// first failing PE's status. This is what turns one PE's failure into the same error
// everywhere instead of a hang.
tmashmem_status_t agree(Bootstrap& bootstrap, tmashmem_status_t mine, const char* operation,
                        const char* step);

}  // namespace tmashmem
