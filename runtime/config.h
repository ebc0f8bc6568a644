// Settings: the Config every part of the runtime reads, filled from the table of
// runtime/settings.h (environment first, tmashmem_init_attr fields on top).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/settings.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

struct Config {
  // One field per row of TMASHMEM_SETTINGS, at the row's default.
#define TMASHMEM_CONFIG_FIELD(field, name, Type, scope, default_text, help) Type::type field{};
  TMASHMEM_SETTINGS(TMASHMEM_CONFIG_FIELD)
#undef TMASHMEM_CONFIG_FIELD
  const void* mpi_comm = nullptr;  // attr only

  Config();
};

struct SettingInfo {
  const char* name;           // TMASHMEM_...
  const char* default_value;  // as the user would write it
  const char* help;           // one line
  bool (*valid)(const char* text);
  std::string (*expected)();  // what valid() accepts, e.g. "one of: auto, on, off"
  Scope scope;                // Job: every PE of the job must have the same value
  // Parses `text` as valid() does and writes the value's canonical text (what
  // tmashmem-info and the agreement messages show), which parses back to the same value.
  bool (*canonical)(const char* text, std::string* out);
};

// Every setting, in the order tmashmem-info prints them (the table's order).
const std::vector<SettingInfo>& settings();

// Current value of a setting as text ("" when unset), for tmashmem-info.
std::string setting_value(const char* name);

// The settings as the Markdown table README.md carries (header, separator, one row each).
std::string settings_markdown();

// A Scope::Job setting of a Config: its variable, its tmashmem_init_attr_t field (nullptr
// where it has none), its value's canonical text.
struct JobWideSetting {
  const char* name;
  const char* attr_field;
  std::string value;
};
// The Scope::Job settings of `config`, in table order.
std::vector<JobWideSetting> job_wide_settings(const Config& config);

// Environment first, then `attr` (may be NULL) on top. Errors name the variable,
// the value and the accepted forms.
tmashmem_status_t load_config(const tmashmem_init_attr_t* attr, Config* out);

}  // namespace tmashmem
