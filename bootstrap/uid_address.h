// Choosing the unique-id root's address on this host.
//
// An explicit address wins (it must belong to this host, checked when rank 0 binds).
// Otherwise the interfaces that are up are considered in getifaddrs order, IPv4
// before IPv6 under family "auto": with an interface name, only that interface (any
// kind, loopback and link-local included); without one, docker*, veth*, virbr* and
// tun* interfaces and link-local IPv6 addresses are skipped, and loopback is taken
// only when nothing else is left.
#pragma once

#include <sys/socket.h>

#include <string>

#include "bootstrap/options.h"

namespace tmashmem {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
};

// "192.0.2.1:4000", "[fe80::1%eth0]:4000".
std::string address_text(const sockaddr* address);

// Picks the address (port 0) per the rules above; *chosen_by says which rule chose it.
bool choose_root_address(const UidAddressOptions& where, SocketAddress* out, std::string* chosen_by,
                         std::string* why);

}  // namespace tmashmem
