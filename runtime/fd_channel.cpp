#include "runtime/fd_channel.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "runtime/error.h"

namespace tmashmem {
namespace {

std::string hex(const uint8_t* bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

uint64_t netns_inode() {
  struct stat st;
  return ::stat("/proc/self/ns/net", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

bool unix_socket_address(const std::string& name, sockaddr_un* address, socklen_t* length) {
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  if (name.empty() || name.size() >= sizeof address->sun_path) return false;
  if (name[0] == '@') {
    // sun_path[0] == '\0' selects the abstract namespace; the name has no terminator.
    std::memcpy(address->sun_path + 1, name.data() + 1, name.size() - 1);
    *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  } else {
    std::memcpy(address->sun_path, name.c_str(), name.size() + 1);
    *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + 1);
  }
  return true;
}

ssize_t send_fd_datagram(int socket, const sockaddr_un& address, socklen_t length,
                         const FdMessage& message, int fd, int flags) {
  iovec iov;
  iov.iov_base = const_cast<FdMessage*>(&message);
  iov.iov_len = sizeof message;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  std::memset(control, 0, sizeof control);
  msghdr header;
  std::memset(&header, 0, sizeof header);
  header.msg_name = const_cast<sockaddr_un*>(&address);
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
  return ::sendmsg(socket, &header, flags);
}

std::string FdChannel::socket_name(int pe) const {
  int slot = pe - first_local_pe_;
  if (filesystem_) {
    if (slot < 0 || static_cast<size_t>(slot) >= peers_.size()) return "(no such local PE)";
    return peers_[static_cast<size_t>(slot)].path;
  }
  return "@tmashmem-" + hex(nonce_, sizeof nonce_) + "-" + std::to_string(pe);
}

tmashmem_status_t FdChannel::bind_socket(int pe, bool filesystem) {
  int s = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return set_system_error("socket(AF_UNIX, SOCK_DGRAM) for the handle exchange");
  // The kernel attaches every sender's pid and uid to what this socket receives.
  int on = 1;
  if (::setsockopt(s, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) {
    tmashmem_status_t st =
        set_system_error("setsockopt(SO_PASSCRED) on the handle-exchange socket");
    ::close(s);
    return st;
  }
  sockaddr_un address;
  socklen_t length = 0;
  std::string name = filesystem ? std::string() : socket_name(pe);  // abstract: "@..."
  if (filesystem) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tmashmem-XXXXXX";
    std::vector<char> dir(pattern.begin(), pattern.end());
    dir.push_back('\0');
    if (!mkdtemp(dir.data())) {  // mode 0700: only this user may reach the socket
      tmashmem_status_t st =
          set_system_error("mkdtemp(%s) for the handle-exchange socket", pattern.c_str());
      ::close(s);
      return st;
    }
    dir_ = dir.data();
    std::string path = dir_ + "/fd.sock";
    if (path.size() >= sizeof address.sun_path) {
      ::rmdir(dir_.c_str());
      dir_.clear();
      ::close(s);
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "the handle-exchange socket path %s is longer than %zu bytes: set TMPDIR "
                       "to a shorter directory",
                       path.c_str(), sizeof address.sun_path - 1);
    }
    name = path;
  }
  if (!unix_socket_address(name, &address, &length)) {
    ::close(s);
    close();
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "the handle-exchange socket name \"%s\" does not fit a Unix socket address",
                     name.c_str());
  }
  if (::bind(s, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    tmashmem_status_t st =
        set_system_error("bind of the handle-exchange socket \"%s\"", name.c_str());
    ::close(s);
    close();
    return st;
  }
  socket_ = s;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t FdChannel::open(Bootstrap& bs, int first_local_pe, int n_local,
                                  const std::string& mode, int debug) {
  close();
  me_ = bs.rank();
  first_local_pe_ = first_local_pe;
  // Rank 0's nonce names this job's sockets; nobody can guess them beforehand.
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  if (me_ == 0 && getrandom(nonce_, sizeof nonce_, 0) != static_cast<ssize_t>(sizeof nonce_))
    st = set_system_error("getrandom for the handle-exchange nonce");
  // Collective calls come first and always, so a local failure cannot hang the others.
  tmashmem_status_t shared = bs.broadcast(nonce_, sizeof nonce_, 0);
  if (shared != TMASHMEM_SUCCESS) return shared;
  std::memcpy(&job_id_, nonce_, sizeof job_id_);
  Endpoint mine;
  std::memset(&mine, 0, sizeof mine);
  mine.pid = static_cast<int32_t>(getpid());
  mine.uid = static_cast<uint32_t>(getuid());
  mine.netns = netns_inode();
  std::vector<Endpoint> all(static_cast<size_t>(bs.size()));
  TMASHMEM_TRY(bs.allgather(&mine, all.data(), sizeof mine));
  peers_.assign(all.begin() + first_local_pe, all.begin() + first_local_pe + n_local);
  bool split_netns = false;
  for (const Endpoint& e : peers_) split_netns = split_netns || e.netns != mine.netns;
  // The same decision on every local PE: the mode is one setting, the namespaces are shared.
  filesystem_ = mode == "filesystem" || (mode == "auto" && split_netns);
  if (st == TMASHMEM_SUCCESS) st = bind_socket(me_, filesystem_);
  std::string message = last_error();
  mine.status = st;
  if (filesystem_ && st == TMASHMEM_SUCCESS)
    std::snprintf(mine.path, sizeof mine.path, "%s/fd.sock", dir_.c_str());
  TMASHMEM_TRY(bs.allgather(&mine, all.data(), sizeof mine));
  peers_.assign(all.begin() + first_local_pe, all.begin() + first_local_pe + n_local);
  if (st != TMASHMEM_SUCCESS) {
    close();
    return restore_error(st, message);
  }
  for (int s = 0; s < n_local; ++s)
    if (peers_[static_cast<size_t>(s)].status != TMASHMEM_SUCCESS) {
      close();
      return set_error(TMASHMEM_ERROR_SYSTEM,
                       "PE %d could not bind its handle-exchange socket (see its error)",
                       first_local_pe + s);
    }
  if (debug >= 1)
    std::fprintf(stderr, "[tmashmem rank %d] handle exchange: %s socket %s%s\n", me_,
                 filesystem_ ? "filesystem" : "abstract", socket_name(me_).c_str(),
                 split_netns ? " (the node's PEs are in different network namespaces)" : "");
  return TMASHMEM_SUCCESS;
}

void FdChannel::close() {
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  if (!dir_.empty()) {
    ::unlink((dir_ + "/fd.sock").c_str());
    ::rmdir(dir_.c_str());
    dir_.clear();
  }
  peers_.clear();
}

void FdChannel::refuse(pid_t pid, uid_t uid, const char* why) {
  std::fprintf(stderr,
               "[tmashmem rank %d] handle exchange: refused a message from pid %d (uid %u): %s\n",
               me_, static_cast<int>(pid), static_cast<unsigned>(uid), why);
}

tmashmem_status_t FdChannel::send(int to, const FdMessage& message, int fd, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    bool sent = false;
    TMASHMEM_TRY(try_send(to, message, fd, &sent));
    if (sent) return TMASHMEM_SUCCESS;
    if (remaining_ms(deadline) == 0)
      return set_error(TMASHMEM_ERROR_TIMEOUT,
                       "sending a memory handle to PE %d timed out after %d ms: its socket queue "
                       "stayed full (is PE %d alive?)",
                       to, timeout_ms, to);
    pollfd p{socket_, POLLOUT, 0};
    ::poll(&p, 1, 1);
  }
}

tmashmem_status_t FdChannel::try_send(int to, const FdMessage& message, int fd, bool* sent) {
  *sent = false;
  const std::string name = socket_name(to);
  if (filesystem_ && (name.empty() || name[0] != '/'))
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "PE %d is not a PE of this node", to);
  sockaddr_un address;
  socklen_t length = 0;
  if (!unix_socket_address(name, &address, &length))
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "the handle-exchange socket name \"%s\" of PE %d does not fit a Unix "
                     "socket address",
                     name.c_str(), to);
  // The peer binds its socket during init, before the bootstrap all-gather that
  // precedes any exchange, so ECONNREFUSED/ENOENT mean it is gone; EAGAIN means its
  // queue is full (the caller drains its own queue and tries again).
  for (;;) {
    if (send_fd_datagram(socket_, address, length, message, fd, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
      *sent = true;
      return TMASHMEM_SUCCESS;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return TMASHMEM_SUCCESS;
    return set_system_error("sending a memory handle to PE %d over its Unix socket %s", to,
                            name.c_str());
  }
}

tmashmem_status_t FdChannel::try_receive(FdMessage* message, int* fd, bool* got) {
  *got = false;
  for (;;) {
    iovec iov;
    iov.iov_base = message;
    iov.iov_len = sizeof *message;
    // Room for a few descriptors (a stranger may send several) and the credentials.
    alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int)) + CMSG_SPACE(sizeof(ucred))];
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
    std::vector<int> fds;
    ucred cred{-1, static_cast<uid_t>(-1), static_cast<gid_t>(-1)};
    bool have_cred = false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&header); c; c = CMSG_NXTHDR(&header, c)) {
      if (c->cmsg_level != SOL_SOCKET) continue;
      if (c->cmsg_type == SCM_RIGHTS) {
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int f = -1;
          std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
          fds.push_back(f);
        }
      } else if (c->cmsg_type == SCM_CREDENTIALS) {
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        have_cred = true;
      }
    }
    auto drop = [&](const char* why) {
      for (int f : fds) ::close(f);
      refuse(cred.pid, cred.uid, why);
    };
    int slot = static_cast<size_t>(n) == sizeof *message ? message->from_pe - first_local_pe_ : -1;
    if (!have_cred) {
      drop("no sender credentials");
      continue;
    }
    if (slot < 0 || static_cast<size_t>(slot) >= peers_.size() || message->from_pe == me_) {
      drop(static_cast<size_t>(n) == sizeof *message
               ? "it claims a PE that is not a peer on this node"
               : "not a handle-exchange message");
      continue;
    }
    const Endpoint& sender = peers_[static_cast<size_t>(slot)];
    if (cred.pid != sender.pid || cred.uid != sender.uid) {
      drop(("it claims to be PE " + std::to_string(message->from_pe) + " (pid " +
            std::to_string(sender.pid) + ", uid " + std::to_string(sender.uid) + ")")
               .c_str());
      continue;
    }
    if (fds.size() != 1 || message->job_id != job_id_ || (header.msg_flags & MSG_CTRUNC)) {
      drop("malformed handle-exchange message from a PE of this job");
      continue;
    }
    *fd = fds[0];
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
