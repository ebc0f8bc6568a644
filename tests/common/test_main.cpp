// main() for every test program, CPU or GPU, run alone or under mpiexec.
//
// Each PE runs the same test cases in the same order (they make collective calls).
// A test case passes only if it passed on every PE: per-case results are combined
// with MPI_Allreduce, rank 0 prints "N passed, N failed, N skipped", and every PE
// exits non-zero if any case failed anywhere.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
using ListenerBase = Catch::EventListenerBase;
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
using ListenerBase = Catch::TestEventListenerBase;
#endif

#include "common/test_util.h"

namespace {

std::vector<std::string> g_names;
std::vector<int> g_outcome;  // 1 passed, 0 failed, 2 skipped

struct OutcomeListener : ListenerBase {
  using ListenerBase::ListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
#if __has_include(<catch2/catch_all.hpp>)
    g_names.push_back(stats.testInfo->name);  // Catch2 3: a pointer
#else
    g_names.push_back(stats.testInfo.name);   // Catch2 2: a reference
#endif
    bool failed = stats.totals.assertions.failed > 0 || stats.totals.testCases.failed > 0;
    g_outcome.push_back(failed ? 0 : (tmashmem_test::consume_skip() ? 2 : 1));
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(OutcomeListener)

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  tmashmem_test::run_seed();  // collective: fixes and prints the seed before any test
  Catch::Session session;
  int rc = session.applyCommandLine(argc, argv);
  int catch_failed = rc != 0 ? 1 : session.run();

  // Every PE ran the same cases; combine them case by case (min: any failure wins).
  int n = static_cast<int>(g_outcome.size()), n_max = 0, n_min = 0;
  MPI_Allreduce(&n, &n_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&n, &n_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  std::vector<int> local(static_cast<size_t>(n_max), 0), combined(static_cast<size_t>(n_max), 0);
  for (int i = 0; i < n; ++i) local[static_cast<size_t>(i)] = g_outcome[static_cast<size_t>(i)] == 0 ? 0 : g_outcome[static_cast<size_t>(i)];
  MPI_Allreduce(local.data(), combined.data(), n_max, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int passed = 0, failed = 0, skipped = 0;
  for (int i = 0; i < n_max; ++i) {
    int v = combined[static_cast<size_t>(i)];
    if (v == 0) ++failed;
    else if (v == 2) ++skipped;
    else ++passed;
  }
  int any_catch_failure = 0;
  MPI_Allreduce(&catch_failed, &any_catch_failure, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  bool bad = failed > 0 || any_catch_failure != 0 || n_max != n_min || n_max == 0;
  if (rank == 0) {
    for (int i = 0; i < n_max && i < n; ++i)
      if (combined[static_cast<size_t>(i)] == 0)
        std::printf("FAILED (on at least one of %d PEs): %s\n", size, g_names[static_cast<size_t>(i)].c_str());
    if (n_max != n_min) std::printf("PEs ran different numbers of test cases (%d..%d)\n", n_min, n_max);
    std::printf("%s: %d passed, %d failed, %d skipped (%d PEs)\n", argv[0], passed, failed, skipped, size);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return bad ? 1 : 0;
}
