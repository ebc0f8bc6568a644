// Settings: every TMASHMEM_* environment variable with its default and help text.
// tmashmem_init_attr fields override the environment; tmashmem-info prints the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tmashmem/tmashmem.h"

namespace tmashmem {

struct Config {
  size_t heap_max = size_t(32) << 30;                             // TMASHMEM_HEAP_MAX
  size_t chunk_size = size_t(256) << 20;                          // TMASHMEM_CHUNK_SIZE
  tmashmem_handle_type_t handle_type = TMASHMEM_HANDLE_AUTO;      // TMASHMEM_HANDLE_TYPE
  tmashmem_bootstrap_kind_t bootstrap = TMASHMEM_BOOTSTRAP_AUTO;  // TMASHMEM_BOOTSTRAP
  int bootstrap_timeout_ms = 120000;                              // TMASHMEM_BOOTSTRAP_TIMEOUT_MS
  int debug = 0;                                                  // TMASHMEM_DEBUG
  std::string multicast = "auto";  // TMASHMEM_MULTICAST (gate for a later release)
  bool stream_mem_ops = true;      // TMASHMEM_STREAM_MEM_OPS (off: on-stream signals use kernels)
  const void* mpi_comm = nullptr;  // attr only
};

struct SettingInfo {
  const char* name;           // TMASHMEM_...
  const char* default_value;  // as the user would write it
  const char* help;           // one line
};

// Every setting, in the order tmashmem-info prints them.
const std::vector<SettingInfo>& settings();

// Current value of a setting as text ("" when unset), for tmashmem-info.
std::string setting_value(const char* name);

// Environment first, then `attr` (may be NULL) on top. Errors name the variable,
// the value and the accepted forms.
tmashmem_status_t load_config(const tmashmem_init_attr_t* attr, Config* out);

// "64M", "2G", "4096", "1T" (binary units) -> bytes.
bool parse_size(const std::string& text, size_t* bytes);
std::string format_size(size_t bytes);

}  // namespace tmashmem
