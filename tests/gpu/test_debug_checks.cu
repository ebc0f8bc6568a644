// The device API's debug checks (TMASHMEM_DEVICE_DEBUG, defined for this program by
// tests/gpu/CMakeLists.txt): a peer out of range, an address range outside the heap (a
// stale ctx), tile coordinates outside the rules and a bulk size that is not a multiple
// of 16 are each caught with a diagnostic line before the hardware is asked to do them.
//
// A trap kills the CUDA context, so every case runs as a unique-id job of child processes
// (fork + exec of this program, tests/unit/uid_launch.h); this launcher never touches CUDA.
// PE 0 is the victim: it makes the bad call. PE n-1 (n >= 2) owns the memory the bad call
// would write; after the victim died it checks every byte of it. The launcher asserts: the
// victim failed, its output holds the diagnostic naming the check and the value, the
// victim's kernel reached the call and did not get past it (a marker page in host memory
// that outlives the child), and the owner found its memory intact.
//
// The children run without MPS (an empty CUDA_MPS_PIPE_DIRECTORY): under MPS a fatal
// fault in one client ends every client of the GPU, the owner included.
//
//   test_debug_checks --np N [--case NAME] [--mps]   prints each verdict, "N passed, N failed"
// Built a second time without the checks (test_debug_checks_unchecked, not a ctest), the
// same launcher shows what the checks prevent: there the cases fail.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tmashmem/device.cuh"
#include "tmashmem/tmashmem.h"
#include "uid_launch.h"

namespace {

constexpr size_t kChunk = size_t(2) << 20;
constexpr int kThreads = 32;

// ---- the bad calls (device) --------------------------------------------------------

enum Case : int {
  kPeerOutOfRange,
  kStaleHeapRange,
  kTileInnerCoordinate,
  kTileNegativeCoordinate,
  kTilePeerOutOfRange,
  kBulkSize,
  kCaseCount
};

struct CaseInfo {
  const char* name;
  const char* what;
  bool owner_checks;  // the owner PE checks the memory the call would have written
};

const CaseInfo kCases[kCaseCount] = {
    {"peer_out_of_range", "put to PE n_pes", false},
    {"stale_heap_range", "put through a ctx taken before the heap grew, into the new chunk", true},
    {"tile_inner_coordinate", "tma_put_tile at c[0] * elem_bytes not a multiple of 16", true},
    {"tile_negative_coordinate", "tma_put_tile at a negative coordinate", true},
    {"tile_peer_out_of_range", "tma_put_tile to PE n_pes", true},
    {"bulk_size", "dsmem_copy_to_cta of 24 bytes", false},
};

// marker[0] = 1 before the bad call, marker[1] = 1 after it returned.
__device__ void mark(volatile int* marker, int at) {
  marker[at] = 1;
  __threadfence_system();
}

struct PutArgs {
  char* dest;  // symmetric
  const char* src;
  size_t bytes;
  int pe;
  int coord[2];
};

__global__ void bad_call_kernel(int which, const __grid_constant__ tmashmem_ctx_t ctx,
                                const __grid_constant__ tmashmem_tensor_handle_t tensor, PutArgs a,
                                volatile int* marker) {
  __shared__ __align__(128) uint8_t tile[4096];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) tile[i] = static_cast<uint8_t>(0xA5 ^ i);
  __syncthreads();
  if (threadIdx.x != 0) return;
  mark(marker, 0);
  if (which == kPeerOutOfRange || which == kStaleHeapRange) {
    tmashmem::putmem(ctx, a.dest, a.src, a.bytes, a.pe);
    tmashmem::quiet();
  } else {
    tmashmem::tma_acquire_tensor_maps(tensor);
    tmashmem::tma_put_tile(tensor, a.pe, tmashmem::TileCoord(a.coord[0], a.coord[1]), tile);
    tmashmem::bulk_wait_group<0>();
  }
  mark(marker, 1);
}

// A cluster of two CTAs: CTA 0 copies `bytes` of shared memory into CTA 1.
__global__ void __cluster_dims__(2, 1, 1) bulk_size_kernel(uint32_t bytes, volatile int* marker) {
  __shared__ __align__(128) uint8_t buf[256];
  __shared__ tmashmem::Mbarrier bar;
  const uint32_t rank = tmashmem::cluster_cta_rank();
  if (threadIdx.x == 0) bar.init(1);
  tmashmem::cluster_sync();
  if (rank == 0 && threadIdx.x == 0) {
    mark(marker, 0);
    tmashmem::dsmem_copy_to_cta(buf + 128, buf, bytes, 1, bar);
    mark(marker, 1);
  }
  tmashmem::cluster_sync();
}

