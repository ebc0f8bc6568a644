// The one way a fuzz target reports a broken contract: print the target (TMASHMEM_FUZZ_TARGET,
// defined per target by tests/fuzz/CMakeLists.txt), what broke and the input's context, then
// abort, which libFuzzer records as a finding. Test programs only: the library never aborts.
#pragma once

#include <cstdio>
#include <cstdlib>

#ifndef TMASHMEM_FUZZ_TARGET
#error "TMASHMEM_FUZZ_TARGET names the fuzz target (tests/fuzz/CMakeLists.txt defines it)"
#endif

namespace fuzz {

inline void require(bool ok, const char* what, const char* context = nullptr) {
  if (ok) return;
  std::fprintf(stderr, "%s: contract broken: %s%s%s%s\n", TMASHMEM_FUZZ_TARGET, what,
               context ? " (" : "", context ? context : "", context ? ")" : "");
  std::abort();
}

}  // namespace fuzz
