// The timeout tests' shared set-up: the last PE stays away (late to init, or never making a
// collective call) and the others must name exactly it. Each such test is its own program:
// after a timeout the PEs are out of step by design.
#pragma once

#include <cstdio>
#include <string>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime_fixture.h"

namespace tmashmem_test {

// The PE that stays away.
inline int absent_pe() { return mpi_size() - 1; }

// Installs the emulated driver; attributes with a bootstrap timeout of `timeout_ms`.
inline tmashmem_init_attr_t absent_pe_attr(int timeout_ms) {
  tmashmem_init_attr_t attr = small_heap_attr();
  attr.bootstrap_timeout_ms = timeout_ms;
  tmashmem::emu::install();
  return attr;
}

// CHECKs that `message` holds `exact` (the absent PE and no other), printing it otherwise.
inline void check_names_exactly(const std::string& message, const std::string& exact) {
  const bool named = message.find(exact) != std::string::npos;
  CHECK(named);
  if (!named) std::printf("[PE %d] %s\n", mpi_rank(), message.c_str());
}

}  // namespace tmashmem_test
