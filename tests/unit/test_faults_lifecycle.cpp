// Fault matrix (docs/reliability.md), lifecycle rows: every public call after finalize,
// finalize with allocations and tensors outstanding, a heap maximum below the allocation
// granularity, what tmashmem_last_error() holds after a successful call, and every call
// before init (the same check). Rows kept elsewhere: init twice (test_lifecycle.cpp), heap
// exhaustion then recovery, double free and frees of foreign pointers or the signal pad
// (test_heap.cpp).
#include <string>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
namespace emu = tmashmem::emu;

namespace {

bool said_not_initialized(const char* call) {
  const std::string want = std::string("[tmashmem rank ?] ") + call +
                           " called before tmashmem_init (or after tmashmem_finalize)";
  const std::string got = tmashmem_last_error();
  if (got != want) std::printf("%s: \"%s\", expected \"%s\"\n", call, got.c_str(), want.c_str());
  return got == want;
}

// Every public call that needs the runtime, made while it is not running (before init or
// after finalize): each fails with NOT_INITIALIZED (NULL, -1) and the one message naming it.
// `block` and `sig` are what a program would still hold (a stale heap block and signal, or
// local memory before init).
void check_every_call_not_initialized(void* block, uint64_t* sig) {
  REQUIRE_FALSE(tmashmem_initialized());
  CHECK(tmashmem_malloc(64) == nullptr);
  CHECK(said_not_initialized("tmashmem_malloc"));
  CHECK(tmashmem_calloc(1, 64) == nullptr);
  CHECK(said_not_initialized("tmashmem_calloc"));
  CHECK(tmashmem_align(4096, 64) == nullptr);
  CHECK(said_not_initialized("tmashmem_align"));
  CHECK(tmashmem_free(block) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_free"));
  CHECK(tmashmem_free(nullptr) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_free"));
  CHECK(tmashmem_ptr(block, 0) == nullptr);
  CHECK(said_not_initialized("tmashmem_ptr"));
  CHECK(tmashmem_barrier_all() == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_barrier_all"));
  CHECK(tmashmem_signal_pad() == nullptr);
  CHECK(said_not_initialized("tmashmem_signal_pad"));
  tmashmem_ctx_t ctx;
  CHECK(tmashmem_device_ctx(&ctx) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_device_ctx"));
  CHECK(tmashmem_barrier_all_on_stream(nullptr) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_barrier_all_on_stream"));
  CHECK(tmashmem_putmem_on_stream(block, sig, 8, 0, nullptr) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_putmem_on_stream"));
  CHECK(tmashmem_getmem_on_stream(sig, block, 8, 0, nullptr) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_getmem_on_stream"));
  CHECK(tmashmem_signal_op_on_stream(sig, 1, TMASHMEM_SIGNAL_SET, 0, nullptr) ==
        TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_signal_op_on_stream"));
  CHECK(tmashmem_signal_wait_until_on_stream(sig, TMASHMEM_CMP_EQ, 0, nullptr) ==
        TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_signal_wait_until_on_stream"));
  int32_t status = -1;
  CHECK(tmashmem_signal_wait_until_on_stream_timeout(sig, TMASHMEM_CMP_EQ, 0, 1000, &status,
                                                     nullptr) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_signal_wait_until_on_stream_timeout"));
  CHECK(tmashmem_finalize() == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(said_not_initialized("tmashmem_finalize"));
  CHECK(tmashmem_my_pe() == -1);
  CHECK(tmashmem_n_pes() == -1);
  CHECK(tmashmem_device() == -1);
  CHECK(status == -1);
}

}  // namespace

TEST_CASE("lifecycle: every call before init gives the one NOT_INITIALIZED message, naming it") {
  uint64_t local[2] = {0, 0};
  check_every_call_not_initialized(local, local + 1);
}

TEST_CASE("faults: every public call after finalize is NOT_INITIALIZED, naming the call") {
  void* block = nullptr;
  uint64_t* sig = nullptr;
  {
    EmulatedRuntime rt;
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
    block = tmashmem_malloc(4096);
    sig = static_cast<uint64_t*>(tmashmem_calloc(1, 8));
    REQUIRE(all_ranks(block != nullptr && sig != nullptr));
  }  // finalized here, with both still allocated
  check_every_call_not_initialized(block, sig);
}

TEST_CASE("faults: finalize with allocations and a tensor outstanding releases everything") {
  emu::install();
  const int fds_before = count_fds();
  tmashmem_init_attr_t attr = small_heap_attr();
  REQUIRE(all_ranks(tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS));
  void* a = tmashmem_malloc(size_t(3) << 20);  // grows the heap past its first chunk
  void* b = tmashmem_calloc(16, 64);
  uint64_t dims[1] = {1024};
  uint32_t box[1] = {64};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_F32, 1, dims, box) == TMASHMEM_SUCCESS);
  tmashmem_tensor_t t = nullptr;
  REQUIRE(all_ranks(a && b && tmashmem_tensor_create(&d, &t) == TMASHMEM_SUCCESS));
  CHECK(tmashmem_finalize() == TMASHMEM_SUCCESS);
  const emu::Counts c = emu::counts();
  CHECK(c.allocations == 0);
  CHECK(c.mappings == 0);
  CHECK(c.reservations == 0);
  CHECK(c.device_buffers == 0);  // the tensor's device map table too
  CHECK(c.open_memfds == 0);
  CHECK(count_fds() == fds_before);
  // The tensor handle outlives finalize as a host object only (tensor.h): using it is an
  // error, and tmashmem_tensor_destroy under a later init frees the rest.
  CHECK(tmashmem_tensor_data(t) == nullptr);
  // A new init starts clean, and the old pointers are not its blocks.
  REQUIRE(all_ranks(tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS));
  // Which error depends on where each PE's new window landed: a stale pointer outside it is
  // foreign (INVALID_VALUE); if the window reuses the old addresses on some PEs only, the
  // pointer is foreign there and not elsewhere, which is a symmetry error (docs/design.md,
  // "Free"). Seen under ASan at 4 PEs. Never success.
  const tmashmem_status_t stale = tmashmem_free(b);
  CHECK((stale == TMASHMEM_ERROR_INVALID_VALUE || stale == TMASHMEM_ERROR_SYMMETRY));
  // The stale handle is refused (naming finalize) and its host part released (test_tensor).
  CHECK(tmashmem_tensor_destroy(t) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_finalize() == TMASHMEM_SUCCESS);
  emu::uninstall();
}

TEST_CASE("faults: a heap maximum below the granularity is rounded up to one granule") {
  // TMASHMEM_HEAP_MAX=1K (here the attr field, same rule): the window is one 2 MiB granule,
  // as the setting's help says; the signal pad takes its share of it.
  EmulatedRuntime rt(emu::Options(), small_heap_attr(1024));
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  void* fits = tmashmem_malloc(size_t(1) << 20);
  CHECK(fits != nullptr);
  CHECK(tmashmem_malloc(size_t(2) << 20) == nullptr);  // more than the granule holds
  const std::string m = tmashmem_last_error();
  INFO(m);
  CHECK(m.find("TMASHMEM_HEAP_MAX=2M") != std::string::npos);
  CHECK(tmashmem_free(fits) == TMASHMEM_SUCCESS);
}

TEST_CASE("faults: a successful call does not clear tmashmem_last_error(); init does") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  CHECK(std::string(tmashmem_last_error()).empty());  // init cleared it
  tmashmem_ctx_t ctx;
  CHECK(tmashmem_device_ctx(nullptr) == TMASHMEM_ERROR_INVALID_VALUE);
  const std::string failure = tmashmem_last_error();
  CHECK_FALSE(failure.empty());
  CHECK(tmashmem_device_ctx(&ctx) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  CHECK(std::string(tmashmem_last_error()) == failure);  // still the earlier failure's
}
