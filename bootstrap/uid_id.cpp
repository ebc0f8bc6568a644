#include "bootstrap/uid_id.h"

#include <netinet/in.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bootstrap/uid_address.h"

namespace tmashmem {
namespace {

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool from_base64(const std::string& text, uint8_t* out, size_t bytes) {
  size_t n = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* p = std::strchr(kBase64, c);
    if (!p || !c) return false;
    acc = (acc << 6) | static_cast<uint32_t>(p - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n == bytes) return false;
      out[n++] = static_cast<uint8_t>(acc >> bits);
    }
  }
  return n == bytes;
}

bool fill_random(uint8_t* out, size_t bytes, std::string* why) {
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(out + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = std::string("getrandom failed: ") + std::strerror(errno);
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

UidLayout uid_layout(const tmashmem_uniqueid_t& id) {
  UidLayout l;
  std::memcpy(&l, id.internal, sizeof l);
  return l;
}

bool uid_valid(const tmashmem_uniqueid_t& id, std::string* why) {
  UidLayout l = uid_layout(id);
  if (l.magic != kUidMagic) {
    *why =
        "this is not a tmashmem unique id (wrong magic): pass the bytes of tmashmem_get_uniqueid "
        "or the text of tmashmem_uniqueid_to_string unchanged";
    return false;
  }
  if (l.version != kUidVersion) {
    *why = "unique id version " + std::to_string(l.version) + ", this library reads version " +
           std::to_string(kUidVersion) + ": make the id with the same tmashmem release";
    return false;
  }
  if ((l.family != AF_INET && l.family != AF_INET6) || l.port == 0) {
    *why = "the unique id names no usable root address (family " + std::to_string(l.family) +
           ", port 0?)";
    return false;
  }
  return true;
}

std::string uid_root_text(const tmashmem_uniqueid_t& id) {
  UidLayout l = uid_layout(id);
  sockaddr_storage s{};
  if (l.family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&s);
    v4->sin_family = AF_INET;
    v4->sin_port = l.port;
    std::memcpy(&v4->sin_addr, l.address, 4);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&s);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = l.port;
    v6->sin6_scope_id = l.scope_id;
    std::memcpy(&v6->sin6_addr, l.address, 16);
  }
  return address_text(reinterpret_cast<sockaddr*>(&s));
}

std::string uid_to_hex(const tmashmem_uniqueid_t& id) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : id.internal) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

bool uid_from_text(const std::string& text, tmashmem_uniqueid_t* id, std::string* why) {
  tmashmem_uniqueid_t parsed;
  bool ok = false;
  if (text.size() == 2 * sizeof parsed.internal) {
    ok = true;
    for (size_t i = 0; i < sizeof parsed.internal && ok; ++i) {
      int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
      ok = hi >= 0 && lo >= 0;
      parsed.internal[i] = static_cast<unsigned char>(hi * 16 + lo);
    }
  }
  if (!ok) ok = from_base64(text, parsed.internal, sizeof parsed.internal);
  if (!ok) {
    *why = "the unique id text (" + std::to_string(text.size()) +
           " characters) is neither 128 hex digits nor base64 of 64 bytes";
    return false;
  }
  if (!uid_valid(parsed, why)) return false;
  *id = parsed;
  return true;
}

bool make_uid(const UidAddressOptions& where, tmashmem_uniqueid_t* id, std::string* why) {
  SocketAddress address;
  std::string chosen_by;
  if (!choose_root_address(where, &address, &chosen_by, why)) return false;
  // A port that is free now; rank 0 binds it again (SO_REUSEADDR) in tmashmem_init.
  int s = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    *why = std::string("socket() for the unique id's port: ") + std::strerror(errno);
    return false;
  }
  int on = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (::bind(s, address.get(), address.length) != 0 ||
      getsockname(s, address.get(), &address.length) != 0) {
    *why = "binding " + address_text(address.get()) + " (" + chosen_by +
           ") for the unique id: " + std::strerror(errno) + " (is it an address of this host?)";
    ::close(s);
    return false;
  }
  ::close(s);
  UidLayout l;
  std::memset(&l, 0, sizeof l);
  l.magic = kUidMagic;
  l.version = kUidVersion;
  l.family = static_cast<uint16_t>(address.family());
  if (address.family() == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address.get());
    l.port = v4->sin_port;
    std::memcpy(l.address, &v4->sin_addr, 4);
  } else {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address.get());
    l.port = v6->sin6_port;
    l.scope_id = v6->sin6_scope_id;
    std::memcpy(l.address, &v6->sin6_addr, 16);
  }
  if (!fill_random(l.secret, sizeof l.secret, why)) return false;
  std::memcpy(id->internal, &l, sizeof l);
  if (where.debug >= 1)
    std::fprintf(stderr, "[tmashmem] unique id: root %s, chosen by %s\n",
                 uid_root_text(*id).c_str(), chosen_by.c_str());
  return true;
}

}  // namespace tmashmem
