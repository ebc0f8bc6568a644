// The bootstrap: how PEs find each other and exchange bytes before (and beside)
// the GPU. The runtime sees only this interface; MPI (and later NCCL) headers
// stay inside bootstrap/.
//
// Contract: every call is collective over all PEs, made in the same order on every
// PE, and bounded by the configured timeout. A PE that does not arrive turns into
// TMASHMEM_ERROR_TIMEOUT on the others, with a message naming the missing PEs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tmashmem/tmashmem.h"

namespace tmashmem {

struct Config;

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  virtual const char* name() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // PEs that share this node (same host and boot), in rank order.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int first_local_rank() const { return first_local_rank_; }
  // True when this node's PEs are first_local_rank .. first_local_rank+local_size-1.
  bool local_ranks_contiguous() const { return local_contiguous_; }

  // out receives size() blocks of `bytes`, block r from PE r.
  virtual tmashmem_status_t allgather(const void* mine, void* out, size_t bytes) = 0;
  // data on `root` is copied to every PE.
  virtual tmashmem_status_t broadcast(void* data, size_t bytes, int root) = 0;
  virtual tmashmem_status_t barrier() = 0;

  // Fills the local_* fields by all-gathering a node identity (host name + boot id).
  tmashmem_status_t discover_locality();

 protected:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int first_local_rank_ = 0;
  bool local_contiguous_ = true;
};

// Picks and starts the bootstrap the configuration names (auto: MPI when MPI is
// initialised or the process was launched by mpirun, else single).
tmashmem_status_t create_bootstrap(const Config& config, std::unique_ptr<Bootstrap>* out);

// The single-process bootstrap (rank 0 of 1).
std::unique_ptr<Bootstrap> make_single_bootstrap();

// Whether the build has the MPI bootstrap.
bool bootstrap_has_mpi();

}  // namespace tmashmem
