// Tests of the CPU emulation of the driver table (tests/unit/emu). The host runtime's CPU
// tests trust it, so it is held to CUDA's contracts here: real shared memory behind VMM
// handles, fds that work across processes, the error codes libcuda returns, and the TMA
// encoding rules.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "unit/emu/emu_fixture.h"
#include "unit/emu/emulated_driver.h"

namespace {

namespace emu = tmashmem::emu;

using tmashmem_test::cu;
using tmashmem_test::install_exact;

constexpr size_t kGran = size_t(64) << 10;  // small granularity keeps the tests light

emu::Options small_options() {
  emu::Options o;
  o.granularity = kGran;
  o.device_memory_bytes = 64 * kGran;
  return o;
}

// An emulator over small_options() unless the test names its own.
struct Emulator : tmashmem_test::Emulator {
  explicit Emulator(const emu::Options& o = small_options()) : tmashmem_test::Emulator(o) {}
};

CUmemAllocationProp prop_for(int device, unsigned handle_types) {
  CUmemAllocationProp p;
  std::memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  p.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handle_types);
  return p;
}

CUmemAccessDesc access_for(int device, CUmemAccess_flags flags) {
  CUmemAccessDesc d;
  std::memset(&d, 0, sizeof d);
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = device;
  d.flags = flags;
  return d;
}

// Random bytes, never all zero (the emulator's fresh memory is zero, so a zero pattern
// would pass without any data moving).
std::vector<uint64_t> random_words(std::mt19937_64& rng, size_t bytes) {
  std::vector<uint64_t> words(bytes / sizeof(uint64_t));
  for (auto& w : words) w = rng() | 1;
  return words;
}

bool all_zero(const emu::Counts& c) {
  return c.allocations == 0 && c.mappings == 0 && c.reservations == 0 && c.device_buffers == 0 &&
         c.open_memfds == 0 && c.created_bytes == 0 && c.multicast_calls == 0;
}

// One handle mapped read-write at `address` on device 0.
CUresult map_rw(CUdeviceptr address, size_t bytes, CUmemGenericAllocationHandle handle,
                int device = 0) {
  CUresult r = cu().cuMemMap(address, bytes, 0, handle, 0);
  if (r != CUDA_SUCCESS) return r;
  CUmemAccessDesc d = access_for(device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  return cu().cuMemSetAccess(address, bytes, &d, 1);
}

// A new allocation of `bytes` with `prop`, mapped read-write at the start of a fresh
// reservation of `reserve` bytes (0: `bytes`); each step REQUIREd. Returns the address.
CUdeviceptr create_mapped(const CUmemAllocationProp& prop, size_t bytes,
                          CUmemGenericAllocationHandle* h, size_t reserve = 0) {
  REQUIRE(cu().cuMemCreate(h, bytes, &prop, 0) == CUDA_SUCCESS);
  CUdeviceptr base = 0;
  REQUIRE(cu().cuMemAddressReserve(&base, reserve ? reserve : bytes, 0, 0, 0) == CUDA_SUCCESS);
  REQUIRE(map_rw(base, bytes, *h) == CUDA_SUCCESS);
  return base;
}

// The line of /proc/self/maps that holds `address` ("" if none): shows what is really
// mapped there (a memfd shared mapping, or reserved PROT_NONE space) and its protection.
std::string maps_line(CUdeviceptr address) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return "";
  char line[512];
  std::string found;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line, "%llx-%llx", &lo, &hi) == 2 && address >= lo && address < hi) {
      found = line;
      break;
    }
  }
  std::fclose(f);
  return found;
}

