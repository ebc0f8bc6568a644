#include "runtime/config.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"

namespace tmashmem {

const std::vector<SettingInfo>& settings() {
  static const std::vector<SettingInfo> table = {
      {"TMASHMEM_HEAP_MAX", "32G",
       "bytes of symmetric heap each PE may allocate (virtual reservation; memory is created on "
       "demand)"},
      {"TMASHMEM_CHUNK_SIZE", "256M",
       "bytes of device memory created per heap growth step (rounded up to the allocation "
       "granularity)"},
      {"TMASHMEM_HANDLE_TYPE", "auto",
       "how heap memory is shared between PEs: auto (fabric if exporting one works, else "
       "posix_fd), posix_fd, fabric"},
      {"TMASHMEM_BOOTSTRAP", "auto",
       "how PEs find each other: auto (MPI when launched by mpirun or MPI is initialised, else "
       "single), mpi, single"},
      {"TMASHMEM_BOOTSTRAP_TIMEOUT_MS", "120000",
       "bound in milliseconds on every blocking bootstrap call; a missing PE becomes an error "
       "naming it"},
      {"TMASHMEM_MULTICAST", "auto",
       "NVLink multicast objects: auto, on, off (not used by this release; reported by "
       "tmashmem-info)"},
      {"TMASHMEM_STREAM_MEM_OPS", "on",
       "on: on-stream signal SET and EQ/GE/GT waits use CUDA stream memory operations where the "
       "device supports them; off (or 0): always the library's one-thread kernels"},
      {"TMASHMEM_DEBUG", "0",
       "0 quiet, 1 prints init decisions to stderr, 2 also traces heap growth"},
  };
  return table;
}

std::string setting_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool parse_size(const std::string& text, size_t* bytes) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0 || text[0] == '-') return false;
  std::string unit(end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit == "IB" || unit == "B") unit.clear();
  if (unit.size() == 3 && unit.substr(1) == "IB") unit = unit.substr(0, 1);
  if (unit.size() == 2 && unit[1] == 'B') unit = unit.substr(0, 1);
  int shift = 0;
  if (unit.empty())
    shift = 0;
  else if (unit == "K")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (unit == "T")
    shift = 40;
  else
    return false;
  if (shift && value > (~0ull >> shift)) return false;
  *bytes = static_cast<size_t>(value << shift);
  return true;
}

std::string format_size(size_t bytes) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return format_string("%zu%s", bytes, units[u]);
}

namespace {

tmashmem_status_t env_size(const char* name, size_t* out) {
  const char* v = std::getenv(name);
  if (!v || !*v) return TMASHMEM_SUCCESS;
  if (!parse_size(v, out) || *out == 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s=\"%s\" is not a size: write a positive number with an optional unit, "
                     "e.g. 64M, 2G",
                     name, v);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t env_int(const char* name, int min_value, int* out) {
  const char* v = std::getenv(name);
  if (!v || !*v) return TMASHMEM_SUCCESS;
  char* end = nullptr;
  long value = std::strtol(v, &end, 10);
  if (*end != '\0' || value < min_value || value > 0x7fffffff)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s=\"%s\" is not an integer >= %d", name, v,
                     min_value);
  *out = static_cast<int>(value);
  return TMASHMEM_SUCCESS;
}

template <typename Enum>
tmashmem_status_t env_choice(const char* name, const char* const* words, const Enum* values,
                             int count, Enum* out) {
  const char* v = std::getenv(name);
  if (!v || !*v) return TMASHMEM_SUCCESS;
  std::string accepted;
  for (int i = 0; i < count; ++i) {
    if (strcasecmp(v, words[i]) == 0) {
      *out = values[i];
      return TMASHMEM_SUCCESS;
    }
    accepted += (i ? ", " : "") + std::string(words[i]);
  }
  return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s=\"%s\" is not one of: %s", name, v,
                   accepted.c_str());
}

}  // namespace

tmashmem_status_t load_config(const tmashmem_init_attr_t* attr, Config* out) {
  Config c;
  TMASHMEM_TRY(env_size("TMASHMEM_HEAP_MAX", &c.heap_max));
  TMASHMEM_TRY(env_size("TMASHMEM_CHUNK_SIZE", &c.chunk_size));
  {
    static const char* const words[] = {"auto", "posix_fd", "fabric"};
    static const tmashmem_handle_type_t values[] = {TMASHMEM_HANDLE_AUTO, TMASHMEM_HANDLE_POSIX_FD,
                                                    TMASHMEM_HANDLE_FABRIC};
    TMASHMEM_TRY(env_choice("TMASHMEM_HANDLE_TYPE", words, values, 3, &c.handle_type));
  }
  {
    static const char* const words[] = {"auto", "mpi", "single"};
    static const tmashmem_bootstrap_kind_t values[] = {
        TMASHMEM_BOOTSTRAP_AUTO, TMASHMEM_BOOTSTRAP_MPI, TMASHMEM_BOOTSTRAP_SINGLE};
    TMASHMEM_TRY(env_choice("TMASHMEM_BOOTSTRAP", words, values, 3, &c.bootstrap));
  }
  {
    static const char* const words[] = {"auto", "on", "off"};
    static const char* const values[] = {"auto", "on", "off"};
    const char* m = "auto";
    TMASHMEM_TRY(env_choice("TMASHMEM_MULTICAST", words, values, 3, &m));
    c.multicast = m;
  }
  {
    static const char* const words[] = {"on", "off", "1", "0"};
    static const bool values[] = {true, false, true, false};
    TMASHMEM_TRY(env_choice("TMASHMEM_STREAM_MEM_OPS", words, values, 4, &c.stream_mem_ops));
  }
  TMASHMEM_TRY(env_int("TMASHMEM_BOOTSTRAP_TIMEOUT_MS", 1, &c.bootstrap_timeout_ms));
  TMASHMEM_TRY(env_int("TMASHMEM_DEBUG", 0, &c.debug));
  if (attr) {
    if (attr->version != TMASHMEM_INIT_ATTR_VERSION)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "tmashmem_init_attr_t.version is %u, this library expects %u: fill the "
                       "struct with tmashmem_init_attr_set_defaults() first",
                       attr->version, TMASHMEM_INIT_ATTR_VERSION);
    if (attr->bootstrap != TMASHMEM_BOOTSTRAP_AUTO) c.bootstrap = attr->bootstrap;
    if (attr->mpi_comm) c.mpi_comm = attr->mpi_comm;
    if (attr->heap_max) c.heap_max = attr->heap_max;
    if (attr->chunk_size) c.chunk_size = attr->chunk_size;
    if (attr->handle_type != TMASHMEM_HANDLE_AUTO) c.handle_type = attr->handle_type;
    if (attr->bootstrap_timeout_ms > 0) c.bootstrap_timeout_ms = attr->bootstrap_timeout_ms;
    if (attr->debug > 0) c.debug = attr->debug;
    if (attr->bootstrap < TMASHMEM_BOOTSTRAP_AUTO || attr->bootstrap > TMASHMEM_BOOTSTRAP_SINGLE)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "tmashmem_init_attr_t.bootstrap = %d is not "
                       "a tmashmem_bootstrap_kind_t",
                       static_cast<int>(attr->bootstrap));
    if (attr->handle_type < TMASHMEM_HANDLE_AUTO || attr->handle_type > TMASHMEM_HANDLE_FABRIC)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "tmashmem_init_attr_t.handle_type = %d is "
                       "not a tmashmem_handle_type_t",
                       static_cast<int>(attr->handle_type));
  }
  *out = c;
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
