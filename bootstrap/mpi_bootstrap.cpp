#include "bootstrap/mpi_bootstrap.h"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tmashmem {
namespace {

using Clock = std::chrono::steady_clock;

#define TRY(expr)                                            \
  do {                                                       \
    tmashmem_status_t try_status_ = (expr);                  \
    if (try_status_ != TMASHMEM_SUCCESS) return try_status_; \
  } while (0)

// Tag of the arrival check on the user's communicator, before it is duplicated. The
// check's receives name their sources, so only a message from a PE of this
// communicator with this tag can match (documented in README.md, the MPI bootstrap).
constexpr int kArrivalTag = 32766;

// Comma-separated PEs whose request is still pending.
std::string pending_list(const std::vector<MPI_Request>& requests) {
  std::string list;
  for (size_t r = 0; r < requests.size(); ++r)
    if (requests[r] != MPI_REQUEST_NULL) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return list;
}

// Tests each request on its own: MPI_Testall completes none of them unless all are
// done, which would leave finished PEs looking missing in a timeout message.
int test_each(std::vector<MPI_Request>& requests, bool* all_done) {
  *all_done = true;
  for (auto& req : requests) {
    if (req == MPI_REQUEST_NULL) continue;
    int done = 0;
    int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    if (!done) *all_done = false;
  }
  return MPI_SUCCESS;
}

// A cancelled receive is completed before its buffer goes away, so a message that
// matched meanwhile cannot land in freed memory. Sends are only released (a send
// to a dead PE may never complete); they are small and already buffered by MPI.
void abandon(std::vector<MPI_Request>& recvs, std::vector<MPI_Request>& sends) {
  for (auto& req : recvs)
    if (req != MPI_REQUEST_NULL) {
      MPI_Cancel(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
  for (auto& req : sends)
    if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
}

void finalize_mpi_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(MPI_Comm comm, int timeout_ms) : comm_(comm), timeout_ms_(timeout_ms) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiBootstrap() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  const char* name() const override { return "mpi"; }

  tmashmem_status_t allgather(const void* mine, void* out, size_t bytes) override {
    TRY(usable());
    int tag = next_tag();
    if (bytes)
      std::memmove(static_cast<char*>(out) + bytes * static_cast<size_t>(rank_), mine, bytes);
    if (size_ == 1 || bytes == 0) return bytes == 0 ? barrier() : TMASHMEM_SUCCESS;
    std::vector<MPI_Request> recvs(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    std::vector<MPI_Request> sends(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      TRY(check(MPI_Irecv(static_cast<char*>(out) + bytes * static_cast<size_t>(r),
                          static_cast<int>(bytes), MPI_BYTE, r, tag, comm_,
                          &recvs[static_cast<size_t>(r)]),
                "MPI_Irecv"));
      TRY(check(MPI_Isend(mine, static_cast<int>(bytes), MPI_BYTE, r, tag, comm_,
                          &sends[static_cast<size_t>(r)]),
                "MPI_Isend"));
    }
    return wait_all(recvs, sends, "allgather");
  }

  tmashmem_status_t broadcast(void* data, size_t bytes, int root) override {
    TRY(usable());
    if (root < 0 || root >= size_)
      return fail(TMASHMEM_ERROR_INVALID_VALUE, "broadcast root %d out of range [0, %d)", root,
                  size_);
    int tag = next_tag();
    std::vector<MPI_Request> recvs(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    std::vector<MPI_Request> sends(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    if (rank_ == root) {
      for (int r = 0; r < size_; ++r)
        if (r != root)
          TRY(check(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, r, tag, comm_,
                              &sends[static_cast<size_t>(r)]),
                    "MPI_Isend"));
    } else {
      TRY(check(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, root, tag, comm_,
                          &recvs[static_cast<size_t>(root)]),
                "MPI_Irecv"));
    }
    return wait_all(recvs, sends, "broadcast");
  }

  tmashmem_status_t barrier() override {
    char token = 1;
    std::vector<char> all(static_cast<size_t>(size_));
    return allgather(&token, all.data(), 1);
  }

 private:
  // After a timeout the PEs are out of step (late messages may still arrive), and
  // after MPI_Finalize no MPI call is allowed: both make every later call an error.
  tmashmem_status_t usable() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return fail(TMASHMEM_ERROR_BOOTSTRAP,
                  "MPI is already finalized: call tmashmem_finalize before MPI_Finalize");
    if (failed_)
      return fail(TMASHMEM_ERROR_BOOTSTRAP,
                  "the MPI bootstrap is unusable after an earlier timeout; the PEs are out of "
                  "step (restart the job)");
    return TMASHMEM_SUCCESS;
  }

  int next_tag() { return static_cast<int>(sequence_++ % 32767u); }

  tmashmem_status_t check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return TMASHMEM_SUCCESS;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return fail(TMASHMEM_ERROR_BOOTSTRAP, "%s failed in the MPI bootstrap: %s", call, text);
  }

  // Polls until every request completes or the deadline passes; on timeout names
  // exactly the PEs whose messages never arrived.
  tmashmem_status_t wait_all(std::vector<MPI_Request>& recvs, std::vector<MPI_Request>& sends,
                             const char* what) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    int spins = 0;
    for (;;) {
      bool recv_done = false, send_done = false;
      TRY(check(test_each(recvs, &recv_done), "MPI_Test"));
      TRY(check(test_each(sends, &send_done), "MPI_Test"));
      if (recv_done && send_done) return TMASHMEM_SUCCESS;
      if (Clock::now() > deadline) break;
      if (++spins > 1000) usleep(50);
    }
    std::string missing = pending_list(recvs);
    abandon(recvs, sends);
    failed_ = true;
    return fail(TMASHMEM_ERROR_TIMEOUT,
                "bootstrap %s timed out after %d ms waiting for PE(s) %s; a PE died or "
                "did not make the same collective call (raise "
                "TMASHMEM_BOOTSTRAP_TIMEOUT_MS if it is only slow)",
                what, timeout_ms_, missing.empty() ? "(sends pending)" : missing.c_str());
  }

