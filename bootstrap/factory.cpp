// Which bootstrap tmashmem_init starts, and starting it.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "bootstrap/bootstrap.h"
#include "bootstrap/uid_bootstrap.h"

#ifdef TMASHMEM_WITH_MPI
#include "bootstrap/mpi_bootstrap.h"
#endif
#ifdef TMASHMEM_WITH_NCCL
#include "bootstrap/nccl_bootstrap.h"
#endif

namespace tmashmem {
namespace {

// The first variable an MPI launcher (Open MPI, MPICH/Hydra, Slurm's PMI, PMIx) sets.
const char* mpi_launcher_variable() {
  static const char* const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK",
                                      "MPI_LOCALNRANKS"};
  for (const char* n : names)
    if (std::getenv(n)) return n;
  return nullptr;
}

tmashmem_status_t report(const BootstrapOptions& options, std::string* message,
                         tmashmem_status_t status, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
tmashmem_status_t report(const BootstrapOptions& options, std::string* message,
                         tmashmem_status_t status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  char text[1024];
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  if (message) *message = text;
  return options.report ? options.report(status, text) : status;
}

}  // namespace

bool bootstrap_has_mpi() {
#ifdef TMASHMEM_WITH_MPI
  return true;
#else
  return false;
#endif
}

bool bootstrap_has_nccl() {
#ifdef TMASHMEM_WITH_NCCL
  return true;
#else
  return false;
#endif
}

const char* bootstrap_kind_name(tmashmem_bootstrap_kind_t kind) {
  switch (kind) {  // no default: -Wswitch names a kind added without a name
    case TMASHMEM_BOOTSTRAP_AUTO:
      return "auto";
    case TMASHMEM_BOOTSTRAP_MPI:
      return "mpi";
    case TMASHMEM_BOOTSTRAP_SINGLE:
      return "single";
    case TMASHMEM_BOOTSTRAP_UID:
      return "uid";
    case TMASHMEM_BOOTSTRAP_NCCL:
      return "nccl";
  }
  return "unknown";
}

BootstrapDecision choose_bootstrap(const BootstrapOptions& options) {
  BootstrapDecision c;
  if (options.kind != TMASHMEM_BOOTSTRAP_AUTO) {
    c.kind = options.kind;
    c.reason = "forced (TMASHMEM_BOOTSTRAP or tmashmem_init_attr_t.bootstrap)";
    return c;
  }
  if (options.nccl_comm) {
    c.kind = TMASHMEM_BOOTSTRAP_NCCL;
    c.reason = "tmashmem_init_attr_t.nccl_comm is set";
    return c;
  }
  if (options.mpi_comm) {
    c.kind = TMASHMEM_BOOTSTRAP_MPI;
    c.reason = "tmashmem_init_attr_t.mpi_comm is set";
    return c;
  }
#ifdef TMASHMEM_WITH_MPI
  if (mpi_initialized()) {
    c.kind = TMASHMEM_BOOTSTRAP_MPI;
    c.reason = "MPI is initialised";
    return c;
  }
#endif
  const char* launcher = mpi_launcher_variable();
  if (launcher && bootstrap_has_mpi()) {
    c.kind = TMASHMEM_BOOTSTRAP_MPI;
    c.reason = std::string("launched by an MPI launcher (") + launcher + " is set)";
    return c;
  }
  if (options.have_uid) {
    c.kind = TMASHMEM_BOOTSTRAP_UID;
    c.reason = "a unique id is given (" + options.uid_source + ")";
    return c;
  }
  c.kind = TMASHMEM_BOOTSTRAP_SINGLE;
  c.reason = launcher ? std::string("launched by an MPI launcher (") + launcher +
                            " is set) but this build has no MPI bootstrap"
                      : "no MPI launcher, unique id or NCCL communicator";
  return c;
}

tmashmem_status_t create_bootstrap(const BootstrapOptions& options, std::unique_ptr<Bootstrap>* out,
                                   std::string* message) {
  out->reset();
  BootstrapDecision choice = choose_bootstrap(options);
  if (options.debug >= 1)
    std::fprintf(stderr, "[tmashmem] bootstrap: %s (%s)\n", bootstrap_kind_name(choice.kind),
                 choice.reason.c_str());
  std::unique_ptr<Bootstrap> made;
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  std::string why;
  switch (choice.kind) {
    case TMASHMEM_BOOTSTRAP_SINGLE:
    case TMASHMEM_BOOTSTRAP_AUTO:
      made = make_single_bootstrap();
      break;
    case TMASHMEM_BOOTSTRAP_MPI:
#ifdef TMASHMEM_WITH_MPI
      st = make_mpi_bootstrap(options.mpi_comm, options.timeout_ms, &made, &why);
#else
      return report(options, message, TMASHMEM_ERROR_NOT_SUPPORTED,
                    "TMASHMEM_BOOTSTRAP=mpi but this build has no MPI bootstrap: rebuild with "
                    "-DTMASHMEM_WITH_MPI=ON");
#endif
      break;
    case TMASHMEM_BOOTSTRAP_UID:
      if (!options.have_uid)
        return report(options, message, TMASHMEM_ERROR_INVALID_VALUE,
                      "the unique-id bootstrap needs an id: set TMASHMEM_BOOTSTRAP_UID (text of "
                      "tmashmem_uniqueid_to_string) or tmashmem_init_attr_t.uniqueid");
      st = make_uid_bootstrap(options, &made, &why);
      break;
    case TMASHMEM_BOOTSTRAP_NCCL:
#ifdef TMASHMEM_WITH_NCCL
      st = make_nccl_bootstrap(options, &made, &why);
#else
      return report(options, message, TMASHMEM_ERROR_NOT_SUPPORTED,
                    "the NCCL bootstrap was asked for but this build found no nccl.h: install "
                    "NCCL (or point CMake at it with -DTMASHMEM_NCCL_HOME) and rebuild");
#endif
      break;
  }
  if (st != TMASHMEM_SUCCESS) return report(options, message, st, "%s", why.c_str());
  made->set_reporter(options.report);
  st = made->discover_locality();
  if (st != TMASHMEM_SUCCESS) {
    if (message) *message = made->last_message();
    return st;
  }
  *out = std::move(made);
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
