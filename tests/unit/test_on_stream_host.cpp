// The on-stream calls' host half (runtime/on_stream.cpp) on the emulated driver, under
// mpiexec -np 1 and 2: the initialisation check and every argument check, the stream
// memory operations (SET is cuStreamWriteValue64 into the peer's copy; EQ, GE and GT are
// cuStreamWaitValue64, whose failure names the call and the fix), which comparisons take
// the kernel instead, TMASHMEM_STREAM_MEM_OPS=0 and devices without 64-bit stream memory
// operations, and that a signal call restores the thread's context. This build has no
// device library, so every kernel or copy path must return TMASHMEM_ERROR_NOT_SUPPORTED
// naming the call (the GPU half is tests/gpu/test_on_stream.cu).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "common/catch.h"
#include "common/env_guard.h"
#include "common/test_util.h"
#include "runtime/driver.h"
#include "runtime/stream_kernels.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
namespace emu = tmashmem::emu;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `got` is `want` and the thread's message mentions every one of `parts`.
bool failed_with(tmashmem_status_t got, tmashmem_status_t want,
                 std::initializer_list<const char*> parts) {
  const std::string m = tmashmem_last_error();
  bool ok = got == want;
  for (const char* p : parts) ok = ok && contains(m, p);
  if (!ok)
    std::printf("[PE %d] got %s, want %s; message \"%s\"\n", mpi_rank(), tmashmem_error_string(got),
                tmashmem_error_string(want), m.c_str());
  return ok;
}

bool no_kernels(tmashmem_status_t got, const char* call) {
  return failed_with(got, TMASHMEM_ERROR_NOT_SUPPORTED, {call, "no device library"});
}

// A live stream of the runtime's device (the on-stream calls check that the stream belongs to
// the runtime's context).
tmashmem_stream_t some_stream() { return emu::create_stream(tmashmem_device()); }

emu::Options quick_waits(bool mem_ops_64 = true) {
  emu::Options o;
  o.stream_wait_timeout_ms = 50;
  o.stream_mem_ops_64 = mem_ops_64;
  return o;
}

// COLLECTIVE: `words` zeroed symmetric words, REQUIREd on every PE.
uint64_t* symmetric_words(size_t words) {
  auto* p = static_cast<uint64_t*>(tmashmem_calloc(words, sizeof(uint64_t)));
  REQUIRE(all_ranks(p != nullptr));
  return p;
}

}  // namespace

TEST_CASE("on-stream host: every call before init names itself and tmashmem_init") {
  uint64_t dummy[2] = {0, 0};
  CHECK(failed_with(tmashmem_barrier_all_on_stream(nullptr), TMASHMEM_ERROR_NOT_INITIALIZED,
                    {"tmashmem_barrier_all_on_stream", "tmashmem_init"}));
  CHECK(failed_with(tmashmem_putmem_on_stream(dummy, dummy, 8, 0, nullptr),
                    TMASHMEM_ERROR_NOT_INITIALIZED,
                    {"tmashmem_putmem_on_stream", "tmashmem_init"}));
  CHECK(failed_with(tmashmem_getmem_on_stream(dummy, dummy, 8, 0, nullptr),
                    TMASHMEM_ERROR_NOT_INITIALIZED,
                    {"tmashmem_getmem_on_stream", "tmashmem_init"}));
  CHECK(failed_with(tmashmem_signal_op_on_stream(dummy, 1, TMASHMEM_SIGNAL_SET, 0, nullptr),
                    TMASHMEM_ERROR_NOT_INITIALIZED,
                    {"tmashmem_signal_op_on_stream", "tmashmem_init"}));
  CHECK(failed_with(tmashmem_signal_wait_until_on_stream(dummy, TMASHMEM_CMP_EQ, 0, nullptr),
                    TMASHMEM_ERROR_NOT_INITIALIZED,
                    {"tmashmem_signal_wait_until_on_stream", "tmashmem_init"}));
}

