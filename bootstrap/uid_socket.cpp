#include "bootstrap/uid_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tmashmem {
namespace {

std::string errno_text(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// Waits for `events` on fd; false on timeout.
bool wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

int ms_left(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

int listen_on(const SocketAddress& address, int backlog, std::string* why) {
  int s = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) {
    *why = errno_text("socket");
    return -1;
  }
  int on = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (::bind(s, address.get(), address.length) != 0) {
    *why = "bind " + address_text(address.get()) + ": " + std::strerror(errno);
    ::close(s);
    return -1;
  }
  if (::listen(s, backlog) != 0) {
    *why = errno_text("listen");
    ::close(s);
    return -1;
  }
  return s;
}

int connect_until(const SocketAddress& address, Deadline deadline, IoResult* result,
                  std::string* why) {
  int delay_ms = 1;
  for (;;) {
    int s = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
      *result = IoResult::kError;
      *why = errno_text("socket");
      return -1;
    }
    int on = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    int rc = ::connect(s, address.get(), address.length);
    int error = rc == 0 ? 0 : errno;
    if (error == EINPROGRESS) {
      if (!wait_for(s, POLLOUT, deadline)) {
        ::close(s);
        *result = IoResult::kTimeout;
        *why = "connect did not complete";
        return -1;
      }
      socklen_t len = sizeof error;
      getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &len);
    }
    if (error == 0) {
      *result = IoResult::kOk;
      return s;
    }
    ::close(s);
    bool retry = error == ECONNREFUSED || error == ETIMEDOUT || error == EHOSTUNREACH ||
                 error == ENETUNREACH || error == ECONNRESET || error == EAGAIN;
    if (!retry) {
      *result = IoResult::kError;
      *why = std::string("connect: ") + std::strerror(error);
      return -1;
    }
    if (ms_left(deadline) == 0) {
      *result = IoResult::kTimeout;
      *why = std::string("connect kept failing (last: ") + std::strerror(error) + ")";
      return -1;
    }
    int left = ms_left(deadline);
    usleep(static_cast<useconds_t>(1000 * (delay_ms < left ? delay_ms : left)));
    if (delay_ms < 32) delay_ms *= 2;
  }
}

IoResult send_all(int fd, const void* data, size_t bytes, Deadline deadline, std::string* why,
                  bool more) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return IoResult::kTimeout;
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return IoResult::kClosed;
    *why = errno_text("send");
    return IoResult::kError;
  }
  return IoResult::kOk;
}

IoResult recv_some(int fd, void* data, size_t want, size_t* have, std::string* why) {
  auto* p = static_cast<char*>(data);
  while (*have < want) {
    ssize_t n = ::recv(fd, p + *have, want - *have, 0);
    if (n > 0) {
      *have += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return IoResult::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::kTimeout;
    if (errno == ECONNRESET) return IoResult::kClosed;
    *why = errno_text("recv");
    return IoResult::kError;
  }
  return IoResult::kOk;
}

IoResult recv_all(int fd, void* data, size_t bytes, Deadline deadline, std::string* why) {
  size_t have = 0;
  for (;;) {
    IoResult r = recv_some(fd, data, bytes, &have, why);
    if (r != IoResult::kTimeout) return r;
    if (!wait_for(fd, POLLIN, deadline)) return IoResult::kTimeout;
  }
}

std::string peer_text(int fd) {
  SocketAddress a;
  a.length = sizeof a.storage;
  if (getpeername(fd, a.get(), &a.length) != 0) return "(unknown peer)";
  return address_text(a.get());
}

}  // namespace tmashmem