// Runs `body` in a forked child and returns its exit status (0: success). The child only
// makes emulator calls and leaves with _exit, never through Catch2 or MPI; an alarm ends
// it if it hangs.
template <typename Body>
int run_in_child(Body body) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(30);
    int code = body();
    ::_exit(code);
  }
  if (pid < 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -2;
  if (!WIFEXITED(status)) return 1000 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("emulated driver: initialization and error names", "[emu]") {
  install_exact(small_options());
  int count = -1;
  CHECK(cu().cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
  CHECK(std::string(cu().origin) == emu::kOrigin);

  // Usable before cuInit, as in libcuda: the runtime formats a failed cuInit with them.
  const char* name = nullptr;
  const char* text = nullptr;
  REQUIRE(cu().cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name) == CUDA_SUCCESS);
  CHECK(std::string(name) == "CUDA_ERROR_OUT_OF_MEMORY");
  REQUIRE(cu().cuGetErrorString(CUDA_ERROR_NOT_INITIALIZED, &text) == CUDA_SUCCESS);
  CHECK(std::string(text) == "initialization error");
  for (CUresult r : {CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_SUPPORTED,
                     CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_CONTEXT,
                     CUDA_ERROR_NOT_FOUND, CUDA_ERROR_CONTEXT_IS_DESTROYED}) {
    REQUIRE(cu().cuGetErrorName(r, &name) == CUDA_SUCCESS);
    CHECK(std::string(name).rfind("CUDA_", 0) == 0);
  }
  name = nullptr;
  CHECK(cu().cuGetErrorName(static_cast<CUresult>(998), &name) == CUDA_ERROR_INVALID_VALUE);
  CHECK(name != nullptr);
  int version = 0;
  REQUIRE(cu().cuDriverGetVersion(&version) == CUDA_SUCCESS);
  CHECK(version == 13000);

  CHECK(cu().cuInit(1) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cu().cuInit(0) == CUDA_SUCCESS);
  REQUIRE(cu().cuDeviceGetCount(&count) == CUDA_SUCCESS);
  CHECK(count == 1);

  emu::Options failing = small_options();
  failing.init_fails = true;
  install_exact(failing);
  CHECK(cu().cuInit(0) == CUDA_ERROR_NO_DEVICE);
  CHECK(cu().cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
  // The runtime's message names the error, through cuGetErrorName before any cuInit worked.
  CHECK(tmashmem::load_driver() != TMASHMEM_SUCCESS);
  CHECK(tmashmem::last_error().find("CUDA_ERROR_NO_DEVICE") != std::string::npos);

  emu::uninstall();
  CHECK(std::string(cu().origin) != emu::kOrigin);
}

TEST_CASE("emulated driver: devices, peers and contexts", "[emu]") {
  emu::Options o = small_options();
  o.device_count = 3;
  o.no_p2p = {{2, 0}};
  o.fabric_supported = true;
  o.sm_count = 77;
  Emulator e(o);

  int count = 0;
  REQUIRE(cu().cuDeviceGetCount(&count) == CUDA_SUCCESS);
  REQUIRE(count == 3);
  CUdevice dev = -1;
  CHECK(cu().cuDeviceGet(&dev, 3) == CUDA_ERROR_INVALID_DEVICE);
  REQUIRE(cu().cuDeviceGet(&dev, 2) == CUDA_SUCCESS);
  CHECK(dev == 2);

  char name[8];
  REQUIRE(cu().cuDeviceGetName(name, sizeof name, 0) == CUDA_SUCCESS);
  CHECK(std::strlen(name) == sizeof name - 1);  // truncated, terminated

  struct Expect {
    CUdevice_attribute attribute;
    int value;
  };
  for (Expect x : {Expect{CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
                   Expect{CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
                   Expect{CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 1},
                   Expect{CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0},
                   Expect{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
                   Expect{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
                   Expect{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 77},
                   Expect{CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1},
                   Expect{CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
                   Expect{CU_DEVICE_ATTRIBUTE_INTEGRATED, 0}}) {
    int v = -1;
    REQUIRE(cu().cuDeviceGetAttribute(&v, x.attribute, 1) == CUDA_SUCCESS);
    CHECK(v == x.value);
  }
  int v = 0;
  CHECK(cu().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0) == CUDA_SUCCESS);
  CHECK(v > 0);
  CHECK(cu().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 5) ==
        CUDA_ERROR_INVALID_DEVICE);

  // UUIDs: distinct per device, the same for the same ordinal in another emulator (process).
  std::vector<std::string> uuids;
  for (int d = 0; d < 3; ++d) {
    CUuuid u;
    REQUIRE(cu().cuDeviceGetUuid(&u, d) == CUDA_SUCCESS);
    uuids.emplace_back(u.bytes, sizeof u.bytes);
  }
  CHECK(uuids[0] != uuids[1]);
  CHECK(uuids[1] != uuids[2]);
  CHECK(uuids[0] != uuids[2]);

  int can = -1;
  REQUIRE(cu().cuDeviceCanAccessPeer(&can, 0, 1) == CUDA_SUCCESS);
  CHECK(can == 1);
  REQUIRE(cu().cuDeviceCanAccessPeer(&can, 0, 2) == CUDA_SUCCESS);
  CHECK(can == 0);
  REQUIRE(cu().cuDeviceCanAccessPeer(&can, 2, 0) == CUDA_SUCCESS);
  CHECK(can == 0);
  REQUIRE(cu().cuDeviceCanAccessPeer(&can, 1, 1) == CUDA_SUCCESS);
  CHECK(can == 0);

  size_t total = 0;
  REQUIRE(cu().cuDeviceTotalMem(&total, 0) == CUDA_SUCCESS);
  CHECK(total == o.device_memory_bytes);

  // Contexts: none current at first; only retained primary contexts can become current.
  CUcontext ctx = reinterpret_cast<CUcontext>(1);
  REQUIRE(cu().cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
  CHECK(ctx == nullptr);
  CHECK(cu().cuCtxGetDevice(&dev) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cu().cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
  size_t free_bytes = 0;
  CHECK(cu().cuMemGetInfo(&free_bytes, &total) == CUDA_ERROR_INVALID_CONTEXT);

  CUcontext c1 = nullptr, c1_again = nullptr, c2 = nullptr;
  REQUIRE(cu().cuDevicePrimaryCtxRetain(&c1, 1) == CUDA_SUCCESS);
  REQUIRE(cu().cuDevicePrimaryCtxRetain(&c1_again, 1) == CUDA_SUCCESS);
  REQUIRE(cu().cuDevicePrimaryCtxRetain(&c2, 2) == CUDA_SUCCESS);
  CHECK(c1 != nullptr);
  CHECK(c1 == c1_again);
  CHECK(c1 != c2);
  REQUIRE(cu().cuCtxSetCurrent(c1) == CUDA_SUCCESS);
  REQUIRE(cu().cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
  CHECK(ctx == c1);
  REQUIRE(cu().cuCtxGetDevice(&dev) == CUDA_SUCCESS);
  CHECK(dev == 1);
  CHECK(cu().cuCtxSynchronize() == CUDA_SUCCESS);
  REQUIRE(cu().cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS);
  CHECK(free_bytes == total);

  // Refcounted: one release leaves the context alive, the second destroys it.
  REQUIRE(cu().cuDevicePrimaryCtxRelease(1) == CUDA_SUCCESS);
  CHECK(cu().cuCtxGetDevice(&dev) == CUDA_SUCCESS);
  REQUIRE(cu().cuDevicePrimaryCtxRelease(1) == CUDA_SUCCESS);
  CHECK(cu().cuCtxGetDevice(&dev) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
  CHECK(cu().cuDevicePrimaryCtxRelease(1) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cu().cuCtxSetCurrent(c1) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cu().cuCtxSetCurrent(reinterpret_cast<CUcontext>(&dev)) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE(cu().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  REQUIRE(cu().cuDevicePrimaryCtxRelease(2) == CUDA_SUCCESS);

  // A fresh install (another "process") agrees on UUIDs and forgets the current context.
  REQUIRE(cu().cuDevicePrimaryCtxRetain(&c2, 2) == CUDA_SUCCESS);
  REQUIRE(cu().cuCtxSetCurrent(c2) == CUDA_SUCCESS);
  Emulator again(o);
  CUuuid u;
  REQUIRE(cu().cuDeviceGetUuid(&u, 1) == CUDA_SUCCESS);
  CHECK(std::string(u.bytes, sizeof u.bytes) == uuids[1]);
  REQUIRE(cu().cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
  CHECK(ctx == nullptr);
}

TEST_CASE("emulated driver: two mappings of one handle share memory", "[emu]") {
  Emulator e;
  auto rng = tmashmem_test::make_rng(1);
  const size_t bytes = 2 * kGran;
  CUmemAllocationProp prop = prop_for(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  size_t g = 0;
  REQUIRE(cu().cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
          CUDA_SUCCESS);
  CHECK(g == kGran);
  REQUIRE(cu().cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ==
          CUDA_SUCCESS);
  CHECK(g == kGran);

  CUmemGenericAllocationHandle h = 0;
  REQUIRE(cu().cuMemCreate(&h, bytes, &prop, 0) == CUDA_SUCCESS);
  CHECK(h != 0);
  // Reserve room for two views plus a hole, with an alignment above the granularity.
  const size_t align = 8 * kGran;
  CUdeviceptr base = 0;
  REQUIRE(cu().cuMemAddressReserve(&base, 3 * bytes, align, 0, 0) == CUDA_SUCCESS);
  CHECK(base % align == 0);
  CUdeviceptr a = base, b = base + 2 * bytes;
  REQUIRE(map_rw(a, bytes, h) == CUDA_SUCCESS);
  REQUIRE(map_rw(b, bytes, h) == CUDA_SUCCESS);
  emu::Counts c = emu::counts();
  CHECK(c.allocations == 1);
  CHECK(c.mappings == 2);
  CHECK(c.reservations == 1);
  CHECK(c.open_memfds == 1);
  CHECK(c.created_bytes == bytes);

  // CPU stores through one view are loads through the other.
  auto words = random_words(rng, bytes);
  std::memcpy(reinterpret_cast<void*>(a), words.data(), bytes);
  CHECK(std::memcmp(reinterpret_cast<void*>(b), words.data(), bytes) == 0);

  // The copy entry points go through the same memory, and across the two mappings' seam.
  CUcontext ctx = nullptr;
  REQUIRE(cu().cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
  REQUIRE(cu().cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  auto more = random_words(rng, 4096);
  REQUIRE(cu().cuMemcpyHtoD(b + 8192, more.data(), 4096) == CUDA_SUCCESS);
  std::vector<uint64_t> back(more.size());
  REQUIRE(cu().cuMemcpyDtoH(back.data(), a + 8192, 4096) == CUDA_SUCCESS);
  CHECK(back == more);
  const auto fill = static_cast<unsigned char>((rng() % 255) + 1);
  REQUIRE(cu().cuMemsetD8(a + bytes - 100, fill, 100) == CUDA_SUCCESS);
  CHECK(reinterpret_cast<unsigned char*>(b)[bytes - 1] == fill);

  // Read-only access: readable, not writable through the driver.
  CUmemAccessDesc ro = access_for(0, CU_MEM_ACCESS_FLAGS_PROT_READ);
  REQUIRE(cu().cuMemSetAccess(b, bytes, &ro, 1) == CUDA_SUCCESS);
  CHECK(cu().cuMemcpyDtoH(back.data(), b, 4096) == CUDA_SUCCESS);
  CHECK(cu().cuMemcpyHtoD(b, more.data(), 4096) == CUDA_ERROR_INVALID_VALUE);
  // Not device memory at all.
  CHECK(cu().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(back.data()), more.data(), 8) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cu().cuMemcpyDtoH(back.data(), base + bytes, 8) == CUDA_ERROR_INVALID_VALUE);  // hole

  REQUIRE(cu().cuMemUnmap(a, bytes) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemUnmap(b, bytes) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemRelease(h) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemAddressFree(base, 3 * bytes) == CUDA_SUCCESS);
  REQUIRE(cu().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  REQUIRE(cu().cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
  CHECK(all_zero(emu::counts()));
}

TEST_CASE("emulated driver: memory lives until released and unmapped", "[emu]") {
  Emulator e;
  auto rng = tmashmem_test::make_rng(2);
  CUmemAllocationProp prop = prop_for(0, CU_MEM_HANDLE_TYPE_NONE);
  CUmemGenericAllocationHandle h = 0;
  const CUdeviceptr base = create_mapped(prop, kGran, &h, 2 * kGran);
  auto words = random_words(rng, kGran);
  std::memcpy(reinterpret_cast<void*>(base), words.data(), kGran);

  // Released but still mapped: the handle is gone, the memory is not.
  REQUIRE(cu().cuMemRelease(h) == CUDA_SUCCESS);
  CHECK(cu().cuMemRelease(h) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cu().cuMemMap(base + kGran, kGran, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);
  emu::Counts c = emu::counts();
  CHECK(c.allocations == 0);
  CHECK(c.open_memfds == 1);
  CHECK(c.created_bytes == kGran);
  CHECK(std::memcmp(reinterpret_cast<void*>(base), words.data(), kGran) == 0);

  // Freeing a reservation that still has mappings is refused; unmapping frees the memory.
  CHECK(cu().cuMemAddressFree(base, 2 * kGran) == CUDA_ERROR_INVALID_VALUE);
  std::string before = maps_line(base);
  CHECK(before.find(" rw-s ") != std::string::npos);
  CHECK(before.find("memfd:") != std::string::npos);
  REQUIRE(cu().cuMemUnmap(base, kGran) == CUDA_SUCCESS);
  // What is left is reserved address space, inaccessible and backed by nothing.
  std::string after = maps_line(base);
  CHECK(after.find(" ---p ") != std::string::npos);
  CHECK(after.find("memfd:") == std::string::npos);
  c = emu::counts();
  CHECK(c.open_memfds == 0);
  CHECK(c.created_bytes == 0);
  CHECK(c.reservations == 1);
  REQUIRE(cu().cuMemAddressFree(base, 2 * kGran) == CUDA_SUCCESS);
  CHECK(all_zero(emu::counts()));
}

TEST_CASE("emulated driver: an exported fd shares memory with another process", "[emu]") {
  Emulator e;
  auto rng = tmashmem_test::make_rng(3);
  const size_t bytes = 3 * kGran;
  CUmemAllocationProp prop = prop_for(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle h = 0;
  const CUdeviceptr base = create_mapped(prop, bytes, &h);
  auto parent_words = random_words(rng, bytes / 2);
  auto child_words = random_words(rng, bytes / 2);
  std::memcpy(reinterpret_cast<void*>(base), parent_words.data(), bytes / 2);

  int fd = -1;
  REQUIRE(cu().cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
          CUDA_SUCCESS);
  REQUIRE(fd >= 0);
  CHECK(cu().cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_FABRIC, 0) ==
        CUDA_ERROR_NOT_SUPPORTED);

  // The child imports the fd into a mapping of its own (not the inherited one), checks the
  // parent's half and writes the other half.
  int status = run_in_child([&]() -> int {
    CUmemGenericAllocationHandle imported = 0;
    if (cu().cuMemImportFromShareableHandle(
            &imported, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS)
      return 10;
    ::close(fd);  // the import keeps its own reference
    CUdeviceptr mine = 0;
    if (cu().cuMemAddressReserve(&mine, bytes, 0, 0, 0) != CUDA_SUCCESS) return 11;
    if (mine == base) return 12;
    if (map_rw(mine, bytes, imported) != CUDA_SUCCESS) return 13;
    if (std::memcmp(reinterpret_cast<void*>(mine), parent_words.data(), bytes / 2) != 0) return 14;
    std::memcpy(reinterpret_cast<char*>(mine) + bytes / 2, child_words.data(), bytes / 2);
    if (cu().cuMemUnmap(mine, bytes) != CUDA_SUCCESS) return 15;
    if (cu().cuMemRelease(imported) != CUDA_SUCCESS) return 16;
    return 0;
  });
  CHECK(status == 0);
  CHECK(std::memcmp(reinterpret_cast<char*>(base) + bytes / 2, child_words.data(), bytes / 2) == 0);

  // Importing in this process works too, with the size taken from the fd.
  CUmemGenericAllocationHandle again = 0;
  REQUIRE(cu().cuMemImportFromShareableHandle(
              &again, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == CUDA_SUCCESS);
  ::close(fd);
  CHECK(again != h);
  CHECK(emu::counts().allocations == 2);
  CHECK(emu::counts().created_bytes == bytes);  // imports use no budget
  CHECK(cu().cuMemMap(base, bytes, 0, again, 0) == CUDA_ERROR_INVALID_VALUE);  // overlap
  REQUIRE(cu().cuMemRelease(again) == CUDA_SUCCESS);
  // Not an fd, not emulator memory.
  CUmemGenericAllocationHandle bad = 0;
  CHECK(cu().cuMemImportFromShareableHandle(&bad, reinterpret_cast<void*>(uintptr_t(100000)),
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cu().cuMemImportFromShareableHandle(&bad, reinterpret_cast<void*>(uintptr_t(0)),
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
        CUDA_ERROR_INVALID_VALUE);

  REQUIRE(cu().cuMemUnmap(base, bytes) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemRelease(h) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemAddressFree(base, bytes) == CUDA_SUCCESS);
  CHECK(all_zero(emu::counts()));
}

TEST_CASE("emulated driver: fabric handles only where supported and exportable", "[emu]") {
  auto rng = tmashmem_test::make_rng(4);
  SECTION("device without fabric support") {
    Emulator e;
    int v = -1;
    REQUIRE(cu().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0) ==
            CUDA_SUCCESS);
    CHECK(v == 0);
    CUmemAllocationProp prop = prop_for(0, CU_MEM_HANDLE_TYPE_FABRIC);
    CUmemGenericAllocationHandle h = 0;
    CHECK(cu().cuMemCreate(&h, kGran, &prop, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CUmemFabricHandle f;
    std::memset(&f, 0, sizeof f);
    CHECK(cu().cuMemImportFromShareableHandle(&h, &f, CU_MEM_HANDLE_TYPE_FABRIC) ==
          CUDA_ERROR_NOT_SUPPORTED);
    CHECK(all_zero(emu::counts()));
  }
  SECTION("supported but export fails (no IMEX)") {
    emu::Options o = small_options();
    o.fabric_supported = true;
    Emulator e(o);
    CUmemAllocationProp prop = prop_for(0, CU_MEM_HANDLE_TYPE_FABRIC);
    CUmemGenericAllocationHandle h = 0;
    REQUIRE(cu().cuMemCreate(&h, kGran, &prop, 0) == CUDA_SUCCESS);
    CUmemFabricHandle f;
    CHECK(cu().cuMemExportToShareableHandle(&f, h, CU_MEM_HANDLE_TYPE_FABRIC, 0) ==
          CUDA_ERROR_NOT_SUPPORTED);
    int fd = -1;  // not requested at creation
    CHECK(cu().cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
          CUDA_ERROR_NOT_SUPPORTED);
    REQUIRE(cu().cuMemRelease(h) == CUDA_SUCCESS);
    CHECK(all_zero(emu::counts()));
  }
  SECTION("exportable: another process imports it") {
    emu::Options o = small_options();
    o.fabric_supported = true;
    o.fabric_export_works = true;
    Emulator e(o);
    const size_t bytes = 2 * kGran;
    CUmemAllocationProp prop =
        prop_for(0, CU_MEM_HANDLE_TYPE_FABRIC | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle h = 0;
    const CUdeviceptr base = create_mapped(prop, bytes, &h);
    CUmemFabricHandle f;
    REQUIRE(cu().cuMemExportToShareableHandle(&f, h, CU_MEM_HANDLE_TYPE_FABRIC, 0) == CUDA_SUCCESS);
    emu::FabricHandleLayout layout;
    std::memcpy(&layout, &f, sizeof layout);
    CHECK(layout.magic == emu::kFabricMagic);
    CHECK(layout.pid == ::getpid());
    CHECK(layout.bytes == bytes);

    auto child_words = random_words(rng, bytes);
    int status = run_in_child([&]() -> int {
      CUmemGenericAllocationHandle imported = 0;
      if (cu().cuMemImportFromShareableHandle(&imported, &f, CU_MEM_HANDLE_TYPE_FABRIC) !=
          CUDA_SUCCESS)
        return 20;
      CUdeviceptr mine = 0;
      if (cu().cuMemAddressReserve(&mine, bytes, 0, 0, 0) != CUDA_SUCCESS) return 21;
      if (map_rw(mine, bytes, imported) != CUDA_SUCCESS) return 22;
      std::memcpy(reinterpret_cast<void*>(mine), child_words.data(), bytes);
      return 0;
    });
    CHECK(status == 0);
    CHECK(std::memcmp(reinterpret_cast<void*>(base), child_words.data(), bytes) == 0);

    // A forged handle, and a stale one after the exporter freed the memory, are refused.
    emu::FabricHandleLayout forged = layout;
    forged.magic ^= 1;
    CUmemGenericAllocationHandle bad = 0;
    CHECK(cu().cuMemImportFromShareableHandle(&bad, &forged, CU_MEM_HANDLE_TYPE_FABRIC) ==
          CUDA_ERROR_INVALID_VALUE);
    REQUIRE(cu().cuMemUnmap(base, bytes) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemRelease(h) == CUDA_SUCCESS);
    CHECK(cu().cuMemImportFromShareableHandle(&bad, &f, CU_MEM_HANDLE_TYPE_FABRIC) ==
          CUDA_ERROR_INVALID_VALUE);
    // Even when the fd number now holds another allocation of the same size (forced here;
    // fd reuse makes it the usual case): the inode tells them apart.
    CUmemGenericAllocationHandle h2 = 0;
    REQUIRE(cu().cuMemCreate(&h2, bytes, &prop, 0) == CUDA_SUCCESS);
    CUmemFabricHandle f2;
    REQUIRE(cu().cuMemExportToShareableHandle(&f2, h2, CU_MEM_HANDLE_TYPE_FABRIC, 0) ==
            CUDA_SUCCESS);
    emu::FabricHandleLayout stale = layout, fresh;
    std::memcpy(&fresh, &f2, sizeof fresh);
    stale.fd = fresh.fd;
    CHECK(cu().cuMemImportFromShareableHandle(&bad, &stale, CU_MEM_HANDLE_TYPE_FABRIC) ==
          CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemImportFromShareableHandle(&bad, &f, CU_MEM_HANDLE_TYPE_FABRIC) ==
          CUDA_ERROR_INVALID_VALUE);
    REQUIRE(cu().cuMemRelease(h2) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemAddressFree(base, bytes) == CUDA_SUCCESS);
    CHECK(all_zero(emu::counts()));
  }
}

TEST_CASE("emulated driver: VMM argument errors", "[emu]") {
  emu::Options o = small_options();
  o.device_count = 2;
  o.device_memory_bytes = 4 * kGran;
  o.no_p2p = {{0, 1}};
  Emulator e(o);
  CUmemAllocationProp prop = prop_for(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle h = 0;

  SECTION("properties and sizes at creation") {
    CHECK(cu().cuMemCreate(&h, 0, &prop, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemCreate(&h, kGran + 4096, &prop, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemCreate(&h, kGran, &prop, 1) == CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp bad = prop;
    bad.location.id = 2;
    CHECK(cu().cuMemCreate(&h, kGran, &bad, 0) == CUDA_ERROR_INVALID_DEVICE);
    size_t g = 0;
    CHECK(cu().cuMemGetAllocationGranularity(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
          CUDA_ERROR_INVALID_DEVICE);
    bad = prop;
    bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    CHECK(cu().cuMemCreate(&h, kGran, &bad, 0) == CUDA_ERROR_INVALID_VALUE);
    bad = prop;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CHECK(cu().cuMemCreate(&h, kGran, &bad, 0) == CUDA_ERROR_INVALID_VALUE);
    bad = prop;
    bad.requestedHandleTypes = CU_MEM_HANDLE_TYPE_WIN32;
    CHECK(cu().cuMemCreate(&h, kGran, &bad, 0) == CUDA_ERROR_NOT_SUPPORTED);
  }
  SECTION("device memory budget") {
    CUcontext ctx = nullptr;
    REQUIRE(cu().cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    REQUIRE(cu().cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    CUmemGenericAllocationHandle big = 0, small = 0;
    REQUIRE(cu().cuMemCreate(&big, 3 * kGran, &prop, 0) == CUDA_SUCCESS);
    size_t free_bytes = 0, total = 0;
    REQUIRE(cu().cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS);
    CHECK(free_bytes == kGran);
    CHECK(cu().cuMemCreate(&small, 2 * kGran, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr buffer = 0;
    CHECK(cu().cuMemAlloc(&buffer, kGran + 1) == CUDA_ERROR_OUT_OF_MEMORY);
    // The budget is per device.
    CUmemAllocationProp on1 = prop_for(1, CU_MEM_HANDLE_TYPE_NONE);
    REQUIRE(cu().cuMemCreate(&small, 2 * kGran, &on1, 0) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemRelease(small) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemRelease(big) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS);
    CHECK(free_bytes == total);
    REQUIRE(cu().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
    REQUIRE(cu().cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
  }
  SECTION("reservations") {
    CUdeviceptr p = 0;
    CHECK(cu().cuMemAddressReserve(&p, 0, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemAddressReserve(&p, kGran / 2, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemAddressReserve(&p, kGran, 3 * kGran, 0, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemAddressReserve(&p, kGran, 0, 0, 1) == CUDA_ERROR_INVALID_VALUE);
    REQUIRE(cu().cuMemAddressReserve(&p, 2 * kGran, 0, 0, 0) == CUDA_SUCCESS);
    CHECK(p % kGran == 0);
    CHECK(cu().cuMemAddressFree(p, kGran) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemAddressFree(p + kGran, kGran) == CUDA_ERROR_INVALID_VALUE);
    REQUIRE(cu().cuMemAddressFree(p, 2 * kGran) == CUDA_SUCCESS);
    CHECK(cu().cuMemAddressFree(p, 2 * kGran) == CUDA_ERROR_INVALID_VALUE);
    // The address is a hint: honoured when free.
    CUdeviceptr q = 0;
    REQUIRE(cu().cuMemAddressReserve(&q, 2 * kGran, 0, p, 0) == CUDA_SUCCESS);
    CHECK(q == p);
    REQUIRE(cu().cuMemAddressFree(q, 2 * kGran) == CUDA_SUCCESS);
  }
  SECTION("mapping, access and unmapping") {
    REQUIRE(cu().cuMemCreate(&h, 2 * kGran, &prop, 0) == CUDA_SUCCESS);
    CUdeviceptr base = 0;
    REQUIRE(cu().cuMemAddressReserve(&base, 4 * kGran, 0, 0, 0) == CUDA_SUCCESS);
    CHECK(cu().cuMemMap(base + 4096, 2 * kGran, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemMap(base, 3 * kGran, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);  // > handle
    CHECK(cu().cuMemMap(base, kGran, 2 * kGran, h, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemMap(base + 3 * kGran, 2 * kGran, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemMap(base, 2 * kGran, 0, h + 1000, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cu().cuMemMap(base, 2 * kGran, 0, h, 1) == CUDA_ERROR_INVALID_VALUE);
    REQUIRE(cu().cuMemMap(base, 2 * kGran, 0, h, 0) == CUDA_SUCCESS);
    CHECK(cu().cuMemMap(base + kGran, 2 * kGran, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);
    REQUIRE(cu().cuMemMap(base + 2 * kGran, kGran, kGran, h, 0) == CUDA_SUCCESS);  // offset

    CUmemAccessDesc rw = access_for(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CHECK(cu().cuMemSetAccess(base, kGran, &rw, 1) == CUDA_ERROR_INVALID_VALUE);      // partial
    CHECK(cu().cuMemSetAccess(base, 4 * kGran, &rw, 1) == CUDA_ERROR_INVALID_VALUE);  // hole
    CHECK(cu().cuMemSetAccess(base, 2 * kGran, &rw, 0) == CUDA_ERROR_INVALID_VALUE);
    CUmemAccessDesc bad = access_for(2, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CHECK(cu().cuMemSetAccess(base, 2 * kGran, &bad, 1) == CUDA_ERROR_INVALID_DEVICE);
    CUmemAccessDesc peer = access_for(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);  // no P2P 0-1
    CHECK(cu().cuMemSetAccess(base, 2 * kGran, &peer, 1) == CUDA_ERROR_INVALID_DEVICE);
    // Two adjacent mappings at once; the offset mapping aliases the second granule.
    REQUIRE(cu().cuMemSetAccess(base, 3 * kGran, &rw, 1) == CUDA_SUCCESS);
    auto rng = tmashmem_test::make_rng(5);
    auto words = random_words(rng, kGran);
    std::memcpy(reinterpret_cast<void*>(base + kGran), words.data(), kGran);
    CHECK(std::memcmp(reinterpret_cast<void*>(base + 2 * kGran), words.data(), kGran) == 0);

    CHECK(cu().cuMemUnmap(base, kGran) == CUDA_ERROR_INVALID_VALUE);  // part of a mapping
    CHECK(cu().cuMemUnmap(base, 4 * kGran) == CUDA_ERROR_INVALID_VALUE);
    REQUIRE(cu().cuMemUnmap(base, 3 * kGran) == CUDA_SUCCESS);
    CHECK(cu().cuMemUnmap(base, 2 * kGran) == CUDA_ERROR_INVALID_VALUE);
    // The range is a reservation again: it can be mapped anew.
    REQUIRE(cu().cuMemMap(base + 2 * kGran, 2 * kGran, 0, h, 0) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemUnmap(base + 2 * kGran, 2 * kGran) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemRelease(h) == CUDA_SUCCESS);
    REQUIRE(cu().cuMemAddressFree(base, 4 * kGran) == CUDA_SUCCESS);
  }
  SECTION("VMM not supported") {
    emu::Options no_vmm = small_options();
    no_vmm.vmm_supported = false;
    Emulator e2(no_vmm);
    size_t g = 0;
    CHECK(cu().cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
          CUDA_ERROR_NOT_SUPPORTED);
    CHECK(cu().cuMemCreate(&h, kGran, &prop, 0) == CUDA_ERROR_NOT_SUPPORTED);
  }
  CHECK(all_zero(emu::counts()));
}

TEST_CASE("emulated driver: cuMemAlloc buffers", "[emu]") {
  Emulator e;
  auto rng = tmashmem_test::make_rng(6);
  CUdeviceptr p = 0;
  CHECK(cu().cuMemAlloc(&p, 1000) == CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = nullptr;
  REQUIRE(cu().cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
  REQUIRE(cu().cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  CHECK(cu().cuMemAlloc(&p, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cu().cuMemAlloc(&p, 1000) == CUDA_SUCCESS);
  CHECK(p % 256 == 0);
  CHECK(emu::counts().device_buffers == 1);
  size_t free_bytes = 0, total = 0;
  REQUIRE(cu().cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS);
  CHECK(free_bytes == total - 1024);

  auto words = random_words(rng, 1000 / 8 * 8);
  const size_t n = words.size() * sizeof(uint64_t);
  REQUIRE(cu().cuMemcpyHtoD(p, words.data(), n) == CUDA_SUCCESS);
  std::vector<uint64_t> back(words.size());
  REQUIRE(cu().cuMemcpyDtoH(back.data(), p, n) == CUDA_SUCCESS);
  CHECK(back == words);
  const auto fill = static_cast<unsigned char>((rng() % 255) + 1);
  REQUIRE(cu().cuMemsetD8(p + 8, fill, 16) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemcpyDtoH(back.data(), p, n) == CUDA_SUCCESS);
  CHECK(reinterpret_cast<unsigned char*>(back.data())[8] == fill);
  CHECK(reinterpret_cast<unsigned char*>(back.data())[23] == fill);
  CHECK(back[0] == words[0]);
  CHECK(back[3] == words[3]);
  CHECK(cu().cuMemcpyHtoD(p + 1000, words.data(), 100) == CUDA_ERROR_INVALID_VALUE);  // past end

  CHECK(cu().cuMemFree(p + 8) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cu().cuMemFree(p) == CUDA_SUCCESS);
  CHECK(cu().cuMemFree(p) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cu().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  REQUIRE(cu().cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
  CHECK(all_zero(emu::counts()));
}

namespace {

// Arguments of one cuTensorMapEncodeTiled call, valid as constructed.
struct Tiled {
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  cuuint32_t rank = 3;
  uintptr_t address = 0;
  cuuint64_t dims[5] = {128, 64, 4, 1, 1};
  cuuint64_t strides[4] = {256, 256 * 64, 0, 0};
  cuuint32_t box[5] = {64, 32, 2, 1, 1};
  cuuint32_t estrides[5] = {1, 1, 1, 1, 1};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  CUtensorMapFloatOOBfill oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;

  CUresult encode(CUtensorMap* map) const {
    return cu().cuTensorMapEncodeTiled(map, dtype, rank, reinterpret_cast<void*>(address), dims,
                                       strides, box, estrides, interleave, swizzle, l2, oob);
  }
};

}  // namespace

TEST_CASE("emulated driver: tensor map encoding", "[emu]") {
  Emulator e;
  auto rng = tmashmem_test::make_rng(7);
  CUtensorMap map;
  Tiled base;
  base.address = static_cast<uintptr_t>(rng() & ~uint64_t(0xff) & ((uint64_t(1) << 47) - 1));
  base.dims[0] = 64 + (rng() % 64) * 2;
  base.dims[1] = 1 + rng() % 1000;
  base.dims[2] = 1 + rng() % 7;
  base.strides[0] = (base.dims[0] * 2 + 15) / 16 * 16 + 16 * (rng() % 4);
  base.strides[1] = base.strides[0] * base.dims[1];
  base.box[1] = static_cast<cuuint32_t>(1 + rng() % 256);
  base.estrides[1] = static_cast<cuuint32_t>(1 + rng() % 8);

  SECTION("a valid encode decodes back to its arguments") {
    REQUIRE(base.encode(&map) == CUDA_SUCCESS);
    emu::TensorMapFields f;
    REQUIRE(emu::decode_tensor_map(map, &f));
    CHECK(f.dtype == base.dtype);
    CHECK(f.rank == base.rank);
    CHECK(f.address == base.address);
    for (int i = 0; i < 3; ++i) {
      CHECK(f.dims[i] == base.dims[i]);
      CHECK(f.box[i] == base.box[i]);
      CHECK(f.element_strides[i] == base.estrides[i]);
    }
    CHECK(f.strides[0] == base.strides[0]);
    CHECK(f.strides[1] == base.strides[1]);
    CHECK(f.strides[2] == 0);
    CHECK(f.dims[3] == 0);
    CHECK(f.interleave == base.interleave);
    CHECK(f.swizzle == base.swizzle);
    CHECK(f.l2_promotion == base.l2);
    CHECK(f.oob_fill == base.oob);

    // Rank 5 with the largest values the rules allow.
    Tiled big = base;
    big.dtype = CU_TENSOR_MAP_DATA_TYPE_UINT8;
    big.rank = 5;
    big.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    big.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    for (int i = 0; i < 5; ++i) {
      big.dims[i] = uint64_t(1) << 32;
      big.box[i] = 256;
      big.estrides[i] = 8;
    }
    for (int i = 0; i < 4; ++i) big.strides[i] = (uint64_t(1) << 40) - 16;
    REQUIRE(big.encode(&map) == CUDA_SUCCESS);
    REQUIRE(emu::decode_tensor_map(map, &f));
    CHECK(f.rank == 5);
    CHECK(f.dims[4] == (uint64_t(1) << 32));
    CHECK(f.strides[3] == (uint64_t(1) << 40) - 16);
    CHECK(f.box[4] == 256);
    CHECK(f.element_strides[4] == 8);

    // Interleaved layouts: rank >= 3, 32B interleave needs 32B swizzle.
    Tiled il = base;
    il.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
    il.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    il.strides[0] = 512;
    il.strides[1] = 512 * 64;
    REQUIRE(il.encode(&map) == CUDA_SUCCESS);

    CUtensorMap other;
    std::memset(&other, 0x5a, sizeof other);
    CHECK_FALSE(emu::decode_tensor_map(other, &f));
  }

  SECTION("each documented rule is enforced") {
    struct Case {
      const char* why;
      Tiled args;
    };
    std::vector<Case> cases;
    auto add = [&](const char* why, auto change) {
      Tiled t = base;
      change(t);
      cases.push_back({why, t});
    };
    add("rank 0", [](Tiled& t) { t.rank = 0; });
    add("rank 6", [](Tiled& t) { t.rank = 6; });
    add("address not 16-byte aligned", [](Tiled& t) { t.address += 8; });
    add("32B interleave, address 16-byte aligned", [](Tiled& t) {
      t.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
      t.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
      t.strides[0] = 512;
      t.strides[1] = 512 * 64;
      t.address += 16;
    });
    add("interleave with rank 2", [](Tiled& t) {
      t.rank = 2;
      t.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
    });
    add("32B interleave without 32B swizzle", [](Tiled& t) {
      t.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
      t.strides[0] = 512;
      t.strides[1] = 512 * 64;
    });
    add("32B interleave, stride not a multiple of 32", [](Tiled& t) {
      t.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
      t.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
      t.strides[0] = 528;
      t.strides[1] = 512 * 64;
    });
    add("zero dimension", [](Tiled& t) { t.dims[2] = 0; });
    add("dimension above 2^32", [](Tiled& t) { t.dims[1] = (uint64_t(1) << 32) + 1; });
    add("stride not a multiple of 16", [](Tiled& t) { t.strides[0] += 8; });
    add("stride of 2^40", [](Tiled& t) { t.strides[1] = uint64_t(1) << 40; });
    add("zero box", [](Tiled& t) { t.box[1] = 0; });
    add("box above 256", [](Tiled& t) { t.box[2] = 257; });
    add("inner box not a multiple of 16 bytes", [](Tiled& t) {
      t.box[0] = 12;
      t.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    });
    add("element stride 0", [](Tiled& t) { t.estrides[2] = 0; });
    add("element stride 9", [](Tiled& t) { t.estrides[0] = 9; });
    add("inner box wider than the 128B swizzle", [](Tiled& t) { t.box[0] = 72; });
    add("inner box wider than the 64B swizzle", [](Tiled& t) {
      t.swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
      t.box[0] = 40;
    });
    add("inner box wider than the 32B swizzle", [](Tiled& t) {
      t.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
      t.box[0] = 24;
    });
    add("NaN fill for an integer type", [](Tiled& t) {
      t.dtype = CU_TENSOR_MAP_DATA_TYPE_INT32;
      t.box[0] = 32;  // still 128 bytes
    });
    add("Blackwell-only data type", [](Tiled& t) {
      t.dtype = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B;
      t.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    });
    add("Blackwell-only swizzle",
        [](Tiled& t) { t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B; });
    for (const Case& c : cases) {
      INFO(c.why);
      CHECK(c.args.encode(&map) == CUDA_ERROR_INVALID_VALUE);
    }
    // The tensor map itself must be 64-byte aligned.
    alignas(128) unsigned char storage[256];
    CHECK(base.encode(reinterpret_cast<CUtensorMap*>(storage + 32)) == CUDA_ERROR_INVALID_VALUE);
    CHECK(base.encode(nullptr) == CUDA_ERROR_INVALID_VALUE);
    // And the variations that stay valid really do.
    Tiled ok = base;
    ok.box[0] = 64;  // 128 bytes: exactly the 128B span
    REQUIRE(ok.encode(&map) == CUDA_SUCCESS);
  }
}

TEST_CASE("emulated driver: TMASHMEM_EMU_DEVICES overrides the device count", "[emu]") {
  const char* env = std::getenv(emu::kEnvDevices);
  const std::string saved = env ? env : "";
  ::setenv(emu::kEnvDevices, "5", 1);
  emu::install(small_options());
  REQUIRE(cu().cuInit(0) == CUDA_SUCCESS);
  int count = 0;
  REQUIRE(cu().cuDeviceGetCount(&count) == CUDA_SUCCESS);
  CHECK(count == 5);
  ::setenv(emu::kEnvDevices, "lots", 1);
  CHECK_THROWS(emu::install(small_options()));
  ::setenv(emu::kEnvDevices, "65", 1);
  CHECK_THROWS(emu::install(small_options()));
  if (env)
    ::setenv(emu::kEnvDevices, saved.c_str(), 1);
  else
    ::unsetenv(emu::kEnvDevices);
  emu::uninstall();
}

// Last: it starts threads, and the fork tests above want a process without them.
TEST_CASE("emulated driver: concurrent use from several threads", "[emu]") {
  emu::Options o = small_options();
  o.device_count = 4;
  Emulator e(o);
  const uint64_t seed = tmashmem_test::make_rng(8)();
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, seed, &failures]() {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
      CUcontext ctx = nullptr;
      CUdevice dev = -1;
      // Each thread has its own current context.
      if (cu().cuDevicePrimaryCtxRetain(&ctx, t) != CUDA_SUCCESS ||
          cu().cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cu().cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
          dev != t)
        ++failures[static_cast<size_t>(t)];
      CUmemAllocationProp prop = prop_for(t, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      for (int i = 0; i < 50; ++i) {
        const size_t bytes = kGran * (1 + rng() % 3);
        CUmemGenericAllocationHandle h = 0;
        CUdeviceptr p = 0;
        if (cu().cuMemCreate(&h, bytes, &prop, 0) != CUDA_SUCCESS ||
            cu().cuMemAddressReserve(&p, bytes, 0, 0, 0) != CUDA_SUCCESS ||
            map_rw(p, bytes, h, t) != CUDA_SUCCESS) {
          ++failures[static_cast<size_t>(t)];
          break;
        }
        auto words = random_words(rng, 4096);
        const size_t at = (rng() % (bytes / 4096)) * 4096;
        std::vector<uint64_t> back(words.size());
        if (cu().cuMemcpyHtoD(p + at, words.data(), 4096) != CUDA_SUCCESS ||
            cu().cuMemcpyDtoH(back.data(), p + at, 4096) != CUDA_SUCCESS || back != words)
          ++failures[static_cast<size_t>(t)];
        if (cu().cuMemUnmap(p, bytes) != CUDA_SUCCESS || cu().cuMemRelease(h) != CUDA_SUCCESS ||
            cu().cuMemAddressFree(p, bytes) != CUDA_SUCCESS)
          ++failures[static_cast<size_t>(t)];
      }
      cu().cuCtxSetCurrent(nullptr);
      cu().cuDevicePrimaryCtxRelease(t);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) CHECK(failures[static_cast<size_t>(t)] == 0);
  CHECK(all_zero(emu::counts()));
}
