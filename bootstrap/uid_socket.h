// Non-blocking TCP with deadlines for the unique-id bootstrap: every blocking step
// (connect, send, receive) waits in poll() for at most the time left.
#pragma once

#include <chrono>
#include <string>

#include "bootstrap/uid_address.h"

namespace tmashmem {

using Deadline = std::chrono::steady_clock::time_point;
inline Deadline deadline_after(int ms) {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
}
int ms_left(Deadline deadline);

enum class IoResult { kOk, kTimeout, kClosed, kError };

// A listening socket on `address` (SO_REUSEADDR, non-blocking); -1 with *why.
int listen_on(const SocketAddress& address, int backlog, std::string* why);
// Connects, retrying refused attempts (the root may not listen yet) until `deadline`.
// Returns the non-blocking socket, or -1 with *result and *why.
int connect_until(const SocketAddress& address, Deadline deadline, IoResult* result,
                  std::string* why);
// `more`: more bytes follow at once (MSG_MORE), so a frame's header and payload leave
// in one segment.
IoResult send_all(int fd, const void* data, size_t bytes, Deadline deadline, std::string* why,
                  bool more = false);
IoResult recv_all(int fd, void* data, size_t bytes, Deadline deadline, std::string* why);
// Reads what is available into [*have, want) without waiting: kOk once complete,
// kTimeout while more is to come.
IoResult recv_some(int fd, void* data, size_t want, size_t* have, std::string* why);
std::string peer_text(int fd);

}  // namespace tmashmem
