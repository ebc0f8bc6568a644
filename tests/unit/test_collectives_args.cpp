// The on-stream collectives' host half (runtime/collectives.cpp) on the emulated driver,
// under mpiexec -np 1 and 2: every argument check fails before anything is enqueued with
// a message naming the call, the value and the fix; a symmetry violation (different sizes
// or CTA counts on different PEs) is TMASHMEM_ERROR_SYMMETRY on every PE; calls that pass
// every check reach the launch, which this build (no device library) refuses with
// TMASHMEM_ERROR_NOT_SUPPORTED naming the call; with a stand-in table that launches as
// device/driver_launch.h does (the driver table's cuLaunchKernelEx), a launch the driver refuses
// is TMASHMEM_ERROR_CUDA naming the call, the CTAs and the driver's error. The GPU half is
// tests/gpu/test_collectives.cu.
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/catch.h"
#include "common/env_guard.h"
#include "common/test_util.h"
#include "runtime/collectives_kernels.h"
#include "runtime/driver.h"
#include "runtime/stream_kernels.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `got` is `want` and the thread's message mentions every one of `parts`.
bool failed_with(tmashmem_status_t got, tmashmem_status_t want,
                 std::initializer_list<const char*> parts, int line) {
  const std::string m = tmashmem_last_error();
  bool ok = got == want;
  for (const char* p : parts) ok = ok && contains(m, p);
  if (!ok)
    std::printf("[PE %d] line %d: got %s, want %s; message \"%s\"\n", mpi_rank(), line,
                tmashmem_error_string(got), tmashmem_error_string(want), m.c_str());
  return ok;
}
#define FAILS(call, status, ...) failed_with((call), (status), {__VA_ARGS__}, __LINE__)

// Passed every check and reached the launch, which has no device library here.
#define REACHES_LAUNCH(call, name) \
  failed_with((call), TMASHMEM_ERROR_NOT_SUPPORTED, {name, "no device library"}, __LINE__)

tmashmem_stream_t no_stream() { return nullptr; }

// An emulated runtime and two 64 KiB symmetric buffers; freed (after a barrier) before the
// runtime finalizes.
struct TwoBuffers {
  EmulatedRuntime rt;
  char* a = nullptr;
  char* b = nullptr;
  explicit TwoBuffers(const tmashmem::emu::Options& options = tmashmem::emu::Options())
      : rt(options) {
    if (rt.status != TMASHMEM_SUCCESS) return;
    a = static_cast<char*>(tmashmem_malloc(1 << 16));
    b = static_cast<char*>(tmashmem_malloc(1 << 16));
  }
  ~TwoBuffers() {
    if (!tmashmem_initialized()) return;
    tmashmem_barrier_all();
    tmashmem_free(b);
    tmashmem_free(a);
  }
  bool ready() const { return rt.status == TMASHMEM_SUCCESS && a != nullptr && b != nullptr; }
};

}  // namespace

TEST_CASE("collectives: every call before init names itself and tmashmem_init") {
  char buf[64];
  uint64_t arr[4] = {0, 0, 0, 0};
  CHECK(FAILS(tmashmem_allgather_on_stream(buf, buf, 8, 0, no_stream()),
              TMASHMEM_ERROR_NOT_INITIALIZED, "tmashmem_allgather_on_stream", "tmashmem_init"));
  CHECK(FAILS(tmashmem_reduce_scatter_on_stream(buf, buf, 2, TMASHMEM_DTYPE_F32,
                                                TMASHMEM_REDUCE_SUM, 0, no_stream()),
              TMASHMEM_ERROR_NOT_INITIALIZED, "tmashmem_reduce_scatter_on_stream"));
  CHECK(FAILS(tmashmem_allreduce_on_stream(buf, buf, 2, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM,
                                           TMASHMEM_ALLREDUCE_AUTO, 0, no_stream()),
              TMASHMEM_ERROR_NOT_INITIALIZED, "tmashmem_allreduce_on_stream"));
  CHECK(FAILS(tmashmem_alltoall_on_stream(buf, buf, 8, 0, no_stream()),
              TMASHMEM_ERROR_NOT_INITIALIZED, "tmashmem_alltoall_on_stream"));
  CHECK(FAILS(tmashmem_alltoallv_on_stream(buf, 8, buf, 8, arr, arr, arr, 0, no_stream()),
              TMASHMEM_ERROR_NOT_INITIALIZED, "tmashmem_alltoallv_on_stream"));
  CHECK(FAILS(tmashmem_broadcast_on_stream(buf, buf, 8, 0, 0, no_stream()),
              TMASHMEM_ERROR_NOT_INITIALIZED, "tmashmem_broadcast_on_stream"));
}

