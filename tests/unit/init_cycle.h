// One init/finalize cycle of the cycle tests (test_bootstrap_cycles over MPI,
// test_bootstrap_uid over the unique-id bootstrap): the handle-exchange socket kind
// alternates, init is timed, a malloc grows the heap, every PE writes one byte into every
// PE's copy and reads all of its own back, then finalize. leaked_in_cycle is the leak
// check both tests run after each cycle.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/env_guard.h"
#include "common/leak_counts.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem_test {

// Returns the number of failures (0: init, growth, every byte and finalize held), each one
// printed; appends init's time to *init_ms.
inline int run_init_cycle(int cycle, tmashmem_init_attr_t attr, std::vector<double>* init_ms) {
  const EnvGuard socket_kind("TMASHMEM_FD_SOCKET", cycle % 2 ? "filesystem" : "abstract");
  const auto t0 = std::chrono::steady_clock::now();
  const tmashmem_status_t st = tmashmem_init_attr(&attr);
  init_ms->push_back(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (st != TMASHMEM_SUCCESS) {
    std::printf("cycle %d: init: %s\n", cycle, tmashmem_last_error());
    return 1;
  }
  int failures = 0;
  const int n = tmashmem_n_pes(), me = tmashmem_my_pe();
  auto* p = static_cast<uint8_t*>(tmashmem_malloc((size_t(3) << 20) * size_t(n)));  // growth
  if (!p) {
    std::printf("cycle %d: the growing malloc failed: %s\n", cycle, tmashmem_last_error());
    ++failures;
  } else {
    for (int pe = 0; pe < n; ++pe)
      static_cast<uint8_t*>(tmashmem_ptr(p, pe))[me] = static_cast<uint8_t>(cycle * 7 + me);
    tmashmem_barrier_all();
    for (int pe = 0; pe < n; ++pe)
      if (p[pe] != static_cast<uint8_t>(cycle * 7 + pe)) {
        std::printf("cycle %d: PE %d's byte is %d, expected %d\n", cycle, pe, p[pe],
                    static_cast<uint8_t>(cycle * 7 + pe));
        ++failures;
      }
  }
  if (tmashmem_finalize() != TMASHMEM_SUCCESS) {
    std::printf("cycle %d: finalize: %s\n", cycle, tmashmem_last_error());
    ++failures;
  }
  return failures;
}

// 1, with a line, when this process's fds or threads differ from the counts taken before
// the cycles (`fds`, `threads`); else 0.
inline int leaked_in_cycle(int cycle, int fds, int threads) {
  if (count_fds() == fds && count_threads() == threads) return 0;
  std::printf("cycle %d: %d fds (before %d), %d threads (before %d)\n", cycle, count_fds(), fds,
              count_threads(), threads);
  return 1;
}

}  // namespace tmashmem_test
