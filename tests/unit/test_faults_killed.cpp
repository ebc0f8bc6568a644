// Fault matrix (docs/reliability.md), killed-PE rows: the last PE dies by SIGKILL at one
// point of the job; every survivor must get TMASHMEM_ERROR_TIMEOUT naming the dead PE within
// the bound (TMASHMEM_BOOTSTRAP_TIMEOUT_MS plus slack), keep its own data intact, and, after
// tmashmem_finalize (TMASHMEM_ERROR_BOOTSTRAP, "restart the job"), hold no emulated device
// memory, mapping, file descriptor or thread that init made.
//
// Own main, not tmashmem_test_main: that harness combines results with MPI collectives,
// which a job with a dead rank cannot make. One row per run (argv[1]); each survivor prints
// "row <name>: PE <r> passed" or "... FAILED: <why>", and tests/unit/run_killed_pe.sh
// counts the survivors' lines. mpiexec must let the survivors run on after the death:
// Open MPI needs `--mca orte_abort_on_non_zero_status 0` (the script passes it), else it
// kills the job about as soon as the rank dies, before any timeout can speak.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "common/leak_counts.h"
#include "emu/emulated_driver.h"
#include "tmashmem/tmashmem.h"

namespace emu = tmashmem::emu;

namespace {

constexpr int kTimeoutMs = 1500;
// The bound a survivor must meet: one bootstrap timeout (the first blocking step that
// misses the dead PE fails the call) plus slack for a loaded 2-core CI machine.
constexpr double kBoundS = kTimeoutMs / 1000.0 + 3.0;

int g_rank = 0, g_size = 1;
std::string g_failures;

void expect(bool ok, const std::string& what) {
  if (!ok) g_failures += (g_failures.empty() ? "" : "; ") + what;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

tmashmem_init_attr_t attr() {
  tmashmem_init_attr_t a;
  tmashmem_init_attr_set_defaults(&a);
  a.heap_max = size_t(64) << 20;
  a.chunk_size = size_t(2) << 20;
  a.bootstrap_timeout_ms = kTimeoutMs;
  return a;
}

// The allocation calls return NULL, not a status: their timeout is NULL with a message
// saying "timed out" (what tmashmem.h promises for pointer-returning calls).
tmashmem_status_t null_is_timeout(void* p) {
  if (p) return TMASHMEM_SUCCESS;
  return contains(tmashmem_last_error(), "timed out") ? TMASHMEM_ERROR_TIMEOUT
                                                      : TMASHMEM_ERROR_INTERNAL;
}

bool victim() { return g_rank == g_size - 1; }

// A survivor's call that must time out naming the dead PE, within the bound.
void expect_timeout_naming_victim(const char* what, const std::function<tmashmem_status_t()>& call,
                                  tmashmem_status_t want = TMASHMEM_ERROR_TIMEOUT) {
  const auto start = std::chrono::steady_clock::now();
  const tmashmem_status_t st = call();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string m = tmashmem_last_error();
  std::printf("[PE %d] %s: %s after %.2f s: %s\n", g_rank, what, tmashmem_error_string(st), took,
              m.c_str());
  expect(st == want, std::string(what) + " returned " + tmashmem_error_string(st));
  if (want == TMASHMEM_ERROR_TIMEOUT) {
    // Exactly the dead PE: "PE(s) 3;" or "PE(s) 3 did ...", never a list with live PEs in it.
    const std::string dead = "PE(s) " + std::to_string(g_size - 1);
    expect(contains(m, dead + ";") || contains(m, dead + " "),
           std::string(what) + "'s message does not name exactly PE " + std::to_string(g_size - 1));
  }
  expect(took <= kBoundS, std::string(what) + " took " + std::to_string(took) + " s");
}

// After the failure: finalize says the job must restart, and nothing init made is left.
void expect_clean_finalize(int fds_before, int threads_before) {
  if (tmashmem_initialized()) {
    const tmashmem_status_t st = tmashmem_finalize();
    const std::string m = tmashmem_last_error();
    expect(st == TMASHMEM_ERROR_BOOTSTRAP,
           std::string("finalize returned ") + tmashmem_error_string(st) + ": " + m);
    expect(contains(m, "restart the job"), "finalize's message does not say to restart: " + m);
  }
  expect(!tmashmem_initialized(), "still initialised after finalize");
  const emu::Counts c = emu::counts();
  expect(c.allocations == 0 && c.mappings == 0 && c.reservations == 0 && c.device_buffers == 0 &&
             c.open_memfds == 0,
         "emulated driver objects left: " + std::to_string(c.allocations) + " handles, " +
             std::to_string(c.mappings) + " mappings, " + std::to_string(c.reservations) +
             " reservations, " + std::to_string(c.open_memfds) + " memfds");
  expect(tmashmem_test::count_fds() == fds_before,
         "fds: " + std::to_string(fds_before) + " before, " +
             std::to_string(tmashmem_test::count_fds()) + " after");
  expect(tmashmem_test::count_threads() == threads_before,
         "threads: " + std::to_string(threads_before) + " before, " +
             std::to_string(tmashmem_test::count_threads()) + " after");
}

// Starts the runtime on every PE (the victim with `victim_options`); false on failure.
bool start(const emu::Options& victim_options = emu::Options()) {
  emu::install(victim() ? victim_options : emu::Options());
  tmashmem_init_attr_t a = attr();
  const tmashmem_status_t st = tmashmem_init_attr(&a);
  expect(st == TMASHMEM_SUCCESS, std::string("init: ") + tmashmem_last_error());
  return st == TMASHMEM_SUCCESS;
}

void die() {
  std::fflush(stdout);
  ::raise(SIGKILL);
}

// ---- the rows ----

// Dies inside tmashmem_init, in the device memory of the heap's first chunk (the signal pad).
void row_init(int fds, int threads) {
  emu::Options o;
  o.kill_at_mem_create = 1;
  emu::install(victim() ? o : emu::Options());
  tmashmem_init_attr_t a = attr();
  expect_timeout_naming_victim("tmashmem_init", [&] { return tmashmem_init_attr(&a); });
  expect_clean_finalize(fds, threads);
}

// Dies before a collective tmashmem_malloc the others make.
void row_malloc(int fds, int threads) {
  if (!start()) return;
  if (victim()) die();
  expect_timeout_naming_victim("tmashmem_malloc",
                               [] { return null_is_timeout(tmashmem_malloc(4096)); });
  expect_clean_finalize(fds, threads);
}

// Dies inside the heap growth of a collective malloc (cuMemCreate of the new chunk), after
// every PE wrote a block the growth must leave intact.
void row_growth(int fds, int threads) {
  emu::Options o;
  o.kill_at_mem_create = 2;  // the first is init's chunk
  if (!start(o)) return;
  auto* block = static_cast<uint8_t*>(tmashmem_malloc(size_t(1) << 20));
  expect(block != nullptr, "the first malloc failed");
  if (!block) return;
  for (size_t i = 0; i < (size_t(1) << 20); ++i) block[i] = static_cast<uint8_t>(i * 7 + g_rank);
  if (tmashmem_barrier_all() != TMASHMEM_SUCCESS) expect(false, "barrier before the growth");
  expect_timeout_naming_victim("tmashmem_malloc (growing the heap)",
                               [] { return null_is_timeout(tmashmem_malloc(size_t(3) << 20)); });
  size_t bad = 0;
  for (size_t i = 0; i < (size_t(1) << 20); ++i)
    bad += block[i] != static_cast<uint8_t>(i * 7 + g_rank);
  expect(bad == 0, std::to_string(bad) + " bytes of the earlier block changed");
  expect_clean_finalize(fds, threads);
}

// Dies before the host barrier the others wait in.
void row_barrier(int fds, int threads) {
  if (!start()) return;
  if (victim()) die();
  expect_timeout_naming_victim("tmashmem_barrier_all", [] { return tmashmem_barrier_all(); });
  expect_clean_finalize(fds, threads);
}

// Dies instead of signalling the others, who wait for its signal on their streams. The
// emulated stream wait blocks the host thread and gives up at its own bound (a GPU's
// cuStreamWaitValue64 would not: tmashmem_signal_wait_until_on_stream_timeout is the
// bounded form there); the next collective then names the dead PE.
void row_signal_wait(int fds, int threads) {
  emu::Options o;
  o.stream_wait_timeout_ms = kTimeoutMs;
  emu::install(o);
  tmashmem_init_attr_t a = attr();
  if (tmashmem_init_attr(&a) != TMASHMEM_SUCCESS) return expect(false, tmashmem_last_error());
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(1, sizeof(uint64_t)));
  expect(sig != nullptr, "calloc of the signal failed");
  if (!sig) return;
  if (victim()) die();
  expect_timeout_naming_victim(
      "tmashmem_signal_wait_until_on_stream",
      [&] { return tmashmem_signal_wait_until_on_stream(sig, TMASHMEM_CMP_EQ, 1, nullptr); },
      TMASHMEM_ERROR_CUDA);
  expect(contains(tmashmem_last_error(), "cuStreamWaitValue64"), "the wait's error names it");
  expect(*sig == 0, "the signal changed");
  expect_timeout_naming_victim("tmashmem_barrier_all (after the wait)",
                               [] { return tmashmem_barrier_all(); });
  expect_clean_finalize(fds, threads);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const std::map<std::string, void (*)(int, int)> rows = {{"init", row_init},
                                                          {"malloc", row_malloc},
                                                          {"growth", row_growth},
                                                          {"barrier", row_barrier},
                                                          {"signal_wait", row_signal_wait}};
  const std::string row = argc > 1 ? argv[1] : "";
  auto it = rows.find(row);
  if (it == rows.end() || g_size < 2) {
    std::printf("usage: mpiexec -np N (N >= 2) %s {init|malloc|growth|barrier|signal_wait}\n",
                argv[0]);
    return 2;
  }
  // Counted before MPI's and the emulator's first use? MPI is up already; the emulator and
  // the runtime are not, so these are what init adds.
  const int fds = tmashmem_test::count_fds(), threads = tmashmem_test::count_threads();
  it->second(fds, threads);
  if (victim()) std::printf("[PE %d] was to die in row %s but did not\n", g_rank, row.c_str());
  std::printf("row %s: PE %d %s%s\n", row.c_str(), g_rank,
              g_failures.empty() && !victim() ? "passed" : "FAILED: ", g_failures.c_str());
  std::fflush(stdout);
  // The verdict is the printed line. Exit 0 without MPI_Finalize (which may wait on the dead
  // rank's requests): with orte_abort_on_non_zero_status 0, Open MPI 4.1's mpiexec never
  // returns once a survivor exits non-zero after another rank was killed. A rank that exits
  // without MPI_Finalize makes mpiexec kill the rest, so each survivor first waits (bounded)
  // until every survivor has written its verdict: a file per survivor in the directory
  // run_killed_pe.sh names.
  if (const char* dir = std::getenv("TMASHMEM_TEST_DONE_DIR")) {
    const std::string mine = std::string(dir) + "/done." + std::to_string(g_rank);
    if (FILE* f = std::fopen(mine.c_str(), "w")) std::fclose(f);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (tmashmem_test::count_dir_entries(dir) < g_size - 1 && std::chrono::steady_clock::now() < give_up)
      usleep(20000);
  }
  _exit(0);
}