TEST_CASE("collectives: bad arguments are refused before any launch, naming value and fix") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int n = tmashmem_n_pes();
  const size_t kBytes = 1 << 16;
  char* a = static_cast<char*>(tmashmem_malloc(kBytes));
  char* b = static_cast<char*>(tmashmem_malloc(kBytes));
  auto* arrays = static_cast<uint64_t*>(tmashmem_calloc(3 * 64, sizeof(uint64_t)));
  REQUIRE(all_ranks(a != nullptr && b != nullptr && arrays != nullptr));
  char host[256];
  const tmashmem_stream_t s = no_stream();
  bool ok = true;

  // Valid calls pass every check (and then meet the missing device library).
  ok &= REACHES_LAUNCH(tmashmem_allgather_on_stream(b, a, 100, 0, s), "allgather");
  ok &= REACHES_LAUNCH(tmashmem_allgather_on_stream(b, a, 100, 0, s), "allgather");  // cached
  ok &= REACHES_LAUNCH(
      tmashmem_reduce_scatter_on_stream(b, a, 3, TMASHMEM_DTYPE_BF16, TMASHMEM_REDUCE_MAX, 2, s),
      "reduce_scatter");
  for (int algo = 0; algo <= 2; ++algo)
    ok &= REACHES_LAUNCH(tmashmem_allreduce_on_stream(b, a, 1001, TMASHMEM_DTYPE_I32,
                                                      TMASHMEM_REDUCE_MIN, algo, 0, s),
                         "allreduce");
  ok &= REACHES_LAUNCH(tmashmem_alltoall_on_stream(b, a, 7, 1, s), "alltoall");
  ok &= REACHES_LAUNCH(
      tmashmem_alltoallv_on_stream(b, 512, a, 512, arrays, arrays + 64, arrays + 128, 0, s),
      "alltoallv");
  ok &= REACHES_LAUNCH(tmashmem_broadcast_on_stream(b, a, 9, n - 1, 0, s), "broadcast");
  ok &= REACHES_LAUNCH(tmashmem_broadcast_on_stream(a, a, 9, 0, 0, s), "broadcast");  // in place
  // Zero-sized calls are no-ops once the arguments agree.
  ok &= tmashmem_allgather_on_stream(b, a, 0, 0, s) == TMASHMEM_SUCCESS;
  ok &= tmashmem_allreduce_on_stream(b, a, 0, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM,
                                     TMASHMEM_ALLREDUCE_AUTO, 0, s) == TMASHMEM_SUCCESS;

  // Buffers: not in the heap, NULL, past the end, overlapping, misaligned.
  ok &= FAILS(tmashmem_allgather_on_stream(host, a, 8, 0, s), TMASHMEM_ERROR_INVALID_VALUE,
              "tmashmem_allgather_on_stream", "dest", "symmetric heap", "tmashmem_malloc");
  ok &= FAILS(tmashmem_allgather_on_stream(b, host, 8, 0, s), TMASHMEM_ERROR_INVALID_VALUE, "src",
              "symmetric heap");
  ok &= FAILS(tmashmem_alltoall_on_stream(b, nullptr, 8, 0, s), TMASHMEM_ERROR_INVALID_VALUE,
              "src is NULL");
  ok &= FAILS(tmashmem_broadcast_on_stream(b, a, size_t(1) << 40, 0, 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, "dest", "symmetric heap");
  ok &= FAILS(tmashmem_allgather_on_stream(a + 64, a, 128, 0, s), TMASHMEM_ERROR_INVALID_VALUE,
              "overlaps", "separate buffers");
  ok &= FAILS(tmashmem_allreduce_on_stream(a, a, 16, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM,
                                           TMASHMEM_ALLREDUCE_AUTO, 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, "overlaps");
  ok &= FAILS(tmashmem_allreduce_on_stream(b + 2, a, 16, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM,
                                           TMASHMEM_ALLREDUCE_AUTO, 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, "dest", "4-byte aligned");

  // Unsupported dtype / op pairs, algorithms, roots, CTA counts.
  ok &= FAILS(tmashmem_allreduce_on_stream(b, a, 16, TMASHMEM_DTYPE_U8, TMASHMEM_REDUCE_SUM,
                                           TMASHMEM_ALLREDUCE_AUTO, 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, "TMASHMEM_DTYPE_U8", "cannot be reduced");
  ok &= FAILS(
      tmashmem_reduce_scatter_on_stream(b, a, 16, TMASHMEM_DTYPE_F64, TMASHMEM_REDUCE_MAX, 0, s),
      TMASHMEM_ERROR_INVALID_VALUE, "TMASHMEM_DTYPE_F64");
  ok &= FAILS(
      tmashmem_allreduce_on_stream(b, a, 16, TMASHMEM_DTYPE_F16, 7, TMASHMEM_ALLREDUCE_AUTO, 0, s),
      TMASHMEM_ERROR_INVALID_VALUE, "op 7", "TMASHMEM_DTYPE_F16", "TMASHMEM_REDUCE_SUM");
  ok &= FAILS(
      tmashmem_allreduce_on_stream(b, a, 16, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM, 9, 0, s),
      TMASHMEM_ERROR_INVALID_VALUE, "algo 9", "_TWO_SHOT (2)");
  ok &= FAILS(tmashmem_broadcast_on_stream(b, a, 8, n, 0, s), TMASHMEM_ERROR_INVALID_VALUE, "root",
              "out of range");
  ok &= FAILS(tmashmem_broadcast_on_stream(b, a, 8, -1, 0, s), TMASHMEM_ERROR_INVALID_VALUE,
              "root -1");
  ok &= FAILS(tmashmem_allgather_on_stream(b, a, 8, 33, s), TMASHMEM_ERROR_INVALID_VALUE,
              "n_sms 33", "0 for the default");
  ok &=
      FAILS(tmashmem_alltoall_on_stream(b, a, 8, -1, s), TMASHMEM_ERROR_INVALID_VALUE, "n_sms -1");
  ok &= FAILS(tmashmem_allgather_on_stream(b, a, SIZE_MAX / 2 + 1, 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, n > 1 ? "overflows" : "symmetric heap");

  // alltoallv's count and offset arrays.
  ok &= FAILS(tmashmem_alltoallv_on_stream(b, 512, a, 512, nullptr, arrays, arrays, 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, "send_counts is NULL");
  ok &= FAILS(tmashmem_alltoallv_on_stream(b, 512, a, 512, arrays, arrays,
                                           reinterpret_cast<const uint64_t*>(host), 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, "recv_offsets", "symmetric heap");
  ok &= FAILS(
      tmashmem_alltoallv_on_stream(
          b, 512, a, 512, arrays,
          reinterpret_cast<const uint64_t*>(reinterpret_cast<char*>(arrays) + 4), arrays, 0, s),
      TMASHMEM_ERROR_INVALID_VALUE, "send_offsets", "8-byte aligned");
  ok &= FAILS(tmashmem_alltoallv_on_stream(b, 512, a, 512, reinterpret_cast<uint64_t*>(b), arrays,
                                           arrays, 0, s),
              TMASHMEM_ERROR_INVALID_VALUE, "send_counts", "overlaps", "dest");

  CHECK(all_ranks(ok));
  REQUIRE(all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));
  tmashmem_free(arrays);
  tmashmem_free(b);
  tmashmem_free(a);
}

TEST_CASE("collectives: different arguments on different PEs are a symmetry error everywhere") {
  if (mpi_size() < 2) {
    mark_skipped("the symmetry cases need at least 2 PEs (run with mpiexec -np 2)");
    return;
  }
  TwoBuffers f;
  REQUIRE(all_ranks(f.ready()));
  const int me = tmashmem_my_pe();
  char *a = f.a, *b = f.b;
  const tmashmem_stream_t s = no_stream();
  bool ok = true;
  // A count that differs on PE 1: every PE sees the same error, naming the argument.
  ok &= FAILS(tmashmem_allgather_on_stream(b, a, me == 1 ? 128 : 64, 0, s), TMASHMEM_ERROR_SYMMETRY,
              "tmashmem_allgather_on_stream", "size = 64 on PE 0", "128 on PE 1");
  ok &= FAILS(tmashmem_allreduce_on_stream(b, a, 100, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM,
                                           TMASHMEM_ALLREDUCE_AUTO, me == 1 ? 2 : 1, s),
              TMASHMEM_ERROR_SYMMETRY, "CTAs", "1 on PE 0", "2 on PE 1");
  ok &= FAILS(tmashmem_broadcast_on_stream(b, a, 64, me == 1 ? 1 : 0, 0, s),
              TMASHMEM_ERROR_SYMMETRY, "root");
  // Different buffers (different heap offsets).
  ok &= FAILS(tmashmem_alltoall_on_stream(me == 1 ? a : b, me == 1 ? b : a, 16, 0, s),
              TMASHMEM_ERROR_SYMMETRY, "dest (heap offset)");
  // After the errors, an agreeing call still passes (the PEs are in step).
  ok &= REACHES_LAUNCH(tmashmem_allgather_on_stream(b, a, 64, 0, s), "allgather");
  CHECK(all_ranks(ok));
  REQUIRE(all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));
}

TEST_CASE("collectives: TMASHMEM_DEBUG on one PE makes every PE check every call") {
  if (mpi_size() < 2) {
    mark_skipped("needs at least 2 PEs (run with mpiexec -np 2)");
    return;
  }
  // Debug mode checks every call's symmetry, a collective exchange; the PEs must agree on
  // it, or the debugging PE waits in an exchange the others skip.
  const int me = tmashmem_my_pe() >= 0 ? tmashmem_my_pe() : mpi_rank();
  EnvGuard debug("TMASHMEM_DEBUG", me == 1 ? "1" : nullptr);
  TwoBuffers f;
  REQUIRE(all_ranks(f.ready()));
  char *a = f.a, *b = f.b;
  const tmashmem_stream_t s = no_stream();
  bool ok = true;
  // The first call of an argument set is checked everywhere; so is the second, here: PE 1
  // changes its count, and every PE reports the disagreement (a PE answering from its
  // cache would leave PE 1 waiting in the exchange).
  ok &= REACHES_LAUNCH(tmashmem_allgather_on_stream(b, a, 64, 0, s), "allgather");
  ok &= FAILS(tmashmem_allgather_on_stream(b, a, me == 1 ? 128 : 64, 0, s), TMASHMEM_ERROR_SYMMETRY,
              "size = 64 on PE 0", "128 on PE 1");
  ok &= REACHES_LAUNCH(tmashmem_allgather_on_stream(b, a, 64, 0, s), "allgather");
  CHECK(all_ranks(ok));
}

namespace {

// Kernel tables whose collective launch calls the driver table's cuLaunchKernelEx and reports
// with cuda_outcome(CUresult), as device/driver_launch.h does (that file is not in this
// build; the emulator refuses every launch), for the scope of a test; the tables it replaced
// come back at scope end.
tmashmem::CudaOutcome driver_launch(const tmashmem::CollArgs& args, CUstream stream, bool) {
  CUlaunchConfig config{};  // the emulator reads none of it
  config.hStream = stream;
  void* params[] = {const_cast<tmashmem::CollArgs*>(&args)};
  return tmashmem::cuda_outcome(
      tmashmem::driver().cuLaunchKernelEx(&config, nullptr, params, nullptr));
}
// A stand-in that records whether the host half asked for an overlapped launch and whether
// the kernel would let the next one overlap it (2 * that + overlap), and launches nothing.
// Also where the kernel would trigger, and its CTA count.
int g_overlap = -1;  // -1: no launch since the last reset
tmashmem::CollTrigger g_trigger = tmashmem::CollTrigger::None;
int g_ctas = 0;
tmashmem::CudaOutcome recording_launch(const tmashmem::CollArgs& args, CUstream, bool overlap) {
  g_overlap = 2 * (args.next_trigger != tmashmem::CollTrigger::None ? 1 : 0) + (overlap ? 1 : 0);
  g_trigger = args.next_trigger;
  g_ctas = args.n_blocks;
  return {};
}
tmashmem::CudaOutcome stay_on_device(int, int* previous) {
  *previous = -1;
  return {};
}
void leave(int) {}

struct StandInTables {
  const tmashmem::StreamKernels* saved_stream = tmashmem::stream_kernels();
  const tmashmem::CollectiveKernels* saved_coll = tmashmem::collective_kernels();
  tmashmem::StreamKernels stream{};
  tmashmem::CollectiveKernels coll;
  explicit StandInTables(tmashmem::CollectiveKernels kernels = {driver_launch}) : coll(kernels) {
    stream.enter_device = stay_on_device;
    stream.leave_device = leave;
    tmashmem::register_stream_kernels(&stream);
    tmashmem::register_collective_kernels(&coll);
  }
  ~StandInTables() {
    tmashmem::register_collective_kernels(saved_coll);
    tmashmem::register_stream_kernels(saved_stream);
  }
};

}  // namespace

TEST_CASE(
    "collectives: a launch the driver refuses is an error naming the call and the driver's code") {
  TwoBuffers f;
  REQUIRE(all_ranks(f.ready()));
  bool ok = true;
  {
    StandInTables tables;
    ok &= FAILS(tmashmem_allgather_on_stream(f.b, f.a, 64, 0, no_stream()), TMASHMEM_ERROR_CUDA,
                "tmashmem_allgather_on_stream", "launching the collective kernel (1 CTA)",
                "CUDA_ERROR_NOT_SUPPORTED");
    ok &= FAILS(tmashmem_allreduce_on_stream(f.b, f.a, 16, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM,
                                             TMASHMEM_ALLREDUCE_AUTO, 2, no_stream()),
                TMASHMEM_ERROR_CUDA, "tmashmem_allreduce_on_stream", "(2 CTAs)",
                "CUDA_ERROR_NOT_SUPPORTED");
  }
  // The driver's out-of-memory code keeps its status.
  const tmashmem::CudaOutcome oom = tmashmem::cuda_outcome(CUDA_ERROR_OUT_OF_MEMORY);
  ok &= oom.out_of_memory && std::string(oom.name) == "CUDA_ERROR_OUT_OF_MEMORY";
  ok &= tmashmem::cuda_outcome(CUDA_SUCCESS).code == 0;
  // Without the tables the build's answer is back: no device library.
  ok &= REACHES_LAUNCH(tmashmem_allgather_on_stream(f.b, f.a, 64, 0, no_stream()), "allgather");
  CHECK(all_ranks(ok));
}

namespace {

// What recording_launch saw of one all-gather of 64 bytes on `n_sms` CTAs (-1: the call
// failed or launched nothing): 3 overlapped and letting the next overlap, 2 letting the next
// overlap only, 0 neither.
int overlap_of(const TwoBuffers& f, int n_sms, tmashmem_stream_t stream) {
  g_overlap = -1;
  const tmashmem_status_t st = tmashmem_allgather_on_stream(f.b, f.a, 64, n_sms, stream);
  if (st != TMASHMEM_SUCCESS)
    std::printf("[PE %d] allgather on %d CTAs: %s\n", mpi_rank(), n_sms, tmashmem_last_error());
  return st == TMASHMEM_SUCCESS ? g_overlap : -1;
}

// PEs on the busier of two emulated GPUs when PE r uses GPU r % 2 (local rank modulo devices).
int pes_on_busier_of_two() { return (tmashmem_n_pes() + 1) / 2; }

}  // namespace

TEST_CASE(
    "collectives: overlapped launches only with TMASHMEM_COLL_PDL on, on a stream of the "
    "user's, and where twice the sharing PEs' CTAs fit one per SM; the kernel lets the next "
    "overlap it only where it fits so itself") {
  // One GPU of 32 SMs shared by every PE: calls of up to 32 / (2 x PEs) CTAs fit twice (16 at
  // 1 PE, 8 at 2, 4 at 4), 17 never (2 * 17 > 32).
  tmashmem::emu::Options o;
  o.sm_count = 32;
  for (const char* setting : {"on", "off"}) {
    EnvGuard pdl("TMASHMEM_COLL_PDL", setting);
    TwoBuffers f(o);
    REQUIRE(all_ranks(f.ready()));
    const bool on = std::string(setting) == "on";
    const int most = 32 / (2 * tmashmem_n_pes());
    const tmashmem_stream_t s = tmashmem::emu::create_stream(tmashmem_device());
    bool ok = true;
    {
      StandInTables tables({recording_launch});
      ok &= overlap_of(f, most, s) == (on ? 3 : 0);
      ok &= overlap_of(f, 1, s) == (on ? 3 : 0);
      ok &= overlap_of(f, most + 1, s) == 0;
      ok &= overlap_of(f, 17, s) == 0;
      ok &= overlap_of(f, most, no_stream()) == (on ? 2 : 0);
      ok &= overlap_of(f, most, CU_STREAM_LEGACY) == (on ? 2 : 0);
      ok &= overlap_of(f, most, CU_STREAM_PER_THREAD) == (on ? 2 : 0);
      // Where the kernel triggers: after its step, but at its start while the stream is being
      // captured (runtime/collectives.cpp, next_trigger).
      using tmashmem::CollTrigger;
      const CollTrigger enqueued = on ? CollTrigger::AfterStep : CollTrigger::None;
      ok &= overlap_of(f, most, s) == (on ? 3 : 0) && g_trigger == enqueued;
      ok &= overlap_of(f, most, no_stream()) == (on ? 2 : 0) && g_trigger == enqueued;
      tmashmem::emu::set_capturing(s, true);
      ok &= overlap_of(f, most, s) == (on ? 3 : 0) &&
            g_trigger == (on ? CollTrigger::AtStart : CollTrigger::None);
      ok &= overlap_of(f, most + 1, s) == 0 && g_trigger == CollTrigger::None;
      tmashmem::emu::set_capturing(s, false);
      ok &= overlap_of(f, most, s) == (on ? 3 : 0) && g_trigger == enqueued;
    }
    tmashmem::emu::destroy_stream(s);
    if (on) {  // a destroyed stream: the capture query's error names the call and the fix
      StandInTables tables({recording_launch});
      ok &= FAILS(tmashmem_allgather_on_stream(f.b, f.a, 64, most, s), TMASHMEM_ERROR_CUDA,
                  "tmashmem_allgather_on_stream: cuStreamIsCapturing", "CUDA_ERROR_INVALID_HANDLE",
                  "pass a live stream");
    }
    if (!ok)
      std::printf("[PE %d] TMASHMEM_COLL_PDL=%s: a launch's overlap differs\n", mpi_rank(),
                  setting);
    CHECK(all_ranks(ok));
  }
}

TEST_CASE("collectives: the overlap rule counts the most PEs that share one GPU") {
  // Two GPUs of 32 SMs; PE r uses GPU r % 2 (local rank modulo devices). With at most k PEs on
  // one GPU, every PE takes calls of up to 32 / (2 k) CTAs overlapped: 16 at 1 and 2 PEs, 8 at
  // 3 (2 on GPU 0, 1 on GPU 1) and 4 (2 on each).
  tmashmem::emu::Options o;
  o.sm_count = 32;
  o.device_count = 2;
  EnvGuard pdl("TMASHMEM_COLL_PDL", "on");
  TwoBuffers f(o);
  REQUIRE(all_ranks(f.ready()));
  const int sharing = pes_on_busier_of_two();
  const int most = 32 / (2 * sharing);
  const tmashmem_stream_t s = tmashmem::emu::create_stream(tmashmem_device());
  bool ok = true;
  {
    StandInTables tables({recording_launch});
    ok &= overlap_of(f, most, s) == 3;
    ok &= overlap_of(f, most + 1, s) == 0;
  }
  tmashmem::emu::destroy_stream(s);
  if (!ok)
    std::printf("[PE %d] at most %d PEs on one GPU: the overlap of %d or %d CTAs differs\n",
                mpi_rank(), sharing, most, most + 1);
  CHECK(all_ranks(ok));
}

TEST_CASE("collectives: the default CTA count is the same on PEs whose GPUs differ in SMs") {
  // PE r's GPU has 32 SMs if r is even, 48 if odd (GPU r % 2 of two). An all-gather of 256 KiB
  // per PE (direct form: the low-latency and staged forms off) would take 32 / 2 = 16 CTAs on
  // the one and 24 on the other; every PE takes 16 (the fewest SMs, halved), and the symmetry
  // check finds no difference. At most 2 PEs share a GPU at np 3 and 4: 8 CTAs.
  tmashmem::emu::Options o;
  o.device_count = 2;
  o.sm_count = mpi_rank() % 2 == 0 ? 32 : 48;
  EnvGuard ll("TMASHMEM_COLL_LL_BYTES", "0");
  EnvGuard staged("TMASHMEM_COLL_STAGED", "off");
  EmulatedRuntime rt(o);
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int n = tmashmem_n_pes();
  const size_t per_pe = size_t(256) << 10;
  char* src = static_cast<char*>(tmashmem_malloc(per_pe));
  char* dest = static_cast<char*>(tmashmem_malloc(per_pe * size_t(n)));
  REQUIRE(all_ranks(src != nullptr && dest != nullptr));
  const int expected = 32 / (2 * pes_on_busier_of_two());
  bool ok = true;
  {
    StandInTables tables({recording_launch});
    g_ctas = 0;
    const tmashmem_status_t st = tmashmem_allgather_on_stream(dest, src, per_pe, 0, no_stream());
    if (st != TMASHMEM_SUCCESS || g_ctas != expected) {
      std::printf(
          "[PE %d] allgather of %zu bytes per PE, default CTAs: %s, %d CTAs (expected %d)\n",
          mpi_rank(), per_pe, st == TMASHMEM_SUCCESS ? "ok" : tmashmem_last_error(), g_ctas,
          expected);
      ok = false;
    }
  }
  tmashmem_barrier_all();
  tmashmem_free(dest);
  tmashmem_free(src);
  CHECK(all_ranks(ok));
}
