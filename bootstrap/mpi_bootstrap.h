// The MPI bootstrap: bytes exchanged over a duplicate of MPI_COMM_WORLD or of a
// user communicator. Every exchange is point-to-point with a deadline, so a PE
// that never arrives is named in the timeout error instead of hanging the job.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"

namespace tmashmem {

// `comm` points to an MPI_Comm (NULL = MPI_COMM_WORLD). Initialises MPI when the
// process was launched by mpirun and nobody has yet (it is then finalised at exit).
tmashmem_status_t make_mpi_bootstrap(const void* comm, int timeout_ms,
                                     std::unique_ptr<Bootstrap>* out);

// True when MPI is initialised, or the environment says an MPI launcher started
// this process with more than one rank.
bool mpi_launch_detected();

}  // namespace tmashmem
