// The unique-id bootstrap's join: the root admits every rank (challenge, answer,
// welcome); each rank connects and proves that it holds the secret (uid_bootstrap.h).
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

void UidBootstrap::send_fail(int fd, tmashmem_status_t status, const std::string& text) {
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

tmashmem_status_t UidBootstrap::root_fail(tmashmem_status_t status, const std::string& text) {
  failed_ = true;
  for (int fd : links_)
    if (fd >= 0) send_fail(fd, status, text);
  return fail(status, "%s", text.c_str());
}

tmashmem_status_t UidBootstrap::root_join() {
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
      FrameRule hello_rule;
      hello_rule.tag = kTagHello;
      hello_rule.length = sizeof(Hello);
      bool framed = judge_frame(p.answer.head, hello_rule) == FrameVerdict::kOk;
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
                     std::to_string(size_) + ": give every PE the same TMASHMEM_BOOTSTRAP_UID_SIZE";
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
void UidBootstrap::accept_ready(PendingList* pending, Deadline deadline) {
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

tmashmem_status_t UidBootstrap::rank_join() {
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

tmashmem_status_t UidBootstrap::lost_root(const char* step, const std::string& why) {
  failed_ = true;
  return fail(TMASHMEM_ERROR_BOOTSTRAP,
              "unique-id bootstrap: rank %d lost its connection to the root %s in step '%s'%s%s "
              "(rank 0 exited or failed; see its error)",
              rank_, root_text_.c_str(), step, why.empty() ? "" : ": ", why.c_str());
}

tmashmem_status_t UidBootstrap::rank_receive_header(const char* step, const FrameRule& rule,
                                                    FrameHeader* h, Deadline deadline) {
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
  const FrameVerdict verdict = judge_frame(*h, rule);
  if (verdict == FrameVerdict::kGarbled) {
    failed_ = true;
    return fail(TMASHMEM_ERROR_BOOTSTRAP,
                "unique-id bootstrap: garbled frame from the root %s in step '%s'",
                root_text_.c_str(), step);
  }
  if (verdict == FrameVerdict::kFail) {
    std::vector<char> body(h->length);
    int32_t code = 0;
    std::string text;
    if (recv_all(links_[0], body.data(), body.size(), deadline, &why) != IoResult::kOk ||
        !decode_fail_body(body.data(), body.size(), &code, &text))
      return lost_root(step, why);
    failed_ = true;
    return fail(static_cast<tmashmem_status_t>(code), "the root reports: %s", text.c_str());
  }
  if (verdict != FrameVerdict::kOk) {
    failed_ = true;
    return fail(TMASHMEM_ERROR_BOOTSTRAP,
                "unique-id bootstrap: rank %d expected frame tag %u, call %llu, %llu bytes from "
                "the root in step '%s' but got tag %u, call %llu, %u bytes (out of step)",
                rank_, static_cast<unsigned>(rule.tag),
                static_cast<unsigned long long>(rule.sequence),
                static_cast<unsigned long long>(rule.length), step, h->tag,
                static_cast<unsigned long long>(h->sequence), h->length);
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t UidBootstrap::rank_receive_fixed(const char* step, FrameTag tag, uint64_t seq,
                                                   FrameHeader* h, void* body, size_t bytes,
                                                   Deadline deadline) {
  FrameRule rule;
  rule.tag = tag;
  rule.length = bytes;
  rule.sequence = seq;
  rule.check_sequence = true;
  rule.sender = 0;
  rule.check_sender = true;
  rule.accept_fail = true;
  TMASHMEM_UID_TRY(rank_receive_header(step, rule, h, deadline));
  std::string why;
  IoResult r = recv_all(links_[0], body, bytes, deadline, &why);
  if (r != IoResult::kOk) return lost_root(step, why);
  return TMASHMEM_SUCCESS;
}

}  // namespace uid_detail
}  // namespace tmashmem