TEST_CASE("on-stream host: argument errors name the problem") {
  EmulatedRuntime rt(quick_waits());
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int n = tmashmem_n_pes();
  auto* sym = static_cast<uint64_t*>(tmashmem_malloc(4096));
  REQUIRE(all_ranks(sym != nullptr));
  uint64_t local[8] = {0};
  CHECK(failed_with(tmashmem_putmem_on_stream(sym, local, 64, n, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"tmashmem_putmem_on_stream", "out of range"}));
  CHECK(failed_with(tmashmem_getmem_on_stream(local, sym, 64, -1, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"tmashmem_getmem_on_stream", "out of range"}));
  CHECK(failed_with(tmashmem_putmem_on_stream(local, sym, 64, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"dest", "symmetric heap"}));
  CHECK(failed_with(tmashmem_getmem_on_stream(local, local, 64, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"src", "symmetric heap"}));
  CHECK(failed_with(tmashmem_putmem_on_stream(sym, nullptr, 64, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"src is NULL"}));
  CHECK(failed_with(tmashmem_getmem_on_stream(nullptr, sym, 64, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"dest is NULL"}));
  CHECK(failed_with(tmashmem_putmem_on_stream(nullptr, local, 64, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"dest is NULL"}));
  CHECK(failed_with(tmashmem_putmem_on_stream(sym, local, size_t(1) << 50, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"symmetric heap"}));
  CHECK(tmashmem_putmem_on_stream(sym, nullptr, 0, 0, nullptr) == TMASHMEM_SUCCESS);  // no-op
  CHECK(tmashmem_getmem_on_stream(nullptr, sym, 0, 0, nullptr) == TMASHMEM_SUCCESS);
  auto* misaligned = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(sym) + 4);
  CHECK(failed_with(tmashmem_signal_op_on_stream(misaligned, 1, TMASHMEM_SIGNAL_SET, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"aligned"}));
  CHECK(failed_with(tmashmem_signal_wait_until_on_stream(misaligned, TMASHMEM_CMP_EQ, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"aligned"}));
  CHECK(failed_with(tmashmem_signal_op_on_stream(sym, 1, 7, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"op 7", "TMASHMEM_SIGNAL_SET"}));
  CHECK(failed_with(tmashmem_signal_op_on_stream(sym, 1, TMASHMEM_SIGNAL_SET, n, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"out of range"}));
  CHECK(failed_with(tmashmem_signal_op_on_stream(local, 1, TMASHMEM_SIGNAL_ADD, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"sig", "symmetric heap"}));
  CHECK(failed_with(tmashmem_signal_op_on_stream(nullptr, 1, TMASHMEM_SIGNAL_SET, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"sig is NULL"}));
  CHECK(failed_with(tmashmem_signal_wait_until_on_stream(sym, 9, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"cmp 9", "TMASHMEM_CMP_EQ"}));
  CHECK(failed_with(tmashmem_signal_wait_until_on_stream(nullptr, TMASHMEM_CMP_EQ, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"NULL"}));
  CHECK(failed_with(tmashmem_signal_wait_until_on_stream(local, TMASHMEM_CMP_EQ, 0, nullptr),
                    TMASHMEM_ERROR_INVALID_VALUE, {"symmetric heap"}));
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(sym) == TMASHMEM_SUCCESS);
}

TEST_CASE("on-stream host: put/get ranges that wrap the address space are rejected") {
  EmulatedRuntime rt(quick_waits());
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int me = tmashmem_my_pe(), peer = (me + 1) % tmashmem_n_pes();
  auto* sym = static_cast<char*>(tmashmem_malloc(1 << 16));
  REQUIRE(all_ranks(sym != nullptr));
  char local[64] = {0};
  char* inside = sym + 4096;
  const uintptr_t to_top = UINTPTR_MAX - reinterpret_cast<uintptr_t>(inside);
  // Each size makes `inside + size - 1` wrap around to (or below) a heap address.
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 100, size_t(to_top) + 2, size_t(to_top) + 4097}) {
    INFO("bytes = " << bytes);
    CHECK(failed_with(tmashmem_putmem_on_stream(inside, local, bytes, peer, some_stream()),
                      TMASHMEM_ERROR_INVALID_VALUE,
                      {"tmashmem_putmem_on_stream", "symmetric heap"}));
    CHECK(failed_with(tmashmem_getmem_on_stream(local, inside, bytes, peer, some_stream()),
                      TMASHMEM_ERROR_INVALID_VALUE,
                      {"tmashmem_getmem_on_stream", "symmetric heap"}));
  }
  // The last byte of the backed heap is in range; one more is not.
  tmashmem_ctx_t ctx;
  REQUIRE(tmashmem_device_ctx(&ctx) == TMASHMEM_SUCCESS);
  char* end = reinterpret_cast<char*>(ctx.heap_base + ctx.heap_size);
  CHECK(no_kernels(tmashmem_putmem_on_stream(end - 64, local, 64, peer, some_stream()),
                   "tmashmem_putmem_on_stream"));
  CHECK(failed_with(tmashmem_putmem_on_stream(end - 64, local, 65, peer, some_stream()),
                    TMASHMEM_ERROR_INVALID_VALUE, {"symmetric heap"}));
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(sym) == TMASHMEM_SUCCESS);
}

