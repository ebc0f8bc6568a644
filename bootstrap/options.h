// What a bootstrap is started with: plain values, filled by the runtime from its
// settings and tmashmem_init_attr_t. Nothing here reads the environment's TMASHMEM_*
// settings; the bootstraps see only this struct.
#pragma once

#include <string>

#include "tmashmem/tmashmem.h"

namespace tmashmem {

// Receives every bootstrap failure: the status and a message without rank prefix.
// Returns the status to propagate (the runtime records the message as its error).
using BootstrapReporter = tmashmem_status_t (*)(tmashmem_status_t status, const char* message);

// Where the unique-id root listens (tmashmem_get_uniqueid): an interface name, an
// address family and an explicit address, each optional.
struct UidAddressOptions {
  std::string ifname;           // e.g. "eth0"; "" = choose (see uid_address.h)
  std::string family = "auto";  // "AF_INET", "AF_INET6" or "auto"
  std::string address;          // an explicit address of this host; "" = from the interface
  int debug = 0;                // >= 1: log the choice to stderr
};

struct BootstrapOptions {
  tmashmem_bootstrap_kind_t kind = TMASHMEM_BOOTSTRAP_AUTO;
  int timeout_ms = 120000;  // bound on every blocking step
  int debug = 0;            // >= 1: log decisions to stderr
  BootstrapReporter report = nullptr;

  const void* mpi_comm = nullptr;  // pointer to an MPI_Comm; NULL = MPI_COMM_WORLD
  void* nccl_comm = nullptr;       // an ncclComm_t (the user's; never destroyed here)

  // Unique-id bootstrap: the id (from tmashmem_get_uniqueid), this PE's rank and the size.
  bool have_uid = false;
  tmashmem_uniqueid_t uid{};
  int uid_rank = -1;
  int uid_size = 0;
  // Where the setting came from ("TMASHMEM_BOOTSTRAP_UID", "tmashmem_init_attr_t"), for
  // messages and the choice's reason.
  std::string uid_source;
};

}  // namespace tmashmem
