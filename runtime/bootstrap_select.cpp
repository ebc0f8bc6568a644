// Which bootstrap tmashmem_init starts: the settings and tmashmem_init_attr_t fields
// turned into the bootstrap's plain options (bootstrap/ depends on nothing in runtime/),
// tmashmem_bootstrap_choice, and the unique-id C API.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "bootstrap/uid_id.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

namespace tmashmem {
namespace {

// The bootstraps report failures as status + message; the runtime's error adds the rank.
tmashmem_status_t report_bootstrap_error(tmashmem_status_t status, const char* message) {
  return set_error(status, "%s", message);
}

// A decimal integer setting given as text ("none" = unset, *out unchanged).
tmashmem_status_t int_setting(const char* name, const std::string& text, int min_value, int* out) {
  if (text.empty() || text == "none") return TMASHMEM_SUCCESS;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || value < min_value || value > 0x7fffffff)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s=\"%s\" is not an integer >= %d", name,
                     text.c_str(), min_value);
  *out = static_cast<int>(value);
  return TMASHMEM_SUCCESS;
}

}  // namespace

tmashmem_status_t bootstrap_options(const Config& config, const tmashmem_init_attr_t* attr,
                                    BootstrapOptions* out) {
  BootstrapOptions o;
  o.kind = config.bootstrap;
  o.timeout_ms = config.bootstrap_timeout_ms;
  o.debug = config.debug;
  o.report = report_bootstrap_error;
  o.mpi_comm = config.mpi_comm;
  if (attr) o.nccl_comm = attr->nccl_comm;
  if (attr && attr->uniqueid) {
    o.have_uid = true;
    o.uid = *attr->uniqueid;
    o.uid_source = "tmashmem_init_attr_t.uniqueid";
  } else if (!config.bootstrap_uid.empty() && config.bootstrap_uid != "none") {
    std::string why;
    if (!uid_from_text(config.bootstrap_uid, &o.uid, &why))
      return set_error(TMASHMEM_ERROR_INVALID_VALUE, "TMASHMEM_BOOTSTRAP_UID: %s", why.c_str());
    o.have_uid = true;
    o.uid_source = "TMASHMEM_BOOTSTRAP_UID";
  }
  TMASHMEM_TRY(
      int_setting("TMASHMEM_BOOTSTRAP_UID_RANK", config.bootstrap_uid_rank, 0, &o.uid_rank));
  TMASHMEM_TRY(
      int_setting("TMASHMEM_BOOTSTRAP_UID_SIZE", config.bootstrap_uid_size, 1, &o.uid_size));
  if (attr && attr->uid_size > 0) {
    o.uid_rank = attr->uid_rank;
    o.uid_size = attr->uid_size;
  }
  *out = o;
  return TMASHMEM_SUCCESS;
}

namespace {

UidAddressOptions uid_address_options(const Config& config) {
  UidAddressOptions where;
  where.ifname = config.bootstrap_uid_ifname == "auto" ? "" : config.bootstrap_uid_ifname;
  where.family = config.bootstrap_uid_family;
  where.address = config.bootstrap_uid_addr == "auto" ? "" : config.bootstrap_uid_addr;
  where.debug = config.debug;
  return where;
}

}  // namespace
}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

tmashmem_status_t tmashmem_get_uniqueid(tmashmem_uniqueid_t* id) {
  if (!id) return set_error(TMASHMEM_ERROR_INVALID_VALUE, "tmashmem_get_uniqueid: id is NULL");
  Config config;
  TMASHMEM_TRY(load_config(nullptr, &config));
  std::string why;
  if (!make_uid(uid_address_options(config), id, &why))
    return set_error(TMASHMEM_ERROR_BOOTSTRAP, "tmashmem_get_uniqueid: %s", why.c_str());
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t tmashmem_uniqueid_to_string(const tmashmem_uniqueid_t* id, char* text,
                                              size_t text_bytes) {
  if (!id || !text || text_bytes < TMASHMEM_UNIQUEID_TEXT_BYTES)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "tmashmem_uniqueid_to_string needs an id and %d bytes of text (got %zu)",
                     TMASHMEM_UNIQUEID_TEXT_BYTES, text ? text_bytes : size_t(0));
  std::string hex = uid_to_hex(*id);
  std::memcpy(text, hex.c_str(), hex.size() + 1);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t tmashmem_uniqueid_from_string(const char* text, tmashmem_uniqueid_t* id) {
  if (!text || !id)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "tmashmem_uniqueid_from_string: NULL argument");
  std::string why;
  if (!uid_from_text(text, id, &why))
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s", why.c_str());
  return TMASHMEM_SUCCESS;
}

const char* tmashmem_bootstrap_choice(void) {
  thread_local std::string text;
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  BootstrapDecision choice = rt.bootstrap_choice;
  if (!rt.initialized) {
    Config config;
    BootstrapOptions options;
    std::string saved = last_error();
    if (load_config(nullptr, &config) != TMASHMEM_SUCCESS ||
        bootstrap_options(config, nullptr, &options) != TMASHMEM_SUCCESS) {
      text = "unknown: " + last_error();
      restore_error(TMASHMEM_SUCCESS, saved);
      return text.c_str();
    }
    choice = choose_bootstrap(options);
  }
  text = std::string(bootstrap_kind_name(choice.kind)) + ": " + choice.reason;
  return text.c_str();
}

}  // extern "C"
#pragma GCC visibility pop
