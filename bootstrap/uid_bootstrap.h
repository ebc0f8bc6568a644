// The unique-id bootstrap: PEs started by any launcher (or none) find each other
// through a TCP root named by a tmashmem_uniqueid_t.
//
// Rank 0 is the root: it listens on the id's address and port; every other rank
// connects (retrying until the deadline, since the root may start last). The root
// sends each connection a fresh 128-bit challenge; the rank answers with its rank,
// the job size and SipHash-2-4(secret, challenge | rank | size), so the secret never
// crosses the network and a recorded answer is useless for another connection. A
// connection whose answer does not check (compared in constant time), or that claims
// a rank already taken, is closed and logged with its address; the job carries on.
// Once every rank is in, the root stops listening and proves to each rank that it
// knows the secret too.
//
// Collectives are relayed by the root: every rank sends its frame to the root, the
// root answers with the result. Frames carry a magic, a tag, the collective's
// sequence number, the sender and the length, all checked, so a reused (peer, tag)
// pair can never be mistaken for another call's data. Every blocking step waits in
// poll() for at most the bootstrap timeout; the root's own deadline comes first and
// it tells every rank which ranks did not arrive, so all PEs report the same ranks.
// No threads; every socket is closed when the bootstrap is destroyed (finalize) or
// its start fails.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"

namespace tmashmem {

// Starts it (the join above). On failure *message says why, naming the step, the
// address and the ranks that did not arrive.
tmashmem_status_t make_uid_bootstrap(const BootstrapOptions& options,
                                     std::unique_ptr<Bootstrap>* out, std::string* message);

}  // namespace tmashmem
