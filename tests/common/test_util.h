// Helpers shared by the CPU and GPU tests.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace tmashmem_test {

// MPI_Comm_rank or MPI_Comm_size of MPI_COMM_WORLD (`fallback` if MPI does not answer).
inline int world_query(int (*query)(MPI_Comm, int*), int fallback) {
  int value = fallback;
  query(MPI_COMM_WORLD, &value);
  return value;
}
inline int mpi_rank() { return world_query(MPI_Comm_rank, 0); }
inline int mpi_size() { return world_query(MPI_Comm_size, 1); }

// Marks the running test case as skipped (it must still pass on every PE); the
// reason is printed by rank 0. Catch2 2.13 has no SKIP, so the harness counts it.
void mark_skipped(const std::string& reason);
bool consume_skip();

// True when at least `pes` PEs run; otherwise marks the test case skipped with
// `reason` and returns false: `if (!have_pes(2, "why")) return;`.
inline bool have_pes(int pes, const std::string& reason) {
  if (mpi_size() >= pes) return true;
  mark_skipped(reason);
  return false;
}

// A generator seeded freshly every run (printed, so a failure can be replayed with
// TMASHMEM_TEST_SEED), different on every PE.
uint64_t run_seed();
inline std::mt19937_64 make_rng(uint64_t salt = 0) {
  return std::mt19937_64(run_seed() ^ (0x9E3779B97F4A7C15ull * (uint64_t(mpi_rank()) + 1)) ^ salt);
}

// True on every PE iff `ok` is true on every PE.
inline bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace tmashmem_test
