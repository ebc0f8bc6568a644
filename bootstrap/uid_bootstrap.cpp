// The unique-id bootstrap's collectives, relayed by the root, and its start.
#include "bootstrap/uid_bootstrap.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bootstrap/uid_auth.h"
#include "bootstrap/uid_link.h"

namespace tmashmem {
namespace uid_detail {

tmashmem_status_t UidBootstrap::allgather(const void* mine, void* out, size_t bytes) {
  TMASHMEM_UID_TRY(usable("allgather"));
  uint64_t seq = ++sequence_;
  char* result = static_cast<char*>(out);
  if (bytes) std::memmove(result + bytes * static_cast<size_t>(rank_), mine, bytes);
  if (size_ == 1) return TMASHMEM_SUCCESS;
  if (rank_ != 0) return rank_exchange("allgather", seq, mine, bytes, result, bytes * size_);
  std::vector<int> from;
  for (int r = 1; r < size_; ++r) from.push_back(r);
  TMASHMEM_UID_TRY(root_collect("allgather", seq, from, bytes, result, bytes));
  return root_answer("allgather", seq, result, bytes * size_, -1);
}

tmashmem_status_t UidBootstrap::broadcast(void* data, size_t bytes, int root) {
  TMASHMEM_UID_TRY(usable("broadcast"));
  if (root < 0 || root >= size_)
    return fail(TMASHMEM_ERROR_INVALID_VALUE, "broadcast root %d out of range [0, %d)", root,
                size_);
  uint64_t seq = ++sequence_;
  if (size_ == 1) return TMASHMEM_SUCCESS;
  char* buffer = static_cast<char*>(data);
  if (rank_ != 0)
    return rank_exchange("broadcast", seq, rank_ == root ? data : nullptr,
                         rank_ == root ? bytes : 0, buffer, bytes);
  // Every non-root rank sends a frame (empty unless it is the broadcast's root), so
  // the root knows every rank reached this call before anyone moves on.
  std::vector<int> from;
  for (int r = 1; r < size_; ++r) from.push_back(r);
  std::vector<size_t> lengths(static_cast<size_t>(size_), 0);
  if (root != 0) lengths[static_cast<size_t>(root)] = bytes;
  TMASHMEM_UID_TRY(root_collect_sized("broadcast", seq, from, lengths, buffer, 0));
  return root_answer("broadcast", seq, buffer, bytes, -1);
}

tmashmem_status_t UidBootstrap::barrier() {
  char token = 1;
  std::vector<char> all(static_cast<size_t>(size_));
  return allgather(&token, all.data(), 1);
}

tmashmem_status_t UidBootstrap::rank_exchange(const char* what, uint64_t seq, const void* mine,
                                              size_t bytes, char* result, size_t result_bytes) {
  FrameHeader h = header(kTagGather, seq, rank_, bytes);
  std::string why;
  Deadline deadline = deadline_after(timeout_ms_);
  IoResult r = send_all(links_[0], &h, sizeof h, deadline, &why, bytes > 0);
  if (r == IoResult::kOk && bytes) r = send_all(links_[0], mine, bytes, deadline, &why);
  if (r != IoResult::kOk) return lost_root(what, why);
  return rank_receive_fixed(what, kTagResult, seq, &h, result, result_bytes,
                            deadline_after(rank_wait_ms_));
}

tmashmem_status_t UidBootstrap::root_collect(const char* what, uint64_t seq,
                                             const std::vector<int>& from, size_t bytes, char* out,
                                             size_t stride) {
  std::vector<size_t> lengths(static_cast<size_t>(size_), bytes);
  return root_collect_sized(what, seq, from, lengths, out, stride);
}

tmashmem_status_t UidBootstrap::root_collect_sized(const char* what, uint64_t seq,
                                                   const std::vector<int>& from,
                                                   const std::vector<size_t>& lengths, char* out,
                                                   size_t stride) {
  std::vector<Inbound> in(from.size());
  std::vector<bool> arrived(static_cast<size_t>(size_), true);
  for (size_t i = 0; i < from.size(); ++i) {
    in[i].fd = links_[static_cast<size_t>(from[i])];
    in[i].payload = out + stride * static_cast<size_t>(from[i]);
    arrived[static_cast<size_t>(from[i])] = false;
  }
  size_t done = 0;
  Deadline deadline = deadline_after(timeout_ms_);
  while (done < from.size()) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < from.size(); ++i)
      if (!arrived[static_cast<size_t>(from[i])]) {
        fds.push_back({in[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    int n = ::poll(fds.data(), fds.size(), ms_left(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || ms_left(deadline) == 0)
      return root_fail(TMASHMEM_ERROR_TIMEOUT,
                       std::string("unique-id bootstrap ") + what + " timed out after " +
                           std::to_string(timeout_ms_) + " ms at the root " + root_text_ +
                           " waiting for rank(s) " + list_missing(arrived, -1) +
                           "; a PE died or did not make the same collective call (raise "
                           "TMASHMEM_BOOTSTRAP_TIMEOUT_MS if it is only slow)");
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      size_t i = which[k];
      int rank = from[i];
      Inbound& b = in[i];
      std::string why;
      IoResult r = IoResult::kOk;
      if (b.head_have < sizeof b.head) {
        r = recv_some(b.fd, &b.head, sizeof b.head, &b.head_have, &why);
        FrameRule rule;
        rule.tag = kTagGather;
        rule.length = lengths[static_cast<size_t>(rank)];
        rule.sequence = seq;
        rule.check_sequence = true;
        rule.sender = rank;
        rule.check_sender = true;
        if (r == IoResult::kOk && judge_frame(b.head, rule) != FrameVerdict::kOk)
          return root_fail(TMASHMEM_ERROR_BOOTSTRAP,
                           std::string("unique-id bootstrap ") + what + ": rank " +
                               std::to_string(rank) + " sent tag " + std::to_string(b.head.tag) +
                               ", call " + std::to_string(b.head.sequence) + ", sender " +
                               std::to_string(b.head.sender) + ", " +
                               std::to_string(b.head.length) +
                               " bytes where the root expected call " + std::to_string(seq) +
                               " with " + std::to_string(lengths[static_cast<size_t>(rank)]) +
                               " bytes: the PEs are out of step (different collective calls)");
      }
      if (r == IoResult::kOk && b.head_have == sizeof b.head)
        r = recv_some(b.fd, b.payload, b.head.length, &b.payload_have, &why);
      if (r == IoResult::kTimeout) continue;
      if (r != IoResult::kOk)
        return root_fail(TMASHMEM_ERROR_BOOTSTRAP,
                         std::string("unique-id bootstrap ") + what + ": rank " +
                             std::to_string(rank) +
                             " closed its connection to the root (it exited or failed; see "
                             "its error)" +
                             (why.empty() ? "" : ": " + why));
      arrived[static_cast<size_t>(rank)] = true;
      ++done;
    }
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t UidBootstrap::root_answer(const char* what, uint64_t seq, const char* result,
                                            size_t bytes, int skip) {
  FrameHeader h = header(kTagResult, seq, 0, bytes);
  Deadline deadline = deadline_after(timeout_ms_);
  for (int r = 1; r < size_; ++r) {
    if (r == skip) continue;
    std::string why;
    int fd = links_[static_cast<size_t>(r)];
    IoResult io = send_all(fd, &h, sizeof h, deadline, &why, bytes > 0);
    if (io == IoResult::kOk && bytes) io = send_all(fd, result, bytes, deadline, &why);
    if (io == IoResult::kTimeout)
      return root_fail(TMASHMEM_ERROR_TIMEOUT, std::string("unique-id bootstrap ") + what +
                                                   ": sending the result to rank " +
                                                   std::to_string(r) + " timed out after " +
                                                   std::to_string(timeout_ms_) +
                                                   " ms (it stopped reading)");
    if (io != IoResult::kOk)
      return root_fail(TMASHMEM_ERROR_BOOTSTRAP,
                       std::string("unique-id bootstrap ") + what + ": rank " + std::to_string(r) +
                           " closed its connection to the root (it exited or failed)");
  }
  return TMASHMEM_SUCCESS;
}

}  // namespace uid_detail

tmashmem_status_t make_uid_bootstrap(const BootstrapOptions& options,
                                     std::unique_ptr<Bootstrap>* out, std::string* message) {
  std::string why;
  if (!uid_valid(options.uid, &why)) {
    *message = "unique-id bootstrap (" + options.uid_source + "): " + why;
    return TMASHMEM_ERROR_INVALID_VALUE;
  }
  if (options.uid_size < 1 || options.uid_rank < 0 || options.uid_rank >= options.uid_size) {
    *message = "unique-id bootstrap: rank " + std::to_string(options.uid_rank) + " of " +
               std::to_string(options.uid_size) +
               " PEs is not valid: set TMASHMEM_BOOTSTRAP_UID_RANK in [0, size) and "
               "TMASHMEM_BOOTSTRAP_UID_SIZE >= 1 (or tmashmem_init_attr_t.uid_rank / uid_size)";
    return TMASHMEM_ERROR_INVALID_VALUE;
  }
  auto made = std::make_unique<uid_detail::UidBootstrap>(options);
  tmashmem_status_t st = made->start();
  if (st != TMASHMEM_SUCCESS) {
    *message = made->last_message();
    return st;  // the destructor closes every socket
  }
  *out = std::move(made);
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
