// The bootstrap: how PEs find each other and exchange bytes before (and beside)
// the GPU. The runtime sees only this interface; MPI and NCCL headers stay inside
// bootstrap/, and nothing here depends on runtime/ (docs/design.md, decision 9).
//
// Contract: every call is collective over all PEs, made in the same order on every
// PE, and bounded by the configured timeout. A PE that does not arrive turns into
// TMASHMEM_ERROR_TIMEOUT on the others, with a message naming exactly the missing PEs.
//
// Errors: a failing call returns a status and keeps a message (without a rank prefix)
// in last_message(); when the options carry a reporter, the status and message are
// also handed to it, which is how the runtime turns them into its own error.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "bootstrap/options.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

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

  const std::string& last_message() const { return message_; }
  void set_reporter(BootstrapReporter report) { report_ = report; }

 protected:
  // Records the message and hands it to the reporter; returns `status`.
  tmashmem_status_t fail(tmashmem_status_t status, const char* format, ...)
      __attribute__((format(printf, 3, 4)));

  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int first_local_rank_ = 0;
  bool local_contiguous_ = true;

 private:
  std::string message_;
  BootstrapReporter report_ = nullptr;
};

// Which bootstrap tmashmem_init starts with these options, and why (for the debug
// log and tmashmem-info). Pure: reads only the options and the launcher's environment.
struct BootstrapDecision {
  tmashmem_bootstrap_kind_t kind = TMASHMEM_BOOTSTRAP_SINGLE;
  std::string reason;
};
BootstrapDecision choose_bootstrap(const BootstrapOptions& options);
const char* bootstrap_kind_name(tmashmem_bootstrap_kind_t kind);

// Starts the bootstrap choose_bootstrap names. On failure *out stays empty and the
// message goes to options.report (and into *message when not NULL).
tmashmem_status_t create_bootstrap(const BootstrapOptions& options, std::unique_ptr<Bootstrap>* out,
                                   std::string* message = nullptr);

// The single-process bootstrap (rank 0 of 1).
std::unique_ptr<Bootstrap> make_single_bootstrap();

// Whether the build has the MPI / NCCL bootstraps.
bool bootstrap_has_mpi();
bool bootstrap_has_nccl();

}  // namespace tmashmem
