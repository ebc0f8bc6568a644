// Wall-clock repetitions summarised as min / median / max, printed by rank 0.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace tmashmem_bench {

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Spread {
  double min, median, max;
};

inline Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

// The slowest PE's time for one repetition (what a job waits for).
inline double slowest(double mine) {
  double worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace tmashmem_bench