TEST_CASE("on-stream host: without the device library every kernel and copy path says so") {
  REQUIRE(tmashmem::stream_kernels() == nullptr);
  EmulatedRuntime rt(quick_waits());
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  uint64_t* sym = symmetric_words(64);
  uint64_t local[8] = {0};
  const int peer = (me + 1) % n;
  CHECK(no_kernels(tmashmem_putmem_on_stream(sym, local, 64, peer, some_stream()),
                   "tmashmem_putmem_on_stream"));
  CHECK(no_kernels(tmashmem_getmem_on_stream(local, sym, 64, peer, some_stream()),
                   "tmashmem_getmem_on_stream"));
  CHECK(
      no_kernels(tmashmem_barrier_all_on_stream(some_stream()), "tmashmem_barrier_all_on_stream"));
  // ADD is always the kernel (no atomic stream memory operation); so are NE, LT, LE, GE 0
  // and GT UINT64_MAX (no stream-wait form that is exact).
  CHECK(no_kernels(tmashmem_signal_op_on_stream(sym, 1, TMASHMEM_SIGNAL_ADD, peer, nullptr),
                   "tmashmem_signal_op_on_stream"));
  for (int cmp : {TMASHMEM_CMP_NE, TMASHMEM_CMP_LT, TMASHMEM_CMP_LE}) {
    INFO("cmp " << cmp);
    CHECK(no_kernels(tmashmem_signal_wait_until_on_stream(sym, cmp, 5, nullptr),
                     "tmashmem_signal_wait_until_on_stream"));
  }
  CHECK(no_kernels(tmashmem_signal_wait_until_on_stream(sym, TMASHMEM_CMP_GE, 0, nullptr),
                   "tmashmem_signal_wait_until_on_stream"));
  CHECK(no_kernels(tmashmem_signal_wait_until_on_stream(sym, TMASHMEM_CMP_GT, UINT64_MAX, nullptr),
                   "tmashmem_signal_wait_until_on_stream"));
  // None of them wrote anything.
  for (int i = 0; i < 64; ++i) CHECK(sym[i] == 0);
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(sym) == TMASHMEM_SUCCESS);
}

