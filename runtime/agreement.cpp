#include "runtime/agreement.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "runtime/error.h"

namespace tmashmem {
namespace {

// What every PE tells the others: its status and (on failure) its message, truncated to
// fit one fixed-size record, so that every PE all-gathers the same number of bytes.
constexpr size_t kVerdictBytes = 512;
struct Verdict {
  int32_t status;
  char message[kVerdictBytes - sizeof(int32_t)];
};
static_assert(sizeof(Verdict) == kVerdictBytes, "one record per PE, no padding");

}  // namespace

tmashmem_status_t agree(Bootstrap& bootstrap, tmashmem_status_t mine, const char* operation,
                        const char* step) {
  Verdict v;
  std::memset(&v, 0, sizeof v);
  v.status = mine;
  std::string saved = last_error();
  if (mine != TMASHMEM_SUCCESS) std::snprintf(v.message, sizeof v.message, "%s", saved.c_str());
  std::vector<Verdict> all(static_cast<size_t>(bootstrap.size()));
  TMASHMEM_TRY(bootstrap.allgather(&v, all.data(), sizeof v));
  if (mine != TMASHMEM_SUCCESS) return restore_error(mine, saved);
  for (int pe = 0; pe < bootstrap.size(); ++pe) {
    const Verdict& other = all[static_cast<size_t>(pe)];
    if (other.status != TMASHMEM_SUCCESS)
      return set_error(static_cast<tmashmem_status_t>(other.status),
                       "%s failed on PE %d while %s: %s", operation, pe, step, other.message);
  }
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
