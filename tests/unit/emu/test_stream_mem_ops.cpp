// The emulated driver's stream memory operations (emulated_driver.h): the table holds
// cuStreamWriteValue64 and cuStreamWaitValue64 and they execute; the device reports
// CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS; a write is one 64-bit store where
// write access was granted; a wait evaluates CUDA's conditions (GEQ is cyclic), keeps
// polling while another thread writes, and gives up after its bound. The on-stream calls
// that use them: tests/unit/test_on_stream_host.cpp (host half) and
// tests/gpu/test_on_stream.cu (on a GPU).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/driver.h"
#include "unit/emu/emu_fixture.h"
#include "unit/emu/emulated_driver.h"

namespace {

namespace emu = tmashmem::emu;

using tmashmem_test::cu;
using tmashmem_test::install_exact;

constexpr size_t kGran = size_t(64) << 10;
constexpr uint64_t kHalf = uint64_t(1) << 63;

emu::Options small_options() {
  emu::Options o;
  o.granularity = kGran;
  o.device_memory_bytes = 64 * kGran;
  o.stream_wait_timeout_ms = 100;
  return o;
}

// An installed, initialised emulator with device 0's primary context current on this
// thread; all undone at scope exit.
struct Device0 {
  explicit Device0(const emu::Options& o = small_options()) : emulator(o) {
    REQUIRE(cu().cuDevicePrimaryCtxRetain(&context, 0) == CUDA_SUCCESS);
    REQUIRE(cu().cuCtxSetCurrent(context) == CUDA_SUCCESS);
  }
  ~Device0() {
    cu().cuCtxSetCurrent(nullptr);
    cu().cuDevicePrimaryCtxRelease(0);
  }
  Device0(const Device0&) = delete;
  Device0& operator=(const Device0&) = delete;

  tmashmem_test::Emulator emulator;  // installed first, uninstalled last
  CUcontext context = nullptr;
};

// Any non-null handle: the emulator has no streams and ignores it.
CUstream some_stream() { return reinterpret_cast<CUstream>(uintptr_t(0x5000)); }

uint64_t load(CUdeviceptr address) { return *reinterpret_cast<const volatile uint64_t*>(address); }
void store(CUdeviceptr address, uint64_t v) { *reinterpret_cast<volatile uint64_t*>(address) = v; }

CUresult wait(CUdeviceptr address, uint64_t value, unsigned flags) {
  return cu().cuStreamWaitValue64(some_stream(), address, value, flags);
}

}  // namespace