  MPI_Comm comm_;
  int timeout_ms_;
  unsigned sequence_ = 0;
  bool failed_ = false;
};

}  // namespace

bool mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized != 0;
}

namespace {

// Every PE tells every other one that it arrived, on `base` with kArrivalTag; the
// PEs whose word does not come before the deadline are the ones named.
bool arrival_check(MPI_Comm base, int timeout_ms, std::string* missing) {
  int rank = 0, size = 1;
  MPI_Comm_rank(base, &rank);
  MPI_Comm_size(base, &size);
  std::vector<int> words(static_cast<size_t>(size), 0);
  int mine = 1;
  std::vector<MPI_Request> recvs(static_cast<size_t>(size), MPI_REQUEST_NULL);
  std::vector<MPI_Request> sends(static_cast<size_t>(size), MPI_REQUEST_NULL);
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    MPI_Irecv(&words[static_cast<size_t>(r)], 1, MPI_INT, r, kArrivalTag, base,
              &recvs[static_cast<size_t>(r)]);
    MPI_Isend(&mine, 1, MPI_INT, r, kArrivalTag, base, &sends[static_cast<size_t>(r)]);
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int spins = 0;; ++spins) {
    bool recv_done = false, send_done = false;
    test_each(recvs, &recv_done);
    test_each(sends, &send_done);
    if (recv_done && send_done) return true;
    if (Clock::now() > deadline) break;
    if (spins > 1000) usleep(50);
  }
  *missing = pending_list(recvs);
  abandon(recvs, sends);
  return missing->empty();
}

}  // namespace

tmashmem_status_t make_mpi_bootstrap(const void* comm, int timeout_ms,
                                     std::unique_ptr<Bootstrap>* out, std::string* message) {
  auto failure = [&](tmashmem_status_t st, const std::string& text) {
    *message = text;
    return st;
  };
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return failure(TMASHMEM_ERROR_BOOTSTRAP,
                   "MPI was already finalised: call tmashmem_finalize before MPI_Finalize");
  if (!initialized) {
    if (comm)
      return failure(
          TMASHMEM_ERROR_INVALID_VALUE,
          "an MPI communicator was given but MPI is not initialised: call MPI_Init first");
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      return failure(TMASHMEM_ERROR_BOOTSTRAP, "MPI_Init_thread failed in the MPI bootstrap");
    std::atexit(finalize_mpi_at_exit);
  }
  MPI_Comm base = comm ? *static_cast<const MPI_Comm*>(comm) : MPI_COMM_WORLD;
  if (base == MPI_COMM_NULL)
    return failure(TMASHMEM_ERROR_INVALID_VALUE, "the MPI communicator given is MPI_COMM_NULL");
  // A PE that never calls tmashmem_init (or failed before its bootstrap) is named here;
  // the duplicate below is collective and could only say that someone is missing.
  std::string missing;
  if (!arrival_check(base, timeout_ms, &missing))
    return failure(TMASHMEM_ERROR_TIMEOUT,
                   "the MPI bootstrap timed out after " + std::to_string(timeout_ms) +
                       " ms: PE(s) " + missing +
                       " did not call tmashmem_init (or failed before its bootstrap; see its "
                       "error). Raise TMASHMEM_BOOTSTRAP_TIMEOUT_MS if it is only slow");
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Comm_idup(base, &dup, &request) != MPI_SUCCESS)
    return failure(TMASHMEM_ERROR_BOOTSTRAP, "MPI_Comm_idup failed in the MPI bootstrap");
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int done = 0, spins = 0; !done; ++spins) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (Clock::now() > deadline)
      return failure(TMASHMEM_ERROR_TIMEOUT,
                     "the MPI bootstrap timed out after " + std::to_string(timeout_ms) +
                         " ms duplicating the communicator: every PE arrived, but some PE "
                         "failed or left before the duplicate (see its error)");
    if (spins > 1000) usleep(50);
  }
  // Errors come back as return codes (the library's one error path), not as aborts.
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  *out = std::make_unique<MpiBootstrap>(dup, timeout_ms);
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