// ---- each PE of a case (child process) --------------------------------------------

uint8_t pattern(uint64_t seed, size_t i) {
  uint64_t x = seed ^ (i * 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull;
  return static_cast<uint8_t>(x ^ (x >> 29));
}

bool fill(void* dev, size_t bytes, uint64_t seed) {
  std::vector<uint8_t> host(bytes);
  for (size_t i = 0; i < bytes; ++i) host[i] = pattern(seed, i);
  return cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess;
}

size_t count_changed(const void* dev, size_t bytes, uint64_t seed) {
  std::vector<uint8_t> host(bytes);
  if (cudaMemcpy(host.data(), dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return bytes;
  size_t bad = 0;
  for (size_t i = 0; i < bytes; ++i) bad += host[i] != pattern(seed, i);
  return bad;
}

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int fail(const char* what) {
  std::printf("SETUP FAILED: %s (%s; CUDA: %s)\n", what, tmashmem_last_error(),
              cudaGetErrorString(cudaGetLastError()));
  std::fflush(stdout);
  _exit(3);
}

// The victim's marker page: a file in the case's directory, shared with the launcher.
volatile int* map_marker(const std::string& dir) {
  const std::string path = dir + "/marker";
  int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, 4096) != 0) return nullptr;
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  if (cudaHostRegister(p, 4096, cudaHostRegisterMapped) != cudaSuccess) return nullptr;
  void* dev = nullptr;
  if (cudaHostGetDevicePointer(&dev, p, 0) != cudaSuccess) return nullptr;
  return static_cast<volatile int*>(dev);
}

// Waits until the launcher says the victim has exited (the file "victim-done").
bool wait_for_victim(const std::string& dir) {
  const std::string path = dir + "/victim-done";
  for (int i = 0; i < 60000 / 20; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    usleep(20000);
  }
  return false;
}

int run_rank(const std::string& name) {
  alarm(120);  // a child never outlives its case
  int which = -1;
  for (int c = 0; c < kCaseCount; ++c)
    if (name == kCases[c].name) which = c;
  const std::string dir = env_text("TMASHMEM_DEBUG_TEST_DIR");
  const uint64_t seed = std::strtoull(env_text("TMASHMEM_DEBUG_TEST_SEED").c_str(), nullptr, 10);
  if (which < 0 || dir.empty()) fail("unknown case or no TMASHMEM_DEBUG_TEST_DIR");

  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.heap_max = size_t(64) << 20;
  attr.chunk_size = kChunk;
  if (tmashmem_init_attr(&attr) != TMASHMEM_SUCCESS) fail("tmashmem_init_attr");
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  const int victim = 0, owner = n - 1;
  if (cudaSetDevice(tmashmem_device()) != cudaSuccess) fail("cudaSetDevice");

  // Collective set-up, the same on every PE. `watched` is what the owner checks.
  tmashmem_ctx_t ctx{};
  tmashmem_tensor_handle_t tensor{};
  PutArgs args{};
  void* watched = nullptr;
  size_t watched_bytes = 0;
  char* src = nullptr;
  if (cudaMalloc(&src, 4096) != cudaSuccess || !fill(src, 4096, seed + 7)) fail("source buffer");
  if (which == kPeerOutOfRange) {
    args.dest = static_cast<char*>(tmashmem_malloc(4096));
    if (!args.dest) fail("tmashmem_malloc");
    args = PutArgs{args.dest, src, 64, n, {0, 0}};
    watched = args.dest, watched_bytes = 4096;
    if (tmashmem_device_ctx(&ctx) != TMASHMEM_SUCCESS) fail("tmashmem_device_ctx");
  } else if (which == kStaleHeapRange) {
    // The ctx is taken before a malloc that grows the heap; its heap_size ends inside the
    // new block, so a put across that end would land in the block on the owner.
    if (!tmashmem_malloc(4096)) fail("tmashmem_malloc");
    if (tmashmem_device_ctx(&ctx) != TMASHMEM_SUCCESS) fail("tmashmem_device_ctx");
    char* grown = static_cast<char*>(tmashmem_malloc(2 * kChunk));
    if (!grown) fail("tmashmem_malloc (growth)");
    char* end = reinterpret_cast<char*>(ctx.heap_base + ctx.heap_size);
    if (grown > end - 64 || grown + 2 * kChunk < end + 64)
      fail("the new block does not span the old end");
    args = PutArgs{end - 64, src, 128, owner, {0, 0}};
    watched = grown, watched_bytes = 2 * kChunk;
  } else if (which != kBulkSize) {
    uint64_t dims[2] = {64, 32};
    uint32_t box[2] = {32, 8};
    tmashmem_tensor_desc_t d;
    tmashmem_tensor_t t = nullptr;
    if (tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_BF16, 2, dims, box) != TMASHMEM_SUCCESS ||
        tmashmem_tensor_create(&d, &t) != TMASHMEM_SUCCESS ||
        tmashmem_tensor_handle(t, &tensor) != TMASHMEM_SUCCESS)
      fail("tensor");
    watched = tmashmem_tensor_data(t), watched_bytes = 64 * 32 * 2;
    args.pe = which == kTilePeerOutOfRange ? n : owner;
    args.coord[0] = which == kTileInnerCoordinate ? 3 : 0;  // 3 bf16 = 6 bytes
    args.coord[1] = which == kTileNegativeCoordinate ? -4 : 0;
    if (tmashmem_device_ctx(&ctx) != TMASHMEM_SUCCESS) fail("tmashmem_device_ctx");
  }
  if (watched && !fill(watched, watched_bytes, seed + static_cast<uint64_t>(me)))
    fail("filling the watched memory");
  if (cudaDeviceSynchronize() != cudaSuccess || tmashmem_barrier_all() != TMASHMEM_SUCCESS)
    fail("set-up barrier");

  if (me == victim) {
    volatile int* marker = map_marker(dir);
    if (!marker) fail("the marker page (mmap + cudaHostRegister)");
    if (which == kBulkSize)
      bulk_size_kernel<<<2, kThreads>>>(24, marker);
    else
      bad_call_kernel<<<1, kThreads>>>(which, ctx, tensor, args, marker);
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("victim: cudaDeviceSynchronize: %s\n", cudaGetErrorName(e));
    std::fflush(stdout);
    _exit(e == cudaSuccess ? 0 : 1);
  }
  // Everyone else stays alive (its memory mapped) until the victim is gone.
  if (!wait_for_victim(dir)) fail("the launcher never said the victim exited");
  if (me == owner && kCases[which].owner_checks) {
    const size_t changed = count_changed(watched, watched_bytes, seed + static_cast<uint64_t>(me));
    std::printf("owner: %zu of %zu watched bytes changed: %s\n", changed, watched_bytes,
                changed == 0 ? "intact" : "CORRUPTED");
    std::fflush(stdout);
    _exit(changed == 0 ? 0 : 2);
  }
  std::fflush(stdout);
  _exit(0);
}

