#include "runtime/fd_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>

#include "runtime/error.h"

namespace tmashmem {
namespace {

socklen_t abstract_address(uint64_t job_id, int pe, sockaddr_un* address) {
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  // sun_path[0] == '\0' selects the abstract namespace.
  int n = std::snprintf(address->sun_path + 1, sizeof address->sun_path - 1, "tmashmem.%016llx.%d",
                        static_cast<unsigned long long>(job_id), pe);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<size_t>(n));
}

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

tmashmem_status_t FdChannel::open(uint64_t job_id, int pe) {
  close();
  int s = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return set_system_error("socket(AF_UNIX, SOCK_DGRAM) for the handle exchange");
  sockaddr_un address;
  socklen_t length = abstract_address(job_id, pe, &address);
  if (::bind(s, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    tmashmem_status_t st = set_system_error(
        "bind of the handle-exchange socket \"@%s\" (another job with the same id on this node?)",
        address.sun_path + 1);
    ::close(s);
    return st;
  }
  socket_ = s;
  job_id_ = job_id;
  return TMASHMEM_SUCCESS;
}

void FdChannel::close() {
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
}

tmashmem_status_t FdChannel::try_send(int to, const FdMessage& message, int fd, bool* sent) {
  *sent = false;
  sockaddr_un address;
  socklen_t length = abstract_address(job_id_, to, &address);
  iovec iov;
  iov.iov_base = const_cast<FdMessage*>(&message);
  iov.iov_len = sizeof message;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  std::memset(control, 0, sizeof control);
  msghdr header;
  std::memset(&header, 0, sizeof header);
  header.msg_name = &address;
  header.msg_namelen = length;
  header.msg_iov = &iov;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&header);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  // The peer binds its socket during init, before the bootstrap barrier that
  // precedes any exchange, so ECONNREFUSED/ENOENT mean it is gone; EAGAIN means its
  // queue is full (the caller drains its own queue and tries again).
  for (;;) {
    if (::sendmsg(socket_, &header, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
      *sent = true;
      return TMASHMEM_SUCCESS;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return TMASHMEM_SUCCESS;
    return set_system_error("sending a memory handle to PE %d over its Unix socket", to);
  }
}

tmashmem_status_t FdChannel::try_receive(FdMessage* message, int* fd, bool* got) {
  *got = false;
  for (;;) {
    iovec iov;
    iov.iov_base = message;
    iov.iov_len = sizeof *message;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr header;
    std::memset(&header, 0, sizeof header);
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(socket_, &header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return TMASHMEM_SUCCESS;
    if (n < 0) return set_system_error("recvmsg on the handle-exchange socket");
    cmsghdr* c = CMSG_FIRSTHDR(&header);
    int received = -1;
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&received, CMSG_DATA(c), sizeof(int));
    if (static_cast<size_t>(n) != sizeof *message || received < 0 || message->job_id != job_id_ ||
        (header.msg_flags & MSG_CTRUNC)) {
      if (received >= 0) ::close(received);
      return set_error(TMASHMEM_ERROR_INTERNAL,
                       "malformed handle-exchange message (%zd bytes, fd %d): another program is "
                       "writing to this job's socket",
                       n, received);
    }
    *fd = received;
    *got = true;
    return TMASHMEM_SUCCESS;
  }
}

tmashmem_status_t FdChannel::receive(FdMessage* message, int* fd, int timeout_ms,
                                     const std::string& waiting_for) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    bool got = false;
    TMASHMEM_TRY(try_receive(message, fd, &got));
    if (got) return TMASHMEM_SUCCESS;
    int left = remaining_ms(deadline);
    if (left == 0)
      return set_error(TMASHMEM_ERROR_TIMEOUT,
                       "waiting %d ms for a memory handle from PE(s) %s timed out: a PE died or "
                       "did not make the same collective call (raise TMASHMEM_BOOTSTRAP_TIMEOUT_MS "
                       "if it is only slow)",
                       timeout_ms, waiting_for.c_str());
    pollfd p{socket_, POLLIN, 0};
    int ready = ::poll(&p, 1, left);
    if (ready < 0 && errno != EINTR) return set_system_error("poll on the handle-exchange socket");
  }
}

}  // namespace tmashmem
