// Setting up the emulated driver for the tests that call its table directly
// (tests/unit/test_emulated_driver.cpp, tests/unit/emu/test_stream_mem_ops.cpp).
#pragma once

#include <cstdlib>
#include <string>

#include "common/catch.h"
#include "runtime/driver.h"
#include "unit/emu/emulated_driver.h"

namespace tmashmem_test {

inline const tmashmem::DriverApi& cu() { return tmashmem::driver(); }

// install() without the TMASHMEM_EMU_DEVICES override, which the environment running the
// tests may set: these tests choose their device counts themselves.
inline void install_exact(const tmashmem::emu::Options& o) {
  const char* env = std::getenv(tmashmem::emu::kEnvDevices);
  const std::string saved = env ? env : "";
  ::unsetenv(tmashmem::emu::kEnvDevices);
  tmashmem::emu::install(o);
  if (env) ::setenv(tmashmem::emu::kEnvDevices, saved.c_str(), 1);
}

// Installs an emulator, initializes it, and takes it away again at scope exit.
struct Emulator {
  explicit Emulator(const tmashmem::emu::Options& o) {
    install_exact(o);
    REQUIRE(cu().cuInit(0) == CUDA_SUCCESS);
  }
  ~Emulator() { tmashmem::emu::uninstall(); }
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;
};

}  // namespace tmashmem_test