// ---- the launcher (no CUDA) --------------------------------------------------------

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The diagnostic the victim must print: the check's words and the value.
std::vector<std::string> expected_diagnostic(int which, int np) {
  const std::string n = std::to_string(np);
  switch (which) {
    case kPeerOutOfRange:
      return {"put: PE " + n + " is not load/store reachable from this PE (n_pes " + n + ")"};
    case kStaleHeapRange:
      return {"] put: [", ", +128 bytes) is not in the symmetric heap"};
    case kTileInnerCoordinate:
      return {"tma_put_tile (pe " + std::to_string(np - 1) +
              "): innermost coordinate is not at a 16-byte offset (c[0] * elem_bytes) (value 3)"};
    case kTileNegativeCoordinate:
      return {"tma_put_tile (pe " + std::to_string(np - 1) +
              "): puts and reduces take no negative coordinate (this one is c[i]) (value -4)"};
    case kTilePeerOutOfRange:
      return {"tma_put_tile (pe " + n + "): pe is not a load/store reachable PE of this node: it " +
              "has no tensor map (value " + n + ")"};
    default:
      return {"dsmem_copy_to_cta: dst ", " and bytes 24 must be multiples of 16"};
  }
}

// Waits for rank 0's process to exit without reaping it (finish() reaps every rank).
bool wait_exited(int pid, int limit_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid)
      return true;
    usleep(5000);
  }
  return false;
}

