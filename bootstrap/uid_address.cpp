#include "bootstrap/uid_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <strings.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace tmashmem {
namespace {

bool skipped_by_name(const char* name) {
  static const char* const prefixes[] = {"docker", "veth", "virbr", "tun"};
  for (const char* p : prefixes)
    if (std::strncmp(name, p, std::strlen(p)) == 0) return true;
  return false;
}

bool link_local_v6(const sockaddr* a) {
  if (a->sa_family != AF_INET6) return false;
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a);
  return IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr);
}

bool family_from_text(const std::string& text, int* family, std::string* why) {
  if (text.empty() || strcasecmp(text.c_str(), "auto") == 0)
    *family = AF_UNSPEC;
  else if (strcasecmp(text.c_str(), "AF_INET") == 0 || strcasecmp(text.c_str(), "inet") == 0 ||
           text == "4")
    *family = AF_INET;
  else if (strcasecmp(text.c_str(), "AF_INET6") == 0 || strcasecmp(text.c_str(), "inet6") == 0 ||
           text == "6")
    *family = AF_INET6;
  else {
    *why = "TMASHMEM_BOOTSTRAP_UID_FAMILY=\"" + text + "\" is not one of AF_INET, AF_INET6, auto";
    return false;
  }
  return true;
}

}  // namespace

std::string address_text(const sockaddr* address) {
  char host[INET6_ADDRSTRLEN] = "?";
  char text[INET6_ADDRSTRLEN + IF_NAMESIZE + 16];
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    std::snprintf(text, sizeof text, "%s:%u", host, ntohs(v4->sin_port));
  } else if (address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    char scope[IF_NAMESIZE + 2] = "";
    char ifname[IF_NAMESIZE] = "";
    if (v6->sin6_scope_id && if_indextoname(v6->sin6_scope_id, ifname))
      std::snprintf(scope, sizeof scope, "%%%s", ifname);
    std::snprintf(text, sizeof text, "[%s%s]:%u", host, scope, ntohs(v6->sin6_port));
  } else {
    std::snprintf(text, sizeof text, "(address family %d)", address->sa_family);
  }
  return text;
}

bool choose_root_address(const UidAddressOptions& where, SocketAddress* out, std::string* chosen_by,
                         std::string* why) {
  int family = AF_UNSPEC;
  if (!family_from_text(where.family, &family, why)) return false;
  *out = SocketAddress();
  if (!where.address.empty()) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out->storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out->storage);
    if (family != AF_INET6 && inet_pton(AF_INET, where.address.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      out->length = sizeof *v4;
    } else if (family != AF_INET &&
               inet_pton(AF_INET6, where.address.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      if (!where.ifname.empty()) v6->sin6_scope_id = if_nametoindex(where.ifname.c_str());
      out->length = sizeof *v6;
    } else {
      *why = "TMASHMEM_BOOTSTRAP_UID_ADDR=\"" + where.address + "\" is not an " +
             (family == AF_INET    ? "IPv4"
              : family == AF_INET6 ? "IPv6"
                                   : "IPv4 or IPv6") +
             " address (write it numerically, e.g. 10.0.0.1 or fd00::1)";
      return false;
    }
    *chosen_by = "TMASHMEM_BOOTSTRAP_UID_ADDR";
    return true;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    *why = std::string("getifaddrs failed: ") + std::strerror(errno);
    return false;
  }
  const bool named = !where.ifname.empty();
  const ifaddrs* best = nullptr;
  const ifaddrs* loopback = nullptr;
  std::vector<std::string> seen;
  for (int pass_family : {AF_INET, AF_INET6}) {
    if (family != AF_UNSPEC && family != pass_family) continue;
    for (const ifaddrs* i = list; i && !best; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != pass_family || !(i->ifa_flags & IFF_UP))
        continue;
      if (named) {
        if (where.ifname == i->ifa_name) best = i;
        continue;
      }
      if (skipped_by_name(i->ifa_name) || link_local_v6(i->ifa_addr)) continue;
      if (i->ifa_flags & IFF_LOOPBACK) {
        if (!loopback) loopback = i;
        continue;
      }
      best = i;
    }
    if (best) break;
  }
  if (!best && !named) best = loopback;
  if (!best) {
    freeifaddrs(list);
    *why = named ? "no interface named \"" + where.ifname + "\" is up with an address of family " +
                       (family == AF_INET    ? "AF_INET"
                        : family == AF_INET6 ? "AF_INET6"
                                             : "AF_INET or AF_INET6") +
                       " (check TMASHMEM_BOOTSTRAP_UID_IFNAME and _FAMILY)"
                 : std::string(
                       "no network interface with an address is up (set "
                       "TMASHMEM_BOOTSTRAP_UID_ADDR or _IFNAME)");
    return false;
  }
  size_t length = best->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  std::memcpy(&out->storage, best->ifa_addr, length);
  out->length = static_cast<socklen_t>(length);
  if (out->family() == AF_INET6 && link_local_v6(out->get()))
    reinterpret_cast<sockaddr_in6*>(&out->storage)->sin6_scope_id = if_nametoindex(best->ifa_name);
  *chosen_by = std::string("interface ") + best->ifa_name +
               (named              ? " (TMASHMEM_BOOTSTRAP_UID_IFNAME)"
                : best == loopback ? " (loopback: no other interface is up)"
                                   : " (first suitable interface)");
  freeifaddrs(list);
  return true;
}

}  // namespace tmashmem
