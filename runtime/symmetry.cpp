// The symmetry check of every collective call (docs/design.md, decision 5): the call's
// name and all of its named arguments, compared across PEs.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/runtime.h"

namespace tmashmem {
namespace {

// Arguments carried in the first all-gather; a call with more sends the rest in a second
// one, which every PE makes because every PE saw the same count in the first.
constexpr uint32_t kInlineArgs = 8;
constexpr size_t kCallNameBytes = 64;

// What one PE says about the collective call it is making.
struct CallRecord {
  char call[kCallNameBytes];
  uint32_t n_args;
  uint32_t pad;
  uint64_t args[kInlineArgs];
};

// Values of argument `i` by PE, from the inline part or the rest.
uint64_t argument(const std::vector<CallRecord>& heads, const std::vector<uint64_t>& rest,
                  uint32_t n_rest, size_t pe, uint32_t i) {
  return i < kInlineArgs ? heads[pe].args[i] : rest[pe * n_rest + (i - kInlineArgs)];
}

}  // namespace

std::string describe_differences(const std::vector<std::string>& values) {
  std::string differing;
  int count = 0;
  for (size_t pe = 1; pe < values.size(); ++pe) {
    if (values[pe] == values[0]) continue;
    if (++count <= 4)
      differing += format_string("%s%s on PE %zu", count > 1 ? ", " : "", values[pe].c_str(), pe);
  }
  if (count > 4) differing += format_string(" and %d more PEs", count - 4);
  return differing;
}

std::string describe_differences(const std::vector<uint64_t>& values) {
  std::vector<std::string> text;
  for (uint64_t v : values) text.push_back(std::to_string(v));
  return describe_differences(text);
}

tmashmem_status_t check_settings_agree(Bootstrap& bs, const Config& config) {
  // One fixed-size text cell per Scope::Job setting: every PE gathers the same bytes.
  constexpr size_t kCell = 48;
  const std::vector<JobWideSetting> mine = job_wide_settings(config);
  const size_t n_pes = static_cast<size_t>(bs.size());
  std::vector<char> cells(mine.size() * kCell, '\0');
  for (size_t i = 0; i < mine.size(); ++i)
    std::snprintf(&cells[i * kCell], kCell, "%s", mine[i].value.c_str());
  std::vector<char> all(n_pes * cells.size());
  TMASHMEM_TRY(bs.allgather(cells.data(), all.data(), cells.size()));
  for (size_t i = 0; i < mine.size(); ++i) {
    std::vector<std::string> values;
    for (size_t pe = 0; pe < n_pes; ++pe)
      values.emplace_back(&all[pe * cells.size() + i * kCell]);
    const std::string differing = describe_differences(values);
    if (differing.empty()) continue;
    const std::string attr =
        mine[i].attr_field
            ? format_string(" (and tmashmem_init_attr_t.%s, where set)", mine[i].attr_field)
            : std::string();
    return set_error(TMASHMEM_ERROR_SYMMETRY,
                     "tmashmem_init: %s must be the same on every PE, but it is %s on PE 0 and "
                     "%s; give every PE the same %s%s",
                     mine[i].name, values[0].c_str(), differing.c_str(), mine[i].name,
                     attr.c_str());
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t check_symmetric(const char* call, const std::vector<NamedArg>& args,
                                  const char* fix) {
  Runtime& rt = runtime();
  Bootstrap& bs = *rt.bootstrap;
  const size_t n_pes = static_cast<size_t>(bs.size());
  const uint32_t n_args = static_cast<uint32_t>(args.size());
  CallRecord mine;
  std::memset(&mine, 0, sizeof mine);
  std::snprintf(mine.call, sizeof mine.call, "%s", call);
  mine.n_args = n_args;
  for (uint32_t i = 0; i < n_args && i < kInlineArgs; ++i) mine.args[i] = args[i].second;
  std::vector<CallRecord> heads(n_pes);
  TMASHMEM_TRY(bs.allgather(&mine, heads.data(), sizeof mine));

  // Every PE runs the same comparison on the same data, so all reach the same verdict.
  const CallRecord& ref = heads[0];
  for (size_t pe = 1; pe < n_pes; ++pe) {
    const CallRecord& other = heads[pe];
    if (std::strncmp(other.call, ref.call, sizeof ref.call) != 0 || other.n_args != ref.n_args)
      return set_error(TMASHMEM_ERROR_SYMMETRY,
                       "collective calls out of step: PE 0 called %s (%u arguments) while PE %zu "
                       "called %s (%u arguments); every PE must make the same collective calls in "
                       "the same order",
                       ref.call, ref.n_args, pe, other.call, other.n_args);
  }
  const uint32_t n_rest = n_args > kInlineArgs ? n_args - kInlineArgs : 0;
  std::vector<uint64_t> rest(n_pes * n_rest);
  if (n_rest) {
    std::vector<uint64_t> my_rest;
    for (uint32_t i = kInlineArgs; i < n_args; ++i) my_rest.push_back(args[i].second);
    TMASHMEM_TRY(bs.allgather(my_rest.data(), rest.data(), n_rest * sizeof(uint64_t)));
  }
  for (uint32_t i = 0; i < n_args; ++i) {
    std::vector<uint64_t> values;
    for (size_t pe = 0; pe < n_pes; ++pe) values.push_back(argument(heads, rest, n_rest, pe, i));
    const std::string differing = describe_differences(values);
    if (!differing.empty())
      return set_error(TMASHMEM_ERROR_SYMMETRY,
                       "%s is collective but its arguments differ: %s = %llu on PE 0 but %s; %s",
                       call, args[i].first.c_str(), static_cast<unsigned long long>(values[0]),
                       differing.c_str(), fix ? fix : "every PE must pass the same value");
  }
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