TEST_CASE("emulated driver: the table has the stream memory operations; the device reports them",
          "[emu]") {
  {
    install_exact(small_options());
    REQUIRE(cu().cuStreamWriteValue64 != nullptr);
    REQUIRE(cu().cuStreamWaitValue64 != nullptr);
    CHECK(cu().cuStreamWriteValue64(nullptr, 0, 1, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cu().cuStreamWaitValue64(nullptr, 0, 1, 0) == CUDA_ERROR_NOT_INITIALIZED);
    REQUIRE(cu().cuInit(0) == CUDA_SUCCESS);
    int v = -1;
    REQUIRE(cu().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0) ==
            CUDA_SUCCESS);
    CHECK(v == 1);
    REQUIRE(cu().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 0) ==
            CUDA_SUCCESS);
    CHECK(v == 0);
    // Like the other calls that need one: no current context, no operation.
    uint64_t word = 0;
    CHECK(cu().cuStreamWriteValue64(nullptr, reinterpret_cast<CUdeviceptr>(&word), 1, 0) ==
          CUDA_ERROR_INVALID_CONTEXT);
    CHECK(wait(reinterpret_cast<CUdeviceptr>(&word), 0, CU_STREAM_WAIT_VALUE_EQ) ==
          CUDA_ERROR_INVALID_CONTEXT);
    emu::uninstall();
  }
  {
    emu::Options o = small_options();
    o.stream_mem_ops_64 = false;
    Device0 d(o);
    int v = -1;
    REQUIRE(cu().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0) ==
            CUDA_SUCCESS);
    CHECK(v == 0);
    CUdeviceptr buf = 0;
    REQUIRE(cu().cuMemAlloc(&buf, 64) == CUDA_SUCCESS);
    CHECK(cu().cuStreamWriteValue64(some_stream(), buf, 1, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(wait(buf, 0, CU_STREAM_WAIT_VALUE_AND) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(cu().cuMemFree(buf) == CUDA_SUCCESS);
  }
}

TEST_CASE("emulated driver: cuStreamWriteValue64 stores 64 bits where write access was granted",
          "[emu]") {
  Device0 d;
  auto rng = tmashmem_test::make_rng(0x57);
  CUdeviceptr buf = 0;
  REQUIRE(cu().cuMemAlloc(&buf, 64) == CUDA_SUCCESS);
  for (int i = 0; i < 8; ++i) store(buf + 8 * i, 0);
  for (int i = 0; i < 16; ++i) {
    const uint64_t v = rng();
    const unsigned flags =
        i % 2 ? CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER : CU_STREAM_WRITE_VALUE_DEFAULT;
    REQUIRE(cu().cuStreamWriteValue64(i % 3 ? some_stream() : nullptr, buf + 16, v, flags) ==
            CUDA_SUCCESS);
    CHECK(load(buf + 16) == v);
    CHECK(load(buf + 8) == 0);  // neighbours untouched
    CHECK(load(buf + 24) == 0);
  }
  CHECK(cu().cuStreamWriteValue64(nullptr, buf + 4, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cu().cuStreamWriteValue64(nullptr, buf, 1, 2) == CUDA_ERROR_INVALID_VALUE);  // flags
  uint64_t host = 0;
  CHECK(cu().cuStreamWriteValue64(nullptr, reinterpret_cast<CUdeviceptr>(&host), 1, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(host == 0);
  CHECK(cu().cuMemFree(buf) == CUDA_SUCCESS);

  // VMM memory: writable only once read-write access was granted; readable for a wait
  // with read access.
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  REQUIRE(cu().cuMemCreate(&handle, kGran, &prop, 0) == CUDA_SUCCESS);
  CUdeviceptr va = 0;
  REQUIRE(cu().cuMemAddressReserve(&va, kGran, 0, 0, 0) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemMap(va, kGran, 0, handle, 0) == CUDA_SUCCESS);
  CHECK(cu().cuStreamWriteValue64(nullptr, va, 1, 0) == CUDA_ERROR_INVALID_VALUE);  // no access
  CHECK(wait(va, 0, CU_STREAM_WAIT_VALUE_EQ) == CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof access);
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  REQUIRE(cu().cuMemSetAccess(va, kGran, &access, 1) == CUDA_SUCCESS);
  CHECK(cu().cuStreamWriteValue64(nullptr, va, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(wait(va, 0, CU_STREAM_WAIT_VALUE_EQ) == CUDA_SUCCESS);  // VMM memory reads as zero
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  REQUIRE(cu().cuMemSetAccess(va, kGran, &access, 1) == CUDA_SUCCESS);
  const uint64_t v = rng() | 1;
  REQUIRE(cu().cuStreamWriteValue64(nullptr, va + kGran - 8, v, 0) == CUDA_SUCCESS);
  CHECK(load(va + kGran - 8) == v);
  CHECK(wait(va + kGran - 8, v, CU_STREAM_WAIT_VALUE_EQ) == CUDA_SUCCESS);
  CHECK(cu().cuStreamWriteValue64(nullptr, va + kGran, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cu().cuMemUnmap(va, kGran) == CUDA_SUCCESS);
  CHECK(wait(va, 0, CU_STREAM_WAIT_VALUE_EQ) == CUDA_ERROR_INVALID_VALUE);  // unmapped
  REQUIRE(cu().cuMemRelease(handle) == CUDA_SUCCESS);
  REQUIRE(cu().cuMemAddressFree(va, kGran) == CUDA_SUCCESS);
}

TEST_CASE("emulated driver: cuStreamWaitValue64 conditions (GEQ cyclic) and its bound", "[emu]") {
  Device0 d;  // waits give up after 100 ms
  auto rng = tmashmem_test::make_rng(0x58);
  CUdeviceptr buf = 0;
  REQUIRE(cu().cuMemAlloc(&buf, 64) == CUDA_SUCCESS);

  for (int i = 0; i < 4; ++i) {
    // Below 2^62, so that s and s +- 1 are less than 2^63 apart from anything used here.
    const uint64_t s = (rng() >> 2) + 1;
    store(buf, s);
    CHECK(wait(buf, s, CU_STREAM_WAIT_VALUE_EQ) == CUDA_SUCCESS);
    CHECK(wait(buf, s, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
    CHECK(wait(buf, s - 1, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
    CHECK(wait(buf, 1, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
    CHECK(wait(buf, s, CU_STREAM_WAIT_VALUE_AND) == CUDA_SUCCESS);
    CHECK(wait(buf, 0, CU_STREAM_WAIT_VALUE_NOR) == CUDA_SUCCESS);  // ~s != 0
    // Cyclic, not unsigned: a value more than 2^63 above the signal counts as below it
    // (passes), and a signal more than 2^63 above the value counts as below it (waits).
    CHECK(wait(buf, s + kHalf + 1, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
    store(buf, s + kHalf + 1);
    CHECK(wait(buf, 0, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_ERROR_TIMEOUT);
    store(buf, s);
  }
  // Conditions that do not hold wait for the bound, then fail.
  const uint64_t s = rng() >> 2;
  store(buf, s);
  const auto start = std::chrono::steady_clock::now();
  CHECK(wait(buf, s + 1, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_ERROR_TIMEOUT);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= std::chrono::milliseconds(95));
  CHECK(waited < std::chrono::seconds(20));
  CHECK(wait(buf, s ^ 1, CU_STREAM_WAIT_VALUE_EQ) == CUDA_ERROR_TIMEOUT);
  CHECK(wait(buf, ~s, CU_STREAM_WAIT_VALUE_AND) == CUDA_ERROR_TIMEOUT);
  CHECK(wait(buf, ~s, CU_STREAM_WAIT_VALUE_NOR) == CUDA_ERROR_TIMEOUT);  // ~(s | ~s) == 0
  const char* name = nullptr;
  CHECK(cu().cuGetErrorName(CUDA_ERROR_TIMEOUT, &name) == CUDA_SUCCESS);

  // Argument errors.
  CHECK(wait(buf + 4, s, CU_STREAM_WAIT_VALUE_EQ) == CUDA_ERROR_INVALID_VALUE);
  CHECK(wait(buf, s, 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(wait(buf, s, CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cu().cuMemFree(buf) == CUDA_SUCCESS);
}

TEST_CASE("emulated driver: a wait ends when another thread's cuStreamWriteValue64 lands",
          "[emu]") {
  emu::Options o = small_options();
  o.stream_wait_timeout_ms = 20000;
  Device0 d(o);
  auto rng = tmashmem_test::make_rng(0x59);
  CUdeviceptr buf = 0;
  REQUIRE(cu().cuMemAlloc(&buf, 64) == CUDA_SUCCESS);
  for (int round = 0; round < 3; ++round) {
    store(buf, 0);
    const uint64_t v = (rng() >> 2) | 2;  // so that GEQ v - 1 does not hold for 0
    CUresult written = CUDA_ERROR_UNKNOWN;
    std::thread writer([&] {
      // The emulator's current context is per thread, as in libcuda.
      if (cu().cuCtxSetCurrent(d.context) != CUDA_SUCCESS) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      written = cu().cuStreamWriteValue64(nullptr, buf, v, CU_STREAM_WRITE_VALUE_DEFAULT);
    });
    const CUresult waited = wait(buf, round == 1 ? v : v - 1,
                                 round == 1 ? CU_STREAM_WAIT_VALUE_EQ : CU_STREAM_WAIT_VALUE_GEQ);
    writer.join();
    CHECK(written == CUDA_SUCCESS);
    CHECK(waited == CUDA_SUCCESS);
    CHECK(load(buf) == v);
  }
  CHECK(cu().cuMemFree(buf) == CUDA_SUCCESS);
}