TEST_CASE("on-stream host: SET is a stream write into the peer's copy; EQ/GE/GT are stream waits") {
  EmulatedRuntime rt(quick_waits());
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  constexpr int kSlots = 16;
  uint64_t* sig = symmetric_words(kSlots + 2);
  uint64_t* slots = sig + 1;  // sig[0] and sig[kSlots + 1] are guards
  auto rng = make_rng(0x0511);
  // Every PE sets slot [me] of every PE's copy to a value only it knows...
  std::vector<uint64_t> mine(static_cast<size_t>(n));
  for (int pe = 0; pe < n; ++pe) {
    mine[static_cast<size_t>(pe)] = (rng() >> 2) | 1;
    CHECK(tmashmem_signal_op_on_stream(slots + me, mine[static_cast<size_t>(pe)],
                                       TMASHMEM_SIGNAL_SET, pe, some_stream()) == TMASHMEM_SUCCESS);
  }
  // ...and publishes the values, so every PE can check every slot of its own copy.
  std::vector<uint64_t> all(static_cast<size_t>(n) * static_cast<size_t>(n));
  MPI_Allgather(mine.data(), n, MPI_UINT64_T, all.data(), n, MPI_UINT64_T, MPI_COMM_WORLD);
  bool ok = sig[0] == 0 && sig[kSlots + 1] == 0;
  for (int writer = 0; writer < n; ++writer) {
    const uint64_t want = all[static_cast<size_t>(writer) * n + me];
    ok = ok && slots[writer] == want;
    // The waits that hold return at once; GT v is GEQ v + 1.
    ok = ok && tmashmem_signal_wait_until_on_stream(slots + writer, TMASHMEM_CMP_EQ, want,
                                                    some_stream()) == TMASHMEM_SUCCESS;
    ok = ok && tmashmem_signal_wait_until_on_stream(slots + writer, TMASHMEM_CMP_GE, want,
                                                    nullptr) == TMASHMEM_SUCCESS;
    ok = ok && tmashmem_signal_wait_until_on_stream(slots + writer, TMASHMEM_CMP_GT, want - 1,
                                                    nullptr) == TMASHMEM_SUCCESS;
  }
  for (int s = n; s < kSlots; ++s) ok = ok && slots[s] == 0;
  CHECK(ok);
  // A wait that never holds: the emulated wait gives up, and the error names the stream
  // operation, its arguments and the fix.
  const uint64_t v = slots[me];
  CHECK(
      failed_with(tmashmem_signal_wait_until_on_stream(slots + me, TMASHMEM_CMP_GT, v, nullptr),
                  TMASHMEM_ERROR_CUDA,
                  {"tmashmem_signal_wait_until_on_stream", "cuStreamWaitValue64",
                   "CU_STREAM_WAIT_VALUE_GEQ", "CUDA_ERROR_TIMEOUT", "TMASHMEM_STREAM_MEM_OPS=0"}));
  CHECK(
      failed_with(tmashmem_signal_wait_until_on_stream(slots + me, TMASHMEM_CMP_EQ, v ^ 2, nullptr),
                  TMASHMEM_ERROR_CUDA, {"CU_STREAM_WAIT_VALUE_EQ"}));
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(sig) == TMASHMEM_SUCCESS);
}

TEST_CASE("on-stream host: a stream wait ends when the peer's stream write lands") {
  if (!have_pes(2, "needs 2 PEs: one waits, the other signals")) return;
  emu::Options o = quick_waits();
  o.stream_wait_timeout_ms = 20000;
  EmulatedRuntime rt(o);
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int me = tmashmem_my_pe();
  uint64_t* sig = symmetric_words(1);
  uint64_t v = (make_rng(0x0512)() >> 2) | 1;
  MPI_Bcast(&v, 1, MPI_UINT64_T, 1, MPI_COMM_WORLD);
  bool ok = true;
  if (me == 0) {
    ok = tmashmem_signal_wait_until_on_stream(sig, TMASHMEM_CMP_EQ, v, nullptr) == TMASHMEM_SUCCESS;
    ok = ok && *sig == v;
  } else if (me == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ok = tmashmem_signal_op_on_stream(sig, v, TMASHMEM_SIGNAL_SET, 0, nullptr) == TMASHMEM_SUCCESS;
  }
  CHECK(all_ranks(ok));
  CHECK(tmashmem_free(sig) == TMASHMEM_SUCCESS);
}

TEST_CASE("on-stream host: TMASHMEM_STREAM_MEM_OPS=0 or a device without them takes the kernels") {
  for (int variant = 0; variant < 2; ++variant) {
    INFO((variant == 0 ? "TMASHMEM_STREAM_MEM_OPS=0" : "device without 64-bit stream mem ops"));
    std::unique_ptr<EnvGuard> off;
    if (variant == 0) off.reset(new EnvGuard("TMASHMEM_STREAM_MEM_OPS", "0"));
    EmulatedRuntime rt(quick_waits(/*mem_ops_64=*/variant == 0));
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
    uint64_t* sig = symmetric_words(1);
    CHECK(no_kernels(tmashmem_signal_op_on_stream(sig, 3, TMASHMEM_SIGNAL_SET, 0, nullptr),
                     "tmashmem_signal_op_on_stream"));
    CHECK(*sig == 0);
    for (int cmp : {TMASHMEM_CMP_EQ, TMASHMEM_CMP_GE, TMASHMEM_CMP_GT})
      CHECK(no_kernels(tmashmem_signal_wait_until_on_stream(sig, cmp, 0, nullptr),
                       "tmashmem_signal_wait_until_on_stream"));
    CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
    CHECK(tmashmem_free(sig) == TMASHMEM_SUCCESS);
  }
}

