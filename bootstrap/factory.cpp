#include "bootstrap/bootstrap.h"
#include "runtime/config.h"
#include "runtime/error.h"

#ifdef TMASHMEM_WITH_MPI
#include "bootstrap/mpi_bootstrap.h"
#endif

namespace tmashmem {

bool bootstrap_has_mpi() {
#ifdef TMASHMEM_WITH_MPI
  return true;
#else
  return false;
#endif
}

tmashmem_status_t create_bootstrap(const Config& config, std::unique_ptr<Bootstrap>* out) {
  tmashmem_bootstrap_kind_t kind = config.bootstrap;
#ifdef TMASHMEM_WITH_MPI
  if (kind == TMASHMEM_BOOTSTRAP_AUTO)
    kind = (config.mpi_comm || mpi_launch_detected()) ? TMASHMEM_BOOTSTRAP_MPI
                                                      : TMASHMEM_BOOTSTRAP_SINGLE;
  if (kind == TMASHMEM_BOOTSTRAP_MPI)
    TMASHMEM_TRY(make_mpi_bootstrap(config.mpi_comm, config.bootstrap_timeout_ms, out));
#else
  if (kind == TMASHMEM_BOOTSTRAP_AUTO) kind = TMASHMEM_BOOTSTRAP_SINGLE;
  if (kind == TMASHMEM_BOOTSTRAP_MPI)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                     "TMASHMEM_BOOTSTRAP=mpi but this build has no MPI bootstrap: rebuild with "
                     "-DTMASHMEM_WITH_MPI=ON");
#endif
  if (kind == TMASHMEM_BOOTSTRAP_SINGLE) *out = make_single_bootstrap();
  return (*out)->discover_locality();
}

}  // namespace tmashmem
