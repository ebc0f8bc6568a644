// Starting the runtime on the emulated driver, for the CPU tests.
#pragma once

#include <string>

#include "common/catch.h"
#include "common/leak_counts.h"
#include "emu/emulated_driver.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem_test {

// Small windows keep the emulated reservations cheap; the chunk is the
// emulator's 2 MiB granularity so growth across chunks is easy to reach.
inline tmashmem_init_attr_t small_heap_attr(size_t heap_max = size_t(64) << 20,
                                            size_t chunk = size_t(2) << 20) {
  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.heap_max = heap_max;
  attr.chunk_size = chunk;
  attr.bootstrap_timeout_ms = 20000;
  return attr;
}

// Installs the emulator and starts the runtime; finalizes and uninstalls at scope end.
struct EmulatedRuntime {
  explicit EmulatedRuntime(const tmashmem::emu::Options& options = tmashmem::emu::Options(),
                           tmashmem_init_attr_t attr = small_heap_attr()) {
    tmashmem::emu::install(options);
    status = tmashmem_init_attr(&attr);
    if (status != TMASHMEM_SUCCESS) message = tmashmem_last_error();
  }
  ~EmulatedRuntime() {
    if (tmashmem_initialized()) tmashmem_finalize();
    tmashmem::emu::uninstall();
  }
  tmashmem_status_t status;
  std::string message;
};

}  // namespace tmashmem_test