bool run_case(int which, int np, uint64_t seed, bool mps) {
  const CaseInfo& c = kCases[which];
  std::printf("-- %s (np %d): %s\n", c.name, np, c.what);
  // tmpfs where there is one: the marker page is pinned with cudaHostRegister.
  char shm_dir[] = "/dev/shm/tmashmem-debug-test.XXXXXX";
  char tmp_dir[] = "/tmp/tmashmem-debug-test.XXXXXX";
  const char* made = mkdtemp(shm_dir);
  if (!made) made = mkdtemp(tmp_dir);
  if (!made) return false;
  const std::string dir = made;
  uid_test::Job job;
  std::string why;
  std::vector<std::string> env = {"TMASHMEM_DEBUG_TEST_DIR=" + dir,
                                  "TMASHMEM_DEBUG_TEST_SEED=" + std::to_string(seed),
                                  "TMASHMEM_BOOTSTRAP_TIMEOUT_MS=30000"};
  if (!mps) env.push_back("CUDA_MPS_PIPE_DIRECTORY=" + dir + "/no-mps");
  bool ok = uid_test::make_id("127.0.0.1", &job, &why) &&
            uid_test::start(&job, c.name, np, std::vector<std::vector<std::string>>(np, env), &why);
  if (!ok) {
    std::printf("could not start the job: %s\n", why.c_str());
    return false;
  }
  const bool victim_exited = wait_exited(job.pids[0], 90000);
  int fd = open((dir + "/victim-done").c_str(), O_WRONLY | O_CREAT, 0600);
  if (fd >= 0) close(fd);
  uid_test::finish(&job, 60000);

  int marker[2] = {0, 0};
  fd = open((dir + "/marker").c_str(), O_RDONLY);
  if (fd >= 0) {
    if (read(fd, marker, sizeof marker) != static_cast<ssize_t>(sizeof marker)) marker[0] = -1;
    close(fd);
  }
  unlink((dir + "/marker").c_str());
  unlink((dir + "/victim-done").c_str());
  rmdir(dir.c_str());

  const std::string& log = job.logs[0];
  bool diagnostic = true;
  for (const std::string& part : expected_diagnostic(which, np)) diagnostic &= contains(log, part);
  const bool victim_failed = victim_exited && job.exit_codes[0] != 0 && job.exit_codes[0] != 3;
  const bool stopped_at_call = marker[0] == 1 && marker[1] == 0;
  bool others_ok = true;
  for (int r = 1; r < np; ++r) others_ok &= job.exit_codes[static_cast<size_t>(r)] == 0;
  const bool owner_checked = np < 2 || !c.owner_checks || contains(job.logs.back(), "intact");
  std::printf(
      "victim failed (exit %d): %d; diagnostic: %d; reached the call and stopped there: %d; "
      "other PEs (owner's check) ok: %d\n",
      job.exit_codes[0], victim_failed, diagnostic, stopped_at_call, others_ok && owner_checked);
  ok = victim_failed && diagnostic && stopped_at_call && others_ok && owner_checked;
  for (int r = 0; r < np; ++r)
    if (!ok || r == 0)
      std::printf("[rank %d log]\n%s", r, job.logs[static_cast<size_t>(r)].c_str());
  std::printf("%s: %s (np %d)\n", ok ? "PASSED" : "FAILED", c.name, np);
  return ok;
}

int launcher(int argc, char** argv) {
  int np = 1;
  std::string only;
  bool mps = false;  // --mps: keep the children on MPS (the owner then dies with the victim)
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--mps") == 0) mps = true;
    if (i + 1 < argc && std::strcmp(argv[i], "--np") == 0) np = std::atoi(argv[i + 1]);
    if (i + 1 < argc && std::strcmp(argv[i], "--case") == 0) only = argv[i + 1];
  }
  const uint64_t seed = static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count() ^ (uint64_t(getpid()) << 32));
  std::printf("%s --np %d (seed %llu)\n", argv[0], np, static_cast<unsigned long long>(seed));
  int passed = 0, failed = 0;
  for (int c = 0; c < kCaseCount; ++c) {
    if (!only.empty() && only != kCases[c].name) continue;
    if (run_case(c, np, seed + static_cast<uint64_t>(c) * 1000, mps))
      ++passed;
    else
      ++failed;
  }
  std::printf("%s: %d passed, %d failed\n", argv[0], passed, failed);
  return failed || passed == 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = std::getenv("TMASHMEM_UID_TEST_CASE");
  if (name) return run_rank(name);
  return launcher(argc, argv);
}
