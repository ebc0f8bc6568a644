// Passing file descriptors between the PEs of one node: one Unix datagram socket
// per PE in the abstract namespace (nothing left in the file system, works in
// containers that share a network namespace), SCM_RIGHTS for the descriptor.
//
// Contract: datagrams between two sockets arrive in order and whole; receive()
// waits at most the timeout and names the PE it was waiting for.
#pragma once

#include <cstdint>
#include <string>

#include "tmashmem/tmashmem.h"

namespace tmashmem {

struct FdMessage {
  uint64_t job_id;    // guards against a stale socket of another job
  uint32_t sequence;  // heap growth step this descriptor belongs to
  int32_t from_pe;
  uint64_t bytes;  // size of the memory behind the descriptor
};

class FdChannel {
 public:
  FdChannel() = default;
  ~FdChannel() { close(); }
  FdChannel(const FdChannel&) = delete;
  FdChannel& operator=(const FdChannel&) = delete;

  // Binds this PE's socket; `job_id` is the same on all PEs of a job.
  tmashmem_status_t open(uint64_t job_id, int pe);
  void close();
  bool is_open() const { return socket_ >= 0; }

  // Sends a duplicate of `fd` to PE `to` (the caller keeps `fd`), in one attempt: *sent
  // is false (and the status success) when the peer's queue is full; the caller then
  // drains its own queue and tries again, or PEs that all send first can deadlock.
  tmashmem_status_t try_send(int to, const FdMessage& message, int fd, bool* sent);
  // One attempt: *got is false (and the status success) when nothing is queued.
  tmashmem_status_t try_receive(FdMessage* message, int* fd, bool* got);
  // Receives one descriptor (the caller owns it). `waiting_for` only names whom the
  // timeout message blames.
  tmashmem_status_t receive(FdMessage* message, int* fd, int timeout_ms,
                            const std::string& waiting_for);

 private:
  int socket_ = -1;
  uint64_t job_id_ = 0;
};

}  // namespace tmashmem
