#include <cstring>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/runtime.h"

namespace tmashmem {
namespace {

constexpr int kMaxArgs = 6;

// What one PE says about the collective call it is making.
struct CallRecord {
  char call[40];
  uint32_t n_args;
  uint32_t pad;
  uint64_t args[kMaxArgs];
};

}  // namespace

std::string describe_differences(const std::vector<uint64_t>& values) {
  std::string differing;
  int count = 0;
  for (size_t pe = 1; pe < values.size(); ++pe) {
    if (values[pe] == values[0]) continue;
    if (++count <= 4)
      differing += format_string("%s%llu on PE %zu", count > 1 ? ", " : "",
                                 static_cast<unsigned long long>(values[pe]), pe);
  }
  if (count > 4) differing += format_string(" and %d more PEs", count - 4);
  return differing;
}

tmashmem_status_t check_symmetric(const char* call, const std::vector<NamedArg>& args) {
  Runtime& rt = runtime();
  Bootstrap& bs = *rt.bootstrap;
  CallRecord mine;
  std::memset(&mine, 0, sizeof mine);
  std::snprintf(mine.call, sizeof mine.call, "%s", call);
  const NamedArg* named = args.data();
  mine.n_args = static_cast<uint32_t>(args.size() < kMaxArgs ? args.size() : kMaxArgs);
  for (uint32_t i = 0; i < mine.n_args; ++i) mine.args[i] = named[i].second;
  std::vector<CallRecord> all(static_cast<size_t>(bs.size()));
  TMASHMEM_TRY(bs.allgather(&mine, all.data(), sizeof mine));

  // Every PE runs the same comparison on the same data, so all reach the same verdict.
  const CallRecord& ref = all[0];
  for (int pe = 1; pe < bs.size(); ++pe) {
    const CallRecord& other = all[static_cast<size_t>(pe)];
    if (std::strncmp(other.call, ref.call, sizeof ref.call) != 0)
      return set_error(TMASHMEM_ERROR_SYMMETRY,
                       "collective calls out of step: PE 0 called %s while PE %d called %s; every "
                       "PE must make the same collective calls in the same order",
                       ref.call, pe, other.call);
  }
  for (uint32_t i = 0; i < mine.n_args; ++i) {
    std::vector<uint64_t> values;
    for (const CallRecord& r : all) values.push_back(r.args[i]);
    std::string differing = describe_differences(values);
    if (!differing.empty())
      return set_error(TMASHMEM_ERROR_SYMMETRY,
                       "%s is collective but its arguments differ: %s = %llu on PE 0 but %s; "
                       "every PE must pass the same value",
                       call, named[i].first, static_cast<unsigned long long>(ref.args[i]),
                       differing.c_str());
  }
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
