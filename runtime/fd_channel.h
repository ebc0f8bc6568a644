// Passing file descriptors between the PEs of one node: one Unix datagram socket
// per PE, SCM_RIGHTS for the descriptor (docs/design.md, decision 4).
//
// Only this job's PEs get in. The sockets' names come from a 128-bit nonce that
// rank 0 draws and the bootstrap distributes: "@tmashmem-<nonce>-<pe>" in the
// abstract namespace (nothing left in the file system), or, when the node's PEs are
// in different network namespaces (where abstract names do not cross) or
// TMASHMEM_FD_SOCKET=filesystem, a socket in a fresh mkdtemp directory of mode 0700
// per PE. Every PE publishes its pid and uid through the bootstrap; every received
// message carries the sender's kernel-checked credentials (SO_PASSCRED,
// SCM_CREDENTIALS) and is refused, logged with the sender's pid, unless they are
// those of the PE the message claims to come from. The PEs must therefore share a
// pid namespace. close() removes every socket and file (finalize, failed init).
//
// Contract: datagrams between two sockets arrive in order and whole; receive()
// waits at most the timeout and names the PE it was waiting for.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/non_copyable.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

class Bootstrap;

struct FdMessage {
  uint64_t job_id;    // the nonce's first word: guards against a stale socket of another job
  uint32_t sequence;  // heap growth step this descriptor belongs to
  int32_t from_pe;
  uint64_t bytes;  // size of the memory behind the descriptor
};

// The Unix socket address of `name` as FdChannel::socket_name writes it: "@..." in the
// abstract namespace, else a file-system path. False when it does not fit sun_path.
bool unix_socket_address(const std::string& name, sockaddr_un* address, socklen_t* length);

// One datagram to `address` carrying `message` and a duplicate of `fd` (SCM_RIGHTS): the
// result of sendmsg(socket, ..., flags), errno set where it is negative.
ssize_t send_fd_datagram(int socket, const sockaddr_un& address, socklen_t length,
                         const FdMessage& message, int fd, int flags);

class FdChannel : NonCopyable {
 public:
  FdChannel() = default;
  ~FdChannel() { close(); }

  // COLLECTIVE over `bs` (every PE, also those without local peers). `mode` is the
  // TMASHMEM_FD_SOCKET word: "auto", "abstract" or "filesystem". Local PEs are
  // first_local_pe .. first_local_pe + n_local - 1.
  tmashmem_status_t open(Bootstrap& bs, int first_local_pe, int n_local, const std::string& mode,
                         int debug);
  void close();
  bool is_open() const { return socket_ >= 0; }
  uint64_t job_id() const { return job_id_; }
  // "@tmashmem-<nonce>-<pe>" or the socket's path, for messages and tests.
  std::string socket_name(int pe) const;

  // Sends a duplicate of `fd` to PE `to` (the caller keeps `fd`), in one attempt: *sent
  // is false (and the status success) when the peer's queue is full; the caller then
  // drains its own queue and tries again, or PEs that all send first can deadlock.
  tmashmem_status_t try_send(int to, const FdMessage& message, int fd, bool* sent);
  // try_send until it goes out or `timeout_ms` passes. Only for a sender that is not also
  // waiting to receive (one PE hands a descriptor to the others, as the multicast object's
  // creator does); PEs that all send at once use try_send and drain between attempts.
  tmashmem_status_t send(int to, const FdMessage& message, int fd, int timeout_ms);
  // One attempt: *got is false (and the status success) when nothing is queued.
  // Messages from anyone but this job's local PEs are refused (logged) and skipped.
  tmashmem_status_t try_receive(FdMessage* message, int* fd, bool* got);
  // Receives one descriptor (the caller owns it). `waiting_for` only names whom the
  // timeout message blames.
  tmashmem_status_t receive(FdMessage* message, int* fd, int timeout_ms,
                            const std::string& waiting_for);

  // Published by every PE through the bootstrap.
  struct Endpoint {
    int32_t pid;
    uint32_t uid;
    uint64_t netns;  // inode of /proc/self/ns/net
    int32_t status;  // TMASHMEM_SUCCESS once its socket is bound
    char path[108];  // filesystem socket, "" for abstract
  };

 private:
  tmashmem_status_t bind_socket(int pe, bool filesystem);
  void refuse(pid_t pid, uid_t uid, const char* why);

  int socket_ = -1;
  int me_ = -1;
  int first_local_pe_ = 0;
  bool filesystem_ = false;
  uint64_t job_id_ = 0;
  uint8_t nonce_[16] = {};
  std::string dir_;              // filesystem mode: this PE's mkdtemp directory
  std::vector<Endpoint> peers_;  // by local slot
};

}  // namespace tmashmem