TEST_CASE("on-stream host: the signal calls leave the thread's current context as they found it") {
  EmulatedRuntime rt(quick_waits());
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  uint64_t* sig = symmetric_words(1);
  const tmashmem::DriverApi& cu = tmashmem::driver();
  CUcontext runtime_context = nullptr;
  REQUIRE(cu.cuCtxGetCurrent(&runtime_context) == CUDA_SUCCESS);
  REQUIRE(runtime_context != nullptr);
  // On another thread with no current context, the calls still act in the runtime's
  // context (the emulated write needs one) and leave none current.
  bool ok = false;
  std::thread other([&] {
    CUcontext before = reinterpret_cast<CUcontext>(uintptr_t(1));
    CUcontext after = reinterpret_cast<CUcontext>(uintptr_t(1));
    ok = cu.cuCtxGetCurrent(&before) == CUDA_SUCCESS && before == nullptr;
    ok = ok && tmashmem_signal_op_on_stream(sig, 9, TMASHMEM_SIGNAL_SET, tmashmem_my_pe(),
                                            nullptr) == TMASHMEM_SUCCESS;
    ok = ok &&
         tmashmem_signal_wait_until_on_stream(sig, TMASHMEM_CMP_EQ, 9, nullptr) == TMASHMEM_SUCCESS;
    ok = ok && cu.cuCtxGetCurrent(&after) == CUDA_SUCCESS && after == nullptr;
  });
  other.join();
  CHECK(ok);
  CHECK(*sig == 9);
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(sig) == TMASHMEM_SUCCESS);
}

TEST_CASE("on-stream host: destroyed, made-up and foreign streams are refused before enqueueing") {
  emu::Options o = quick_waits();
  o.device_count = 2;  // a stream of the other device belongs to another context
  EmulatedRuntime rt(o);
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  uint64_t* sym = symmetric_words(8);
  uint64_t local[8] = {0};
  const int peer = (me + 1) % n;
  // (Created before the destroyed one, so that it cannot reuse that handle's address.)
  tmashmem_stream_t foreign = emu::create_stream(1 - tmashmem_device());
  tmashmem_stream_t destroyed = emu::create_stream(tmashmem_device());
  emu::destroy_stream(destroyed);
  const auto made_up = reinterpret_cast<tmashmem_stream_t>(uintptr_t(0x5000));
  int32_t status = -1;
  // Each result is checked right after its call, while the message is still its own.
  auto check_all = [&](tmashmem_stream_t s, tmashmem_status_t want,
                       std::initializer_list<const char*> parts) {
    int bad = 0;
    const char* names[] = {"tmashmem_barrier_all_on_stream",
                           "tmashmem_putmem_on_stream",
                           "tmashmem_getmem_on_stream",
                           "tmashmem_signal_op_on_stream",
                           "tmashmem_signal_wait_until_on_stream",
                           "tmashmem_signal_wait_until_on_stream_timeout"};
    for (int i = 0; i < 6; ++i) {
      tmashmem_status_t got = TMASHMEM_SUCCESS;
      switch (i) {
        case 0:
          got = tmashmem_barrier_all_on_stream(s);
          break;
        case 1:
          got = tmashmem_putmem_on_stream(sym, local, 8, peer, s);
          break;
        case 2:
          got = tmashmem_getmem_on_stream(local, sym, 8, peer, s);
          break;
        case 3:
          got = tmashmem_signal_op_on_stream(sym, 1, TMASHMEM_SIGNAL_SET, peer, s);
          break;
        case 4:
          got = tmashmem_signal_wait_until_on_stream(sym, TMASHMEM_CMP_EQ, 0, s);
          break;
        default:
          got = tmashmem_signal_wait_until_on_stream_timeout(sym, TMASHMEM_CMP_EQ, 0, 1000, &status,
                                                             s);
      }
      bool ok = failed_with(got, want, parts) && contains(tmashmem_last_error(), names[i]);
      if (!ok) std::printf("  (call %s)\n", names[i]);
      bad += ok ? 0 : 1;
    }
    return bad == 0;
  };
  CHECK(check_all(destroyed, TMASHMEM_ERROR_CUDA, {"cuStreamGetCtx", "CUDA_ERROR_INVALID_HANDLE"}));
  CHECK(check_all(made_up, TMASHMEM_ERROR_CUDA, {"cuStreamGetCtx", "CUDA_ERROR_INVALID_HANDLE"}));
  CHECK(check_all(foreign, TMASHMEM_ERROR_INVALID_VALUE,
                  {"belongs to CUDA context", "tmashmem_device()"}));
  // Nothing was enqueued: no signal changed anywhere, and the timed wait wrote no status.
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  for (int i = 0; i < 8; ++i) CHECK(sym[i] == 0);
  CHECK(status == -1);
  // The special handles pass the stream check (and then reach the kernel path, absent here).
  for (tmashmem_stream_t s :
       {static_cast<tmashmem_stream_t>(nullptr),
        reinterpret_cast<tmashmem_stream_t>(CU_STREAM_LEGACY),
        reinterpret_cast<tmashmem_stream_t>(CU_STREAM_PER_THREAD), some_stream()})
    CHECK(no_kernels(tmashmem_barrier_all_on_stream(s), "tmashmem_barrier_all_on_stream"));
  CHECK(tmashmem_free(sym) == TMASHMEM_SUCCESS);
}

