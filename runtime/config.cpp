#include "runtime/config.h"

#include <strings.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"

namespace tmashmem {

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

bool Size::parse(const char* text, size_t* out) {
  size_t bytes = 0;
  if (!parse_size(text, &bytes) || bytes == 0) return false;
  *out = bytes;
  return true;
}

std::string Size::expected() {
  return "a size: write a positive number with an optional unit, e.g. 64M, 2G";
}

bool equal_ignoring_case(const char* a, const char* b) { return strcasecmp(a, b) == 0; }

bool parse_int(const char* text, long min_value, long max_value, long* out) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || value < min_value || value > max_value)
    return false;
  *out = value;
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

template <typename Type>
bool valid_setting(const char* text) {
  typename Type::type value{};
  return Type::parse(text, &value);
}

// `name` from the environment into *out; unset or empty keeps *out.
template <typename Type>
tmashmem_status_t from_environment(const char* name, typename Type::type* out) {
  const char* v = std::getenv(name);
  if (!v || !*v) return TMASHMEM_SUCCESS;
  if (!Type::parse(v, out))
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s=\"%s\" is not %s", name, v,
                     Type::expected().c_str());
  return TMASHMEM_SUCCESS;
}

}  // namespace

Config::Config() {
  // The defaults are the table's text, parsed as the environment would be
  // (test_config checks that every default parses).
#define TMASHMEM_DEFAULT(field, name, Type, default_text, help) Type::parse(default_text, &field);
  TMASHMEM_SETTINGS(TMASHMEM_DEFAULT)
#undef TMASHMEM_DEFAULT
}

const std::vector<SettingInfo>& settings() {
  static const std::vector<SettingInfo> table = {
#define TMASHMEM_SETTING_INFO(field, name, Type, default_text, help) \
  {name, default_text, help, &valid_setting<Type>, &Type::expected},
      TMASHMEM_SETTINGS(TMASHMEM_SETTING_INFO)
#undef TMASHMEM_SETTING_INFO
  };
  return table;
}

std::string settings_markdown() {
  std::string out = "| setting | default | meaning |\n| --- | --- | --- |\n";
  for (const SettingInfo& s : settings())
    out += format_string("| `%s` | %s | %s |\n", s.name, s.default_value, s.help);
  return out;
}

tmashmem_status_t load_config(const tmashmem_init_attr_t* attr, Config* out) {
  Config c;
#define TMASHMEM_FROM_ENVIRONMENT(field, name, Type, default_text, help) \
  TMASHMEM_TRY(from_environment<Type>(name, &c.field));
  TMASHMEM_SETTINGS(TMASHMEM_FROM_ENVIRONMENT)
#undef TMASHMEM_FROM_ENVIRONMENT
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
    if (attr->bootstrap < TMASHMEM_BOOTSTRAP_AUTO || attr->bootstrap > TMASHMEM_BOOTSTRAP_NCCL)
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
