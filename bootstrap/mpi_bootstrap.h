// The MPI bootstrap: bytes exchanged over a duplicate of MPI_COMM_WORLD or of a
// user communicator. Every exchange is point-to-point with a deadline, so a PE
// that never arrives is named in the timeout error instead of hanging the job.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"

namespace tmashmem {

// `comm` points to an MPI_Comm (NULL = MPI_COMM_WORLD). Initialises MPI when nobody
// has yet (it is then finalised at exit). On failure *message says why.
tmashmem_status_t make_mpi_bootstrap(const void* comm, int timeout_ms,
                                     std::unique_ptr<Bootstrap>* out, std::string* message);

bool mpi_initialized();

}  // namespace tmashmem
