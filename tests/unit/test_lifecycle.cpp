// init / finalize: repeated cycles leave nothing behind; calls out of order and a
// missing driver give their specific errors.
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/driver.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
namespace emu = tmashmem::emu;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The mappings the emulator and the runtime make: memfd-backed chunk mappings (named
// "memfd:tmashmem-emu-dev...") and the heap window's reservation, found by the addresses in
// `windows` (one heap address of each init). Other mappings are not counted: sanitizer
// and MPI allocators map and unmap on their own schedule.
int runtime_mapping_count(const std::vector<uintptr_t>& windows) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) != 2) continue;
    bool counted = line.find("tmashmem-emu") != std::string::npos;
    for (uintptr_t w : windows) counted = counted || (w >= lo && w < hi);
    n += counted ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("lifecycle: 100 init/finalize cycles leave no fd, mapping or memory behind") {
  emu::install();
  int fds_before = count_fds();
  std::vector<uintptr_t> windows;
  const int maps_before = runtime_mapping_count(windows);
  int failures = 0;
  for (int cycle = 0; cycle < 100; ++cycle) {
    tmashmem_init_attr_t attr = small_heap_attr();
    if (tmashmem_init_attr(&attr) != TMASHMEM_SUCCESS) {
      ++failures;
      std::printf("cycle %d: %s\n", cycle, tmashmem_last_error());
      break;
    }
    int n = tmashmem_n_pes();
    auto* p =
        static_cast<uint8_t*>(tmashmem_malloc((size_t(3) << 20) * size_t(n)));  // forces growth
    if (!p)
      ++failures;
    else {
      windows.push_back(reinterpret_cast<uintptr_t>(p));
      if (runtime_mapping_count({reinterpret_cast<uintptr_t>(p)}) == 0) ++failures;  // seen
      // One byte into every peer's copy, checked by its owner.
      int me = tmashmem_my_pe();
      for (int pe = 0; pe < n; ++pe)
        static_cast<uint8_t*>(tmashmem_ptr(p, pe))[me] = static_cast<uint8_t>(cycle + me);
      tmashmem_barrier_all();
      for (int pe = 0; pe < n; ++pe) failures += p[pe] != static_cast<uint8_t>(cycle + pe);
    }
    if (tmashmem_finalize() != TMASHMEM_SUCCESS) ++failures;
    emu::Counts c = emu::counts();
    if (c.allocations || c.mappings || c.reservations || c.device_buffers || c.open_memfds ||
        c.created_bytes) {
      std::printf(
          "cycle %d left behind: %ld handles, %ld mappings, %ld reservations, %ld buffers, %ld "
          "memfds\n",
          cycle, c.allocations, c.mappings, c.reservations, c.device_buffers, c.open_memfds);
      ++failures;
      break;
    }
  }
  CHECK(failures == 0);
  CHECK(count_fds() == fds_before);
  CHECK(maps_before == 0);
  CHECK(runtime_mapping_count(windows) == maps_before);
  emu::uninstall();
}

TEST_CASE("lifecycle: calls before init, double init, finalize twice") {
  CHECK(tmashmem_malloc(64) == nullptr);
  CHECK(contains(tmashmem_last_error(), "before tmashmem_init"));
  CHECK(tmashmem_free(nullptr) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(tmashmem_finalize() == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(tmashmem_barrier_all() == TMASHMEM_ERROR_NOT_INITIALIZED);
  tmashmem_ctx_t ctx;
  CHECK(tmashmem_device_ctx(&ctx) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(tmashmem_my_pe() == -1);
  CHECK(tmashmem_n_pes() == -1);
  {
    EmulatedRuntime rt;
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
    CHECK(tmashmem_my_pe() == mpi_rank());
    CHECK(tmashmem_n_pes() == mpi_size());
    CHECK(tmashmem_n_local_pes() == mpi_size());
    CHECK(tmashmem_local_pe() == mpi_rank());
    CHECK(tmashmem_init() == TMASHMEM_ERROR_ALREADY_INITIALIZED);
    CHECK(contains(tmashmem_last_error(), "tmashmem_finalize first"));
    CHECK(tmashmem_device_ctx(nullptr) == TMASHMEM_ERROR_INVALID_VALUE);
  }
  CHECK_FALSE(tmashmem_initialized());
  CHECK(tmashmem_finalize() == TMASHMEM_ERROR_NOT_INITIALIZED);
}

// Every call before init: tests/unit/test_faults_lifecycle.cpp (with every call after finalize).

TEST_CASE("lifecycle: a driver that reports no device gives NO_DEVICE on every PE") {
  emu::Options options;
  options.init_fails = true;
  EmulatedRuntime rt(options);
  CHECK(rt.status == TMASHMEM_ERROR_NO_DEVICE);
  CHECK(contains(rt.message, "no CUDA device"));
  CHECK_FALSE(tmashmem_initialized());
}

TEST_CASE("lifecycle: without libcuda, init says there is no CUDA driver") {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
  bool have_driver = lib != nullptr;
  if (lib) dlclose(lib);
  if (!all_ranks(!have_driver)) {
    mark_skipped("this machine has libcuda.so.1; the no-driver path cannot be shown here");
    return;
  }
  tmashmem::install_driver(nullptr);
  tmashmem_status_t st = tmashmem_init();
  CHECK(st == TMASHMEM_ERROR_NO_DRIVER);
  std::string m = tmashmem_last_error();
  CHECK(contains(m, "no CUDA driver"));
  CHECK(contains(m, "libcuda.so.1"));
  CHECK_FALSE(tmashmem_initialized());
}

TEST_CASE("lifecycle: a bad setting fails init with a message naming it") {
  emu::install();
  setenv("TMASHMEM_CHUNK_SIZE", "huge", 1);
  tmashmem_status_t st = tmashmem_init();
  unsetenv("TMASHMEM_CHUNK_SIZE");
  CHECK(st == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(contains(tmashmem_last_error(), "TMASHMEM_CHUNK_SIZE"));
  emu::uninstall();
}
