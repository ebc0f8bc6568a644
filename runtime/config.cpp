#include "runtime/config.h"

#include <strings.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "runtime/error.h"

namespace tmashmem {

std::string setting_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool parse_size(const std::string& text, size_t* bytes) {
  // Digits first: strtoull would skip leading white space and take a sign (" -5" wraps to
  // 2^64 - 5), neither of which the documented form has.
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0) return false;
  std::string unit(end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit == "B") unit.clear();  // "iB" alone is no unit
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
  if (!parse_size(text, &bytes) || !valid(bytes)) return false;
  *out = bytes;
  return true;
}

std::string Size::expected() {
  return "a size: write a positive number with an optional unit, e.g. 64M, 2G";
}

std::string SizeOrZero::expected() {
  return "a size or 0: write a number with an optional unit, e.g. 16K, or 0 for off";
}

bool equal_ignoring_case(const char* a, const char* b) { return strcasecmp(a, b) == 0; }

bool parse_int(const char* text, long min_value, long max_value, long* out) {
  // An optional '-' and digits: strtol alone would also take white space and '+'.
  const char* digits = text[0] == '-' ? text + 1 : text;
  if (!std::isdigit(static_cast<unsigned char>(digits[0]))) return false;
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

template <typename Type>
bool canonical_setting(const char* text, std::string* out) {
  typename Type::type value{};
  if (!Type::parse(text, &value)) return false;
  *out = Type::format(value);
  return true;
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

// The row of each setting by its Config field: setting::heap_max::type is Size, ...
namespace setting {
#define TMASHMEM_SETTING_ROW(field_name, env_name, Type, scope, default_text, help) \
  struct field_name {                                                               \
    using type = Type;                                                              \
    static constexpr const char* name = env_name;                                   \
  };
TMASHMEM_SETTINGS(TMASHMEM_SETTING_ROW)
#undef TMASHMEM_SETTING_ROW
}  // namespace setting

// The tmashmem_init_attr_t fields that override a setting, each named like its Config
// field. Zero (or AUTO, which is 0) leaves the environment's value; anything else must be
// valid by the setting's own rule (Type::valid), exactly as the environment's text must.
#define TMASHMEM_ATTR_SETTINGS(X) \
  X(bootstrap) X(heap_max) X(chunk_size) X(handle_type) X(bootstrap_timeout_ms) X(debug)

// `value` as the caller stored it, for messages (enum fields hold whatever int C stored).
template <typename Field>
long long stored_value(const Field& value) {
  if constexpr (std::is_enum_v<Field>) {
    int32_t raw = 0;
    static_assert(sizeof raw == sizeof value, "C enums are int-sized");
    std::memcpy(&raw, &value, sizeof raw);
    return raw;
  } else {
    return static_cast<long long>(value);
  }
}

template <typename Row, typename Field>
tmashmem_status_t from_attr(const char* field, const Field& value, typename Row::type::type* out) {
  const long long stored = stored_value(value);
  if (stored == 0) return TMASHMEM_SUCCESS;
  bool ok = false;
  if constexpr (std::is_enum_v<Field>) {
    // Compared as ints: an enum object holding a value outside its enumerators is not
    // something to read as the enum.
    for (const auto& choice : Row::type::choices)
      ok = ok || stored == static_cast<long long>(choice.value);
  } else {
    ok = value <= std::numeric_limits<typename Row::type::type>::max() &&
         Row::type::valid(static_cast<typename Row::type::type>(value));
  }
  if (!ok)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "tmashmem_init_attr_t.%s = %s is not valid: like %s it must be %s (0 keeps "
                     "the environment's value or the default)",
                     field,
                     std::is_unsigned_v<Field>
                         ? std::to_string(static_cast<uint64_t>(value)).c_str()
                         : std::to_string(stored).c_str(),
                     Row::name, Row::type::expected().c_str());
  *out = static_cast<typename Row::type::type>(value);
  return TMASHMEM_SUCCESS;
}

}  // namespace

Config::Config() {
  // The defaults are the table's text, parsed as the environment would be
  // (test_config checks that every default parses).
#define TMASHMEM_DEFAULT(field, name, Type, scope, default_text, help) \
  Type::parse(default_text, &field);
  TMASHMEM_SETTINGS(TMASHMEM_DEFAULT)
#undef TMASHMEM_DEFAULT
}

const std::vector<SettingInfo>& settings() {
  static const std::vector<SettingInfo> table = {
#define TMASHMEM_SETTING_INFO(field, name, Type, scope, default_text, help) \
  {name,                                                                    \
   default_text,                                                            \
   help,                                                                    \
   &valid_setting<Type>,                                                    \
   &Type::expected,                                                         \
   scope,                                                                   \
   &canonical_setting<Type>},
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

namespace {

// `field` when tmashmem_init_attr_t has a field of that name (TMASHMEM_ATTR_SETTINGS), else
// nullptr.
const char* attr_field(const char* field) {
#define TMASHMEM_ATTR_NAME(name) #name,
  static const char* const names[] = {TMASHMEM_ATTR_SETTINGS(TMASHMEM_ATTR_NAME)};
#undef TMASHMEM_ATTR_NAME
  for (const char* name : names)
    if (std::strcmp(name, field) == 0) return name;
  return nullptr;
}

}  // namespace

std::vector<JobWideSetting> job_wide_settings(const Config& config) {
  std::vector<JobWideSetting> out;
#define TMASHMEM_JOB_WIDE(field, name, Type, scope, default_text, help) \
  if (scope == Scope::Job) out.push_back({name, attr_field(#field), Type::format(config.field)});
  TMASHMEM_SETTINGS(TMASHMEM_JOB_WIDE)
#undef TMASHMEM_JOB_WIDE
  return out;
}

tmashmem_status_t load_config(const tmashmem_init_attr_t* attr, Config* out) {
  Config c;
#define TMASHMEM_FROM_ENVIRONMENT(field, name, Type, scope, default_text, help) \
  TMASHMEM_TRY(from_environment<Type>(name, &c.field));
  TMASHMEM_SETTINGS(TMASHMEM_FROM_ENVIRONMENT)
#undef TMASHMEM_FROM_ENVIRONMENT
  if (attr) {
    if (attr->version != TMASHMEM_INIT_ATTR_VERSION)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "tmashmem_init_attr_t.version is %u, this library expects %u: fill the "
                       "struct with tmashmem_init_attr_set_defaults() first",
                       attr->version, TMASHMEM_INIT_ATTR_VERSION);
    for (size_t i = 0; i < sizeof attr->reserved / sizeof attr->reserved[0]; ++i)
      if (attr->reserved[i] != 0)
        return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                         "tmashmem_init_attr_t.reserved[%zu] = %llu is not 0: fill the struct "
                         "with tmashmem_init_attr_set_defaults() and set only documented fields",
                         i, static_cast<unsigned long long>(attr->reserved[i]));
#define TMASHMEM_FROM_ATTR(field) \
  TMASHMEM_TRY(from_attr<setting::field>(#field, attr->field, &c.field));
    TMASHMEM_ATTR_SETTINGS(TMASHMEM_FROM_ATTR)
#undef TMASHMEM_FROM_ATTR
    if (attr->mpi_comm) c.mpi_comm = attr->mpi_comm;
  }
  *out = c;
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
