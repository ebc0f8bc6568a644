// The unique id's layout and text forms, and making a new one (tmashmem_get_uniqueid).
//
// Layout (64 bytes, fixed; fields in host byte order except the port and address,
// which are in network order as in sockaddr): magic, version, address family, port,
// IPv6 scope id, address (4 or 16 bytes used), 128-bit secret from getrandom().
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/options.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

constexpr uint32_t kUidMagic = 0x49554d54u;  // "TMUI" little-endian
constexpr uint16_t kUidVersion = 1;

struct UidLayout {
  uint32_t magic;
  uint16_t version;
  uint16_t family;  // AF_INET or AF_INET6
  uint16_t port;    // network byte order
  uint16_t reserved0;
  uint32_t scope_id;  // IPv6 scope (interface index) for link-local roots
  uint8_t address[16];
  uint8_t secret[16];
  uint8_t reserved[16];
};
static_assert(sizeof(UidLayout) == TMASHMEM_UNIQUEID_BYTES, "the id must fill its public type");

UidLayout uid_layout(const tmashmem_uniqueid_t& id);

// False with *why when `id` is not a valid id of this version.
bool uid_valid(const tmashmem_uniqueid_t& id, std::string* why);

// Root address as text: "192.0.2.1:4000" or "[2001:db8::1]:4000".
std::string uid_root_text(const tmashmem_uniqueid_t& id);

std::string uid_to_hex(const tmashmem_uniqueid_t& id);
// Hex (128 digits) or base64 (88 characters, padded, or 86 without padding).
bool uid_from_text(const std::string& text, tmashmem_uniqueid_t* id, std::string* why);

// A new id: root address from `where` (uid_address.h), a port free at the time, a
// fresh secret. False with *why on failure.
bool make_uid(const UidAddressOptions& where, tmashmem_uniqueid_t* id, std::string* why);

}  // namespace tmashmem
