#include "common/test_util.h"

#include <chrono>
#include <cstdlib>

namespace tmashmem_test {
namespace {
bool g_skipped = false;
}

void mark_skipped(const std::string& reason) {
  g_skipped = true;
  if (mpi_rank() == 0) std::printf("SKIPPED: %s\n", reason.c_str());
}

bool consume_skip() {
  bool s = g_skipped;
  g_skipped = false;
  return s;
}

uint64_t run_seed() {
  static uint64_t seed = [] {
    uint64_t s = 0;
    if (const char* env = std::getenv("TMASHMEM_TEST_SEED")) {
      s = std::strtoull(env, nullptr, 0);
    } else {
      s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
      MPI_Bcast(&s, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    }
    if (mpi_rank() == 0) std::printf("test seed: TMASHMEM_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

}  // namespace tmashmem_test
