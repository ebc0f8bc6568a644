// The unique-id bootstrap: join (root and ranks) and the relayed collectives. One class
// past the usual length: the join and the collectives share the connection state.
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
#include "bootstrap/uid_id.h"
#include "bootstrap/uid_protocol.h"
#include "bootstrap/uid_socket.h"

namespace tmashmem {
namespace {

#define TMASHMEM_UID_TRY(expr)                                       \
  do {                                                               \
    tmashmem_status_t uid_try_status_ = (expr);                      \
    if (uid_try_status_ != TMASHMEM_SUCCESS) return uid_try_status_; \
  } while (0)

uint64_t mac_of(const uint8_t secret[16], const uint8_t nonce[16], const char* purpose, int rank,
                int size) {
  MacInput in;
  std::memset(&in, 0, sizeof in);
  std::memcpy(in.nonce, nonce, 16);
  std::memcpy(in.purpose, purpose, std::min(std::strlen(purpose), sizeof in.purpose));
  in.rank = rank;
  in.size = size;
  return siphash24(secret, &in, sizeof in);
}

FrameHeader header(FrameTag tag, uint64_t sequence, int sender, size_t length) {
  FrameHeader h;
  h.magic = kFrameMagic;
  h.tag = tag;
  h.sequence = sequence;
  h.sender = sender;
  h.length = static_cast<uint32_t>(length);
  return h;
}

// "1, 3, 7" from the ranks whose flag is still false.
std::string list_missing(const std::vector<bool>& arrived, int skip) {
  std::string list;
  for (size_t r = 0; r < arrived.size(); ++r)
    if (!arrived[r] && static_cast<int>(r) != skip)
      list += (list.empty() ? "" : ", ") + std::to_string(r);
  return list;
}

SocketAddress root_address(const tmashmem_uniqueid_t& id) {
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
  UidBootstrap(const BootstrapOptions& options)
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

  tmashmem_status_t allgather(const void* mine, void* out, size_t bytes) override {
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

  tmashmem_status_t broadcast(void* data, size_t bytes, int root) override {
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

  tmashmem_status_t barrier() override {
    char token = 1;
    std::vector<char> all(static_cast<size_t>(size_));
    return allgather(&token, all.data(), 1);
  }

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
  void send_fail(int fd, tmashmem_status_t status, const std::string& text) {
    std::vector<char> body(sizeof(int32_t) + text.size());
    int32_t code = status;
    std::memcpy(body.data(), &code, sizeof code);
    std::memcpy(body.data() + sizeof code, text.data(), text.size());
    FrameHeader h = header(kTagFail, sequence_, 0, body.size());
    std::string ignored;
    Deadline d = deadline_after(200);
    if (send_all(fd, &h, sizeof h, d, &ignored, true) == IoResult::kOk)
      send_all(fd, body.data(), body.size(), d, &ignored);
  }

  // Root: tells every connected rank that the job's bootstrap failed, and why.
  tmashmem_status_t root_fail(tmashmem_status_t status, const std::string& text) {
    failed_ = true;
    for (int fd : links_)
      if (fd >= 0) send_fail(fd, status, text);
    return fail(status, "%s", text.c_str());
  }

  // ---- join ----

  tmashmem_status_t root_join() {
    if (size_ == 1) return TMASHMEM_SUCCESS;
    SocketAddress address = root_address(id_);
    std::string why;
    listen_fd_ = listen_on(address, size_ + 16, &why);
    if (listen_fd_ < 0)
      return fail(TMASHMEM_ERROR_BOOTSTRAP,
                  "unique-id bootstrap: rank 0 cannot listen on the id's root address %s (%s): "
                  "rank 0 must run on the host that made the id, and the port must be free "
                  "(make a new id)",
                  root_text_.c_str(), why.c_str());
    if (debug_ >= 1)
      std::fprintf(stderr,
                   "[tmashmem rank 0] unique-id bootstrap: root listening on %s for %d ranks\n",
                   root_text_.c_str(), size_ - 1);
    struct Pending {
      int fd;
      std::string peer;
      Challenge challenge;
      struct {
        FrameHeader head;
        Hello hello;
      } answer;
      size_t have;
    };
    std::vector<Pending> pending;
    std::vector<bool> arrived(static_cast<size_t>(size_), false);
    arrived[0] = true;
    int joined = 0;  // ranks connected (after a fatal error: ranks told about it)
    // A fatal join error (a rank with another job size) is told to every rank that
    // connects until all have heard it or the deadline passes, so none waits in vain.
    tmashmem_status_t fatal = TMASHMEM_SUCCESS;
    std::string fatal_text;
    Deadline deadline = deadline_after(timeout_ms_);
    auto drop = [&](size_t i) {
      ::close(pending[i].fd);
      pending.erase(pending.begin() + static_cast<long>(i));
    };
    while (joined < size_ - 1) {
      std::vector<pollfd> fds;
      fds.push_back({listen_fd_, POLLIN, 0});
      for (const Pending& p : pending) fds.push_back({p.fd, POLLIN, 0});
      int n = ::poll(fds.data(), fds.size(), ms_left(deadline));
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || ms_left(deadline) == 0) {
        for (size_t i = pending.size(); i-- > 0;) drop(i);
        if (fatal != TMASHMEM_SUCCESS) return root_fail(fatal, fatal_text);
        return root_fail(TMASHMEM_ERROR_TIMEOUT,
                         "unique-id bootstrap timed out after " + std::to_string(timeout_ms_) +
                             " ms in step 'accept' at the root " + root_text_ + ": rank(s) " +
                             list_missing(arrived, -1) +
                             " did not connect (dead, not started, or given another id; raise "
                             "TMASHMEM_BOOTSTRAP_TIMEOUT_MS if they are only slow)");
      }
      // Answers first (indices shift when one is dropped), then new connections.
      for (size_t i = pending.size(); i-- > 0;) {
        if (!(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Pending& p = pending[i];
        std::string err;
        IoResult r = recv_some(p.fd, &p.answer, sizeof p.answer, &p.have, &err);
        if (r == IoResult::kTimeout) continue;
        if (r != IoResult::kOk) {
          log_refusal(p.peer, "it closed the connection without presenting this job's secret");
          drop(i);
          continue;
        }
        const Hello& h = p.answer.hello;
        bool framed = p.answer.head.magic == kFrameMagic && p.answer.head.tag == kTagHello &&
                      p.answer.head.length == sizeof(Hello);
        uint64_t expect =
            framed ? mac_of(secret_.secret, p.challenge.nonce, "hello", h.rank, h.size) : 0;
        if (!framed || !equal_constant_time(&expect, &h.mac, sizeof expect)) {
          log_refusal(p.peer, framed ? "it did not present this job's secret"
                                     : "its first message is not a unique-id bootstrap hello");
          drop(i);
          continue;
        }
        if (h.size != size_ && fatal == TMASHMEM_SUCCESS) {  // a rank started with another size
          fatal = TMASHMEM_ERROR_INVALID_VALUE;
          fatal_text = "unique-id bootstrap: rank " + std::to_string(h.rank) + " (from " + p.peer +
                       ") says the job has " + std::to_string(h.size) + " PEs, rank 0 says " +
                       std::to_string(size_) +
                       ": give every PE the same TMASHMEM_BOOTSTRAP_UID_SIZE";
          for (int fd : links_)
            if (fd >= 0) send_fail(fd, fatal, fatal_text);
        }
        if (fatal != TMASHMEM_SUCCESS) {
          send_fail(p.fd, fatal, fatal_text);
          if (h.rank > 0 && h.rank < size_ && !arrived[static_cast<size_t>(h.rank)]) {
            arrived[static_cast<size_t>(h.rank)] = true;
            ++joined;
          }
          drop(i);
          continue;
        }
        if (h.rank <= 0 || h.rank >= size_ || arrived[static_cast<size_t>(h.rank)]) {
          log_refusal(p.peer, "it claims rank " + std::to_string(h.rank) +
                                  (h.rank > 0 && h.rank < size_ ? ", which is already connected"
                                                                : ", which is out of range"));
          drop(i);
          continue;
        }
        links_[static_cast<size_t>(h.rank)] = p.fd;
        arrived[static_cast<size_t>(h.rank)] = true;
        nonces_.resize(static_cast<size_t>(size_));
        nonces_[static_cast<size_t>(h.rank)] = p.challenge;
        ++joined;
        pending.erase(pending.begin() + static_cast<long>(i));
      }
      if (fds[0].revents & POLLIN) accept_ready(&pending, deadline);
      // Connections that never answer cannot pile up: the oldest make room.
      while (pending.size() > kMaxPending) {
        log_refusal(pending.front().peer, "it did not answer before newer connections came");
        drop(0);
      }
    }
    ::close(listen_fd_);  // nobody else may join now
    listen_fd_ = -1;
    for (size_t i = pending.size(); i-- > 0;) drop(i);
    if (fatal != TMASHMEM_SUCCESS) {
      failed_ = true;  // every rank has its Fail frame already
      return fail(fatal, "%s", fatal_text.c_str());
    }
    for (int r = 1; r < size_; ++r) {
      Welcome w;
      std::memset(&w, 0, sizeof w);
      w.size = size_;
      w.mac = mac_of(secret_.secret, nonces_[static_cast<size_t>(r)].nonce, "welcome", r, size_);
      FrameHeader h = header(kTagWelcome, 0, 0, sizeof w);
      std::string err;
      int fd = links_[static_cast<size_t>(r)];
      if (send_all(fd, &h, sizeof h, deadline, &err, true) != IoResult::kOk ||
          send_all(fd, &w, sizeof w, deadline, &err) != IoResult::kOk)
        return root_fail(TMASHMEM_ERROR_BOOTSTRAP,
                         "unique-id bootstrap: the root could not admit rank " + std::to_string(r) +
                             " (step 'welcome'): its connection failed " + err);
    }
    return TMASHMEM_SUCCESS;
  }

  template <typename PendingList>
  void accept_ready(PendingList* pending, Deadline deadline) {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN: no more for now (errors: the next poll tries again)
      int on = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      typename PendingList::value_type p;
      std::memset(&p.challenge, 0, sizeof p.challenge);
      std::memset(&p.answer, 0, sizeof p.answer);
      p.fd = fd;
      p.peer = peer_text(fd);
      p.have = 0;
      std::string err;
      bool ok = getrandom(p.challenge.nonce, sizeof p.challenge.nonce, 0) ==
                static_cast<ssize_t>(sizeof p.challenge.nonce);
      FrameHeader h = header(kTagChallenge, 0, 0, sizeof p.challenge);
      Deadline soon = deadline_after(ms_left(deadline) < 1000 ? ms_left(deadline) : 1000);
      ok = ok && send_all(fd, &h, sizeof h, soon, &err, true) == IoResult::kOk &&
           send_all(fd, &p.challenge, sizeof p.challenge, soon, &err) == IoResult::kOk;
      if (!ok) {
        ::close(fd);
        continue;
      }
      pending->push_back(std::move(p));
    }
  }

  tmashmem_status_t rank_join() {
    SocketAddress address = root_address(id_);
    Deadline deadline = deadline_after(timeout_ms_);
    IoResult result = IoResult::kOk;
    std::string why;
    int fd = connect_until(address, deadline, &result, &why);
    if (fd < 0)
      return fail(result == IoResult::kTimeout ? TMASHMEM_ERROR_TIMEOUT : TMASHMEM_ERROR_BOOTSTRAP,
                  "unique-id bootstrap: rank %d could not connect to the root %s within %d ms "
                  "(step 'connect': %s): is rank 0 running with the same id?",
                  rank_, root_text_.c_str(), timeout_ms_, why.c_str());
    links_[0] = fd;
    FrameHeader h;
    Challenge c;
    TMASHMEM_UID_TRY(rank_receive_fixed("challenge", kTagChallenge, 0, &h, &c, sizeof c, deadline));
    Hello hello;
    std::memset(&hello, 0, sizeof hello);
    hello.rank = rank_;
    hello.size = size_;
    hello.pid = static_cast<int32_t>(getpid());
    hello.mac = mac_of(secret_.secret, c.nonce, "hello", rank_, size_);
    FrameHeader out = header(kTagHello, 0, rank_, sizeof hello);
    if (send_all(fd, &out, sizeof out, deadline, &why, true) != IoResult::kOk ||
        send_all(fd, &hello, sizeof hello, deadline, &why) != IoResult::kOk)
      return lost_root("hello", why);
    Welcome w;
    TMASHMEM_UID_TRY(rank_receive_fixed("welcome", kTagWelcome, 0, &h, &w, sizeof w,
                                        deadline_after(rank_wait_ms_)));
    uint64_t expect = mac_of(secret_.secret, c.nonce, "welcome", rank_, size_);
    if (!equal_constant_time(&expect, &w.mac, sizeof expect) || w.size != size_) {
      failed_ = true;
      return fail(TMASHMEM_ERROR_BOOTSTRAP,
                  "unique-id bootstrap: the process at %s did not prove that it knows this job's "
                  "secret (step 'welcome'): another program holds the id's port",
                  root_text_.c_str());
    }
    return TMASHMEM_SUCCESS;
  }

  tmashmem_status_t lost_root(const char* step, const std::string& why) {
    failed_ = true;
    return fail(TMASHMEM_ERROR_BOOTSTRAP,
                "unique-id bootstrap: rank %d lost its connection to the root %s in step '%s'%s%s "
                "(rank 0 exited or failed; see its error)",
                rank_, root_text_.c_str(), step, why.empty() ? "" : ": ", why.c_str());
  }

  // Rank: reads one frame header from the root; a Fail frame becomes the root's error.
  tmashmem_status_t rank_receive_header(const char* step, FrameHeader* h, Deadline deadline) {
    std::string why;
    IoResult r = recv_all(links_[0], h, sizeof *h, deadline, &why);
    if (r == IoResult::kTimeout) {
      failed_ = true;
      return fail(TMASHMEM_ERROR_TIMEOUT,
                  "unique-id bootstrap: rank %d waited %d ms for the root %s in step '%s' and "
                  "heard nothing (is rank 0 alive?)",
                  rank_, rank_wait_ms_, root_text_.c_str(), step);
    }
    if (r != IoResult::kOk) return lost_root(step, why);
    if (h->magic != kFrameMagic || h->sender != 0 || h->length > kMaxFramePayload) {
      failed_ = true;
      return fail(TMASHMEM_ERROR_BOOTSTRAP,
                  "unique-id bootstrap: garbled frame from the root %s in step '%s'",
                  root_text_.c_str(), step);
    }
    if (h->tag == kTagFail) {
      std::vector<char> body(h->length);
      if (recv_all(links_[0], body.data(), body.size(), deadline, &why) != IoResult::kOk ||
          body.size() < sizeof(int32_t))
        return lost_root(step, why);
      int32_t code = 0;
      std::memcpy(&code, body.data(), sizeof code);
      failed_ = true;
      std::string text(body.data() + sizeof code, body.size() - sizeof code);
      return fail(static_cast<tmashmem_status_t>(code), "the root reports: %s", text.c_str());
    }
    return TMASHMEM_SUCCESS;
  }

  tmashmem_status_t rank_receive_fixed(const char* step, FrameTag tag, uint64_t seq, FrameHeader* h,
                                       void* body, size_t bytes, Deadline deadline) {
    TMASHMEM_UID_TRY(rank_receive_header(step, h, deadline));
    if (h->tag != tag || h->sequence != seq || h->length != bytes) {
      failed_ = true;
      return fail(TMASHMEM_ERROR_BOOTSTRAP,
                  "unique-id bootstrap: rank %d expected frame tag %u, call %llu, %zu bytes from "
                  "the root in step '%s' but got tag %u, call %llu, %u bytes (out of step)",
                  rank_, static_cast<unsigned>(tag), static_cast<unsigned long long>(seq), bytes,
                  step, h->tag, static_cast<unsigned long long>(h->sequence), h->length);
    }
    std::string why;
    IoResult r = recv_all(links_[0], body, bytes, deadline, &why);
    if (r != IoResult::kOk) return lost_root(step, why);
    return TMASHMEM_SUCCESS;
  }

  // ---- collectives ----

  // Rank: sends its block, then receives the result (`result_bytes` into `result`).
  tmashmem_status_t rank_exchange(const char* what, uint64_t seq, const void* mine, size_t bytes,
                                  char* result, size_t result_bytes) {
    FrameHeader h = header(kTagGather, seq, rank_, bytes);
    std::string why;
    Deadline deadline = deadline_after(timeout_ms_);
    IoResult r = send_all(links_[0], &h, sizeof h, deadline, &why, bytes > 0);
    if (r == IoResult::kOk && bytes) r = send_all(links_[0], mine, bytes, deadline, &why);
    if (r != IoResult::kOk) return lost_root(what, why);
    return rank_receive_fixed(what, kTagResult, seq, &h, result, result_bytes,
                              deadline_after(rank_wait_ms_));
  }

  tmashmem_status_t root_collect(const char* what, uint64_t seq, const std::vector<int>& from,
                                 size_t bytes, char* out, size_t stride) {
    std::vector<size_t> lengths(static_cast<size_t>(size_), bytes);
    return root_collect_sized(what, seq, from, lengths, out, stride);
  }

  // Root: reads one frame of lengths[r] bytes from every rank in `from`, into
  // out + r * stride (stride 0: every payload goes to `out`).
  tmashmem_status_t root_collect_sized(const char* what, uint64_t seq, const std::vector<int>& from,
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
          if (r == IoResult::kOk &&
              (b.head.magic != kFrameMagic || b.head.tag != kTagGather || b.head.sequence != seq ||
               b.head.sender != rank || b.head.length != lengths[static_cast<size_t>(rank)]))
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

  // Root: sends the result to every rank except `skip`.
  tmashmem_status_t root_answer(const char* what, uint64_t seq, const char* result, size_t bytes,
                                int skip) {
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
                         std::string("unique-id bootstrap ") + what + ": rank " +
                             std::to_string(r) +
                             " closed its connection to the root (it exited or failed)");
    }
    return TMASHMEM_SUCCESS;
  }

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

}  // namespace

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
  auto made = std::make_unique<UidBootstrap>(options);
  tmashmem_status_t st = made->start();
  if (st != TMASHMEM_SUCCESS) {
    *message = made->last_message();
    return st;  // the destructor closes every socket
  }
  *out = std::move(made);
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
