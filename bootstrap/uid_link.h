// The unique-id bootstrap's connection state, shared by its join (uid_join.cpp) and its
// collectives (uid_bootstrap.cpp). Internal to bootstrap/; see uid_bootstrap.h.
#pragma once

#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/uid_auth.h"
#include "bootstrap/uid_frame.h"
#include "bootstrap/uid_id.h"
#include "bootstrap/uid_protocol.h"
#include "bootstrap/uid_socket.h"

namespace tmashmem {
namespace uid_detail {

#define TMASHMEM_UID_TRY(expr)                                       \
  do {                                                               \
    tmashmem_status_t uid_try_status_ = (expr);                      \
    if (uid_try_status_ != TMASHMEM_SUCCESS) return uid_try_status_; \
  } while (0)

inline uint64_t mac_of(const uint8_t secret[16], const uint8_t nonce[16], const char* purpose,
                       int rank, int size) {
  MacInput in;
  std::memset(&in, 0, sizeof in);
  std::memcpy(in.nonce, nonce, 16);
  std::memcpy(in.purpose, purpose, std::min(std::strlen(purpose), sizeof in.purpose));
  in.rank = rank;
  in.size = size;
  return siphash24(secret, &in, sizeof in);
}

inline FrameHeader header(FrameTag tag, uint64_t sequence, int sender, size_t length) {
  FrameHeader h;
  h.magic = kFrameMagic;
  h.tag = tag;
  h.sequence = sequence;
  h.sender = sender;
  h.length = static_cast<uint32_t>(length);
  return h;
}

// "1, 3, 7" from the ranks whose flag is still false.
inline std::string list_missing(const std::vector<bool>& arrived, int skip) {
  std::string list;
  for (size_t r = 0; r < arrived.size(); ++r)
    if (!arrived[r] && static_cast<int>(r) != skip)
      list += (list.empty() ? "" : ", ") + std::to_string(r);
  return list;
}

inline SocketAddress root_address(const tmashmem_uniqueid_t& id) {
  UidLayout l = uid_layout(id);
  SocketAddress a;
  if (l.family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
    v4->sin_family = AF_INET;
    v4->sin_port = l.port;
    std::memcpy(&v4->sin_addr, l.address, 4);
    a.length = sizeof *v4;
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = l.port;
    v6->sin6_scope_id = l.scope_id;
    std::memcpy(&v6->sin6_addr, l.address, 16);
    a.length = sizeof *v6;
  }
  return a;
}

// A connection being read without blocking: first the header, then the payload.
struct Inbound {
  int fd = -1;
  FrameHeader head{};
  size_t head_have = 0;
  char* payload = nullptr;  // where the payload goes (caller-owned)
  size_t payload_have = 0;
};

// Unanswered connections the root keeps at once during the join.
constexpr size_t kMaxPending = 256;

class UidBootstrap final : public Bootstrap {
 public:
  explicit UidBootstrap(const BootstrapOptions& options)
      : id_(options.uid), timeout_ms_(options.timeout_ms), debug_(options.debug) {
    rank_ = options.uid_rank;
    size_ = options.uid_size;
    secret_ = uid_layout(id_);
    root_text_ = uid_root_text(id_);
    // Ranks wait a little longer than the root, so the root's verdict (which names
    // the ranks that are missing) reaches them before their own deadline.
    int margin = timeout_ms_ / 4;
    rank_wait_ms_ = timeout_ms_ + (margin > 2000 ? 2000 : margin < 100 ? 100 : margin);
    links_.assign(static_cast<size_t>(size_), -1);
  }
  ~UidBootstrap() override { close_all(); }

  const char* name() const override { return "uid"; }

  tmashmem_status_t start() { return rank_ == 0 ? root_join() : rank_join(); }

  tmashmem_status_t allgather(const void* mine, void* out, size_t bytes) override;

  tmashmem_status_t broadcast(void* data, size_t bytes, int root) override;

  tmashmem_status_t barrier() override;

 private:
  tmashmem_status_t usable(const char* what) {
    if (failed_)
      return fail(TMASHMEM_ERROR_BOOTSTRAP,
                  "unique-id bootstrap %s after an earlier failure: the PEs are out of step "
                  "(finalize and start the job again)",
                  what);
    return TMASHMEM_SUCCESS;
  }

  void close_all() {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    for (int& fd : links_)
      if (fd >= 0) {
        ::close(fd);
        fd = -1;
      }
  }

  void log_refusal(const std::string& peer, const std::string& why) {
    std::fprintf(stderr,
                 "[tmashmem rank 0] unique-id bootstrap: refused a connection from %s: %s\n",
                 peer.c_str(), why.c_str());
  }

  // Root: a Fail frame (status + text) to one rank, best effort.
  void send_fail(int fd, tmashmem_status_t status, const std::string& text);

  // Root: tells every connected rank that the job's bootstrap failed, and why.
  tmashmem_status_t root_fail(tmashmem_status_t status, const std::string& text);

  // ---- join ----

  tmashmem_status_t root_join();

  template <typename PendingList>
  void accept_ready(PendingList* pending, Deadline deadline);

  tmashmem_status_t rank_join();

  tmashmem_status_t lost_root(const char* step, const std::string& why);

  // Rank: reads one frame header from the root and judges it by `rule` (uid_frame.h); a
  // Fail frame becomes the root's error, anything but the expected frame an error.
  tmashmem_status_t rank_receive_header(const char* step, const FrameRule& rule, FrameHeader* h,
                                        Deadline deadline);

  tmashmem_status_t rank_receive_fixed(const char* step, FrameTag tag, uint64_t seq, FrameHeader* h,
                                       void* body, size_t bytes, Deadline deadline);

  // ---- collectives ----

  // Rank: sends its block, then receives the result (`result_bytes` into `result`).
  tmashmem_status_t rank_exchange(const char* what, uint64_t seq, const void* mine, size_t bytes,
                                  char* result, size_t result_bytes);

  tmashmem_status_t root_collect(const char* what, uint64_t seq, const std::vector<int>& from,
                                 size_t bytes, char* out, size_t stride);

  // Root: reads one frame of lengths[r] bytes from every rank in `from`, into
  // out + r * stride (stride 0: every payload goes to `out`).
  tmashmem_status_t root_collect_sized(const char* what, uint64_t seq, const std::vector<int>& from,
                                       const std::vector<size_t>& lengths, char* out,
                                       size_t stride);

  // Root: sends the result to every rank except `skip`.
  tmashmem_status_t root_answer(const char* what, uint64_t seq, const char* result, size_t bytes,
                                int skip);

  tmashmem_uniqueid_t id_;
  UidLayout secret_;
  int timeout_ms_;
  int rank_wait_ms_ = 0;
  int debug_;
  std::string root_text_;
  int listen_fd_ = -1;
  std::vector<int> links_;         // root: by rank (links_[0] unused); others: links_[0] = root
  std::vector<Challenge> nonces_;  // root: each rank's challenge
  uint64_t sequence_ = 0;
  bool failed_ = false;
};

}  // namespace uid_detail
}  // namespace tmashmem