TEST_CASE("on-stream host: the bounded wait checks its arguments, then needs the kernels") {
  const char* call = "tmashmem_signal_wait_until_on_stream_timeout";
  int32_t status = -1;
  uint64_t x = 0;
  CHECK(tmashmem_signal_wait_until_on_stream_timeout(&x, TMASHMEM_CMP_EQ, 1, 1000, &status,
                                                     nullptr) == TMASHMEM_ERROR_NOT_INITIALIZED);
  CHECK(contains(tmashmem_last_error(), call));
  EmulatedRuntime rt(quick_waits());
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  uint64_t* sym = symmetric_words(8);
  auto wait = [&](uint64_t* sig, int cmp, uint64_t timeout_ns, int32_t* st) {
    return tmashmem_signal_wait_until_on_stream_timeout(sig, cmp, 1, timeout_ns, st, nullptr);
  };
  CHECK(failed_with(wait(sym, TMASHMEM_CMP_EQ, 0, &status), TMASHMEM_ERROR_INVALID_VALUE,
                    {call, "timeout_ns is 0", "tmashmem_signal_wait_until_on_stream"}));
  CHECK(failed_with(wait(sym, TMASHMEM_CMP_EQ, 1000, nullptr), TMASHMEM_ERROR_INVALID_VALUE,
                    {call, "status is NULL", "cudaHostAllocMapped"}));
  auto* odd = reinterpret_cast<int32_t*>(reinterpret_cast<char*>(&status) + 1);
  CHECK(failed_with(wait(sym, TMASHMEM_CMP_EQ, 1000, odd), TMASHMEM_ERROR_INVALID_VALUE,
                    {call, "not 4-byte aligned"}));
  CHECK(failed_with(wait(sym, TMASHMEM_CMP_EQ, 1000, reinterpret_cast<int32_t*>(sym + 1)),
                    TMASHMEM_ERROR_INVALID_VALUE, {call, "in the symmetric heap"}));
  CHECK(failed_with(wait(sym, 9, 1000, &status), TMASHMEM_ERROR_INVALID_VALUE, {call, "cmp 9"}));
  CHECK(failed_with(wait(nullptr, TMASHMEM_CMP_EQ, 1000, &status), TMASHMEM_ERROR_INVALID_VALUE,
                    {call, "sig is NULL"}));
  CHECK(failed_with(wait(&x, TMASHMEM_CMP_EQ, 1000, &status), TMASHMEM_ERROR_INVALID_VALUE,
                    {call, "symmetric heap"}));
  CHECK(failed_with(wait(reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(sym) + 4),
                         TMASHMEM_CMP_EQ, 1000, &status),
                    TMASHMEM_ERROR_INVALID_VALUE, {call, "aligned"}));
  // Valid arguments: always the kernel path (even for EQ, which the unbounded form would
  // give to a stream memory operation), absent in this build.
  for (int cmp = TMASHMEM_CMP_EQ; cmp <= TMASHMEM_CMP_LE; ++cmp)
    CHECK(no_kernels(wait(sym, cmp, 1000, &status), call));
  CHECK(status == -1);
  CHECK(tmashmem_barrier_all() == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(sym) == TMASHMEM_SUCCESS);
}
