// CUDA pieces shared by tmashmem-perf and the NVSHMEM baseline: checked calls, a
// host watchdog on every wait, data patterns and their on-device checks, the CTA
// partition every bandwidth kernel uses, the plain SM copy kernel, in-kernel
// timestamps, and the copy-engine ceilings.
//
// Everything here is runtime-neutral (no tmashmem or NVSHMEM calls), so both
// programs move, time and check data the same way.
#pragma once

#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "tools/perf/perf_common.h"

#define PERF_CUDA(call) ::perf::cuda_check((call), #call, __FILE__, __LINE__)
#define PERF_LAUNCHED(what) ::perf::cuda_check(cudaGetLastError(), what, __FILE__, __LINE__)

namespace perf {

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    die(std::string(file) + ":" + std::to_string(line) + ": " + what +
        " failed: " + cudaGetErrorString(e));
}

// Waits for `event` by polling, so that a kernel waiting for a peer that never
// comes ends the job with a message instead of hanging it.
inline void wait_event(cudaEvent_t event, double timeout_s, const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) die(what + ": " + cudaGetErrorString(e));
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (waited > timeout_s)
      die(what + " did not finish within " + std::to_string(timeout_s) +
          " s (a peer that never answered? is MPS running?)");
    usleep(20);
  }
}

inline void sync_stream(cudaStream_t stream, double timeout_s, const std::string& what) {
  cudaEvent_t done;
  PERF_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  PERF_CUDA(cudaEventRecord(done, stream));
  wait_event(done, timeout_s, what);
  PERF_CUDA(cudaEventDestroy(done));
}

// ---- data -----------------------------------------------------------------------

constexpr unsigned char kPoison = 0xA5;

// Word i of the pattern for `seed`: fresh per run and per size, never all zeros.
__host__ __device__ inline uint32_t pattern_word(uint64_t seed, uint64_t i) {
  uint64_t x = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>(x ^ (x >> 31));
}

static __global__ void fill_pattern_kernel(uint32_t* p, size_t words, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = pattern_word(seed, i);
}

static __global__ void count_pattern_kernel(const uint32_t* p, size_t words, uint64_t seed,
                                            uint64_t first_word, unsigned long long* bad) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words;
       i += size_t(gridDim.x) * blockDim.x)
    mine += p[i] != pattern_word(seed, first_word + i);
  if (mine) atomicAdd(bad, mine);
}

static __global__ void count_byte_kernel(const unsigned char* p, size_t n, unsigned char value,
                                         unsigned long long* bad) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    mine += p[i] != value;
  if (mine) atomicAdd(bad, mine);
}

static __global__ void count_u64_kernel(const uint64_t* p, size_t n, uint64_t value,
                                        unsigned long long* bad) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    mine += p[i] != value;
  if (mine) atomicAdd(bad, mine);
}

inline unsigned grid_for(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 2048 ? 2048 : blocks));
}

// Fills `bytes` (a multiple of 4) at p with the pattern for `seed`.
inline void fill_pattern(void* p, size_t bytes, uint64_t seed, cudaStream_t stream) {
  if (bytes % 4) die("fill_pattern: size " + std::to_string(bytes) + " is not a multiple of 4");
  fill_pattern_kernel<<<grid_for(bytes / 4), 256, 0, stream>>>(static_cast<uint32_t*>(p), bytes / 4,
                                                               seed);
  PERF_LAUNCHED("fill_pattern_kernel");
}

// Counts wrong destination words on the device; read the total with take().
class Checker {
 public:
  Checker() {
    PERF_CUDA(cudaMalloc(&bad_, sizeof(unsigned long long)));
    PERF_CUDA(cudaMemset(bad_, 0, sizeof(unsigned long long)));
    PERF_CUDA(cudaMallocHost(&host_, sizeof(unsigned long long)));
  }
  ~Checker() {
    cudaFree(bad_);
    cudaFreeHost(host_);
  }
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  // [p, p + bytes) must hold words first_word, first_word + 1, ... of the pattern for
  // `seed` (fill_pattern writes word 0 at its start).
  void pattern(const void* p, size_t bytes, uint64_t seed, cudaStream_t stream,
               uint64_t first_word = 0) {
    if (bytes % 4) die("Checker::pattern: size " + std::to_string(bytes) + " not a multiple of 4");
    count_pattern_kernel<<<grid_for(bytes / 4), 256, 0, stream>>>(
        static_cast<const uint32_t*>(p), bytes / 4, seed, first_word, bad_);
    PERF_LAUNCHED("count_pattern_kernel");
  }
  // Every byte of [p, p + n) must equal `value` (guard bytes keep the poison).
  void bytes_equal(const void* p, size_t n, unsigned char value, cudaStream_t stream) {
    if (n == 0) return;
    count_byte_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<const unsigned char*>(p), n,
                                                       value, bad_);
    PERF_LAUNCHED("count_byte_kernel");
  }
  void u64_equal(const uint64_t* p, size_t n, uint64_t value, cudaStream_t stream) {
    if (n == 0) return;
    count_u64_kernel<<<grid_for(n), 256, 0, stream>>>(p, n, value, bad_);
    PERF_LAUNCHED("count_u64_kernel");
  }
  void add_host(unsigned long long n) { host_extra_ += n; }

  // Waits for the checks enqueued so far; returns how many items were wrong, resets.
  unsigned long long take(cudaStream_t stream, double timeout_s) {
    PERF_CUDA(
        cudaMemcpyAsync(host_, bad_, sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
    PERF_CUDA(cudaMemsetAsync(bad_, 0, sizeof(unsigned long long), stream));
    sync_stream(stream, timeout_s, "destination check");
    const unsigned long long n = *host_ + host_extra_;
    host_extra_ = 0;
    return n;
  }

 private:
  unsigned long long* bad_ = nullptr;
  unsigned long long* host_ = nullptr;
  unsigned long long host_extra_ = 0;
};

// ---- the partition every bandwidth kernel uses ---------------------------------------

// CTA `cta` of `ctas` owns [begin, end) of a `bytes` buffer: equal 16-byte aligned
// shares, the last one shorter (possibly empty). Identical for every runtime.
struct Range {
  size_t begin, end;
};

__host__ __device__ inline Range cta_range(size_t bytes, unsigned cta, unsigned ctas) {
  size_t share = (bytes + ctas - 1) / ctas;
  share = (share + 15) & ~size_t(15);
  size_t begin = size_t(cta) * share;
  if (begin > bytes) begin = bytes;
  size_t end = begin + share;
  if (end > bytes) end = bytes;
  return {begin, end};
}

// The plain SM copy a hand-written kernel gets: each CTA copies its share with
// 16-byte loads and stores, four in flight per thread; `iters` times over.
static __global__ void sm_copy_kernel(char* dst, const char* src, size_t bytes, long iters) {
  const Range r = cta_range(bytes, blockIdx.x, gridDim.x);
  uint4* d = reinterpret_cast<uint4*>(dst + r.begin);
  const uint4* s = reinterpret_cast<const uint4*>(src + r.begin);
  const size_t units = (r.end - r.begin) / 16;
  const size_t stride = blockDim.x;
  for (long it = 0; it < iters; ++it) {
    size_t i = threadIdx.x;
    for (; i + 3 * stride < units; i += 4 * stride) {
      const uint4 a = s[i], b = s[i + stride], c = s[i + 2 * stride], e = s[i + 3 * stride];
      d[i] = a;
      d[i + stride] = b;
      d[i + 2 * stride] = c;
      d[i + 3 * stride] = e;
    }
    for (; i < units; i += stride) d[i] = s[i];
  }
}

// ---- ping-pong ------------------------------------------------------------------

// What one ping-pong round sends (both runtimes' kernels): a bare signal, a relaxed
// signal (tmashmem only; NVSHMEM's signal_op is already relaxed), or a put + signal
// from one thread or from the whole block.
enum class PingOp { Signal, SignalRelaxed, PutSignalThread, PutSignalBlock };

__host__ __device__ constexpr bool ping_carries_data(PingOp op) {
  return op == PingOp::PutSignalThread || op == PingOp::PutSignalBlock;
}

// Ping-pong signal slots: repetition r of a ping-pong waits on slot r % kPingFlagSlots.
// Where a flag lands in the L2, relative to the SMs the two kernels run on, moves a
// one-thread round trip between ~0.60 and ~0.94 us on an H200 (two modes, both runtimes
// alike), and a run that used one address for every repetition reported a spread
// narrower than the difference between two runs; rotating the address puts that
// variation inside the reported spread. Slots are kPingFlagStride bytes apart (not a
// power of two, so they differ in many address bits).
constexpr int kPingFlagSlots = 16;
constexpr size_t kPingFlagStride = 4096 + 256;
constexpr size_t kPingFlagBytes = kPingFlagSlots * kPingFlagStride;
inline uint64_t* ping_flag(uint64_t* flags, int rep) {
  return flags + size_t(rep % kPingFlagSlots) * (kPingFlagStride / sizeof(uint64_t));
}

// ---- in-kernel timestamps --------------------------------------------------------

// Per-iteration times inside one kernel. stamps[0..n] are clock64() readings at the
// iteration boundaries; stamps[n+1] and stamps[n+2] the global timer (ns) read next
// to stamps[0] and stamps[n], which converts cycles to nanoseconds over the whole
// run (the global timer's tick can be coarser than one round trip); stamps[n+3] is
// 1 + the SM the kernel's timing thread ran on (0: not recorded), on every PE.
inline size_t stamp_words(long n) { return size_t(n) + 4; }
__device__ __forceinline__ uint64_t global_timer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void stamp_start(uint64_t* stamps, long n) {
  stamps[n + 1] = global_timer();
  stamps[0] = static_cast<uint64_t>(clock64());
}

__device__ __forceinline__ void stamp_iteration(uint64_t* stamps, long i) {
  stamps[i + 1] = static_cast<uint64_t>(clock64());
}

__device__ __forceinline__ void stamp_end(uint64_t* stamps, long n) {
  stamps[n + 2] = global_timer();
}

// Where this thread runs: a one-thread round trip's time depends on it (perf_driver.cuh).
__device__ __forceinline__ void stamp_sm(uint64_t* stamps, long n) {
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  stamps[n + 3] = uint64_t(sm) + 1;
}

// Median and mean per iteration, in microseconds, from a stamps array of n iterations.
struct IterationTimes {
  double median_us, mean_us;
};

inline IterationTimes iteration_times(const std::vector<uint64_t>& stamps, long n) {
  const double cycles = static_cast<double>(stamps[size_t(n)] - stamps[0]);
  const double ns = static_cast<double>(stamps[size_t(n) + 2] - stamps[size_t(n) + 1]);
  const double ns_per_cycle = cycles > 0 ? ns / cycles : 0;
  std::vector<double> each(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i)
    each[size_t(i)] =
        static_cast<double>(stamps[size_t(i) + 1] - stamps[size_t(i)]) * ns_per_cycle * 1e-3;
  return {spread_of(each).median, n > 0 ? ns * 1e-3 / static_cast<double>(n) : 0};
}

// ---- events -----------------------------------------------------------------------

class EventPair {
 public:
  EventPair() {
    PERF_CUDA(cudaEventCreate(&start_));
    PERF_CUDA(cudaEventCreate(&stop_));
  }
  ~EventPair() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void start(cudaStream_t s) { PERF_CUDA(cudaEventRecord(start_, s)); }
  void stop(cudaStream_t s) { PERF_CUDA(cudaEventRecord(stop_, s)); }
  // Waits (bounded) for the stop event; returns the elapsed milliseconds.
  double elapsed_ms(double timeout_s, const std::string& what) {
    wait_event(stop_, timeout_s, what);
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// ---- holding a stream while work is enqueued --------------------------------------------

// Copy-engine references are many API calls per repetition (cudaMemcpyAsync in a loop).
// Timed as they are enqueued, small copies measure how fast the host enqueues, which
// varies from run to run by tens of percent. StreamHold parks the stream behind a
// one-thread kernel that spins on a host-mapped word; the caller enqueues the timed
// work, then release() lets it all run back to back, so the events time the GPU alone.
// The spin gives up after kHoldTimeoutNs (a host that blocked on a full queue would
// otherwise never release it); held_out() then says the hold did not cover the work.
static __global__ void stream_hold_kernel(const volatile int* go, int* timed_out,
                                          uint64_t timeout_ns) {
  const uint64_t start = global_timer();
  while (*go == 0) {
    if (global_timer() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

class StreamHold {
 public:
  static constexpr uint64_t kHoldTimeoutNs = 2000000000ull;
  StreamHold() {
    PERF_CUDA(
        cudaHostAlloc(reinterpret_cast<void**>(&host_), 2 * sizeof(int), cudaHostAllocMapped));
    host_[0] = host_[1] = 0;
    PERF_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0));
  }
  ~StreamHold() { cudaFreeHost(host_); }
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  // Enqueues the spin; everything enqueued on `s` after it waits for release().
  void hold(cudaStream_t s) {
    reinterpret_cast<volatile int*>(host_)[0] = 0;
    stream_hold_kernel<<<1, 1, 0, s>>>(device_, device_ + 1, kHoldTimeoutNs);
    PERF_CUDA(cudaGetLastError());
  }
  void release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    reinterpret_cast<volatile int*>(host_)[0] = 1;
  }
  // After the held work completed: whether the spin gave up before release().
  bool held_out() const { return reinterpret_cast<volatile int*>(host_)[1] != 0; }

 private:
  int* host_ = nullptr;
  int* device_ = nullptr;
};

// ---- ceilings -------------------------------------------------------------------------

struct Ceilings {
  double d2d_gbps = 0;   // cudaMemcpy device-to-device on this GPU, payload GB/s
  double peer_gbps = 0;  // cudaMemcpyPeer to the next GPU (0: one GPU visible)
};

inline double copy_rate(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes,
                        int reps, cudaStream_t stream, double timeout_s) {
  const bool peer = dst_dev != src_dev;
  auto copy = [&] {
    if (peer)
      PERF_CUDA(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, stream));
    else
      PERF_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  };
  copy();
  EventPair ev;
  std::vector<double> gbps;
  const int per_rep = 4;
  for (int r = 0; r < reps; ++r) {
    ev.start(stream);
    for (int i = 0; i < per_rep; ++i) copy();
    ev.stop(stream);
    const double ms = ev.elapsed_ms(timeout_s, "ceiling copy");
    gbps.push_back(static_cast<double>(bytes) * per_rep / (ms * 1e6));
  }
  return spread_of(gbps).median;
}

// Rank 0 measures; every rank gets the figures. The copies are checked.
inline Ceilings measure_ceilings(size_t bytes, int reps, double timeout_s) {
  Ceilings c;
  if (mpi_rank() == 0) {
    int dev = 0, count = 0;
    PERF_CUDA(cudaGetDevice(&dev));
    PERF_CUDA(cudaGetDeviceCount(&count));
    cudaStream_t stream;
    PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *src = nullptr, *dst = nullptr;
    PERF_CUDA(cudaMalloc(&src, bytes));
    PERF_CUDA(cudaMalloc(&dst, bytes));
    const uint64_t seed = 0xC0FFEEull ^ static_cast<uint64_t>(time(nullptr));
    fill_pattern(src, bytes, seed, stream);
    PERF_CUDA(cudaMemsetAsync(dst, kPoison, bytes, stream));
    c.d2d_gbps = copy_rate(dst, dev, src, dev, bytes, reps, stream, timeout_s);
    Checker check;
    check.pattern(dst, bytes, seed, stream);
    unsigned long long bad = check.take(stream, timeout_s);
    if (count > 1) {
      const int other = (dev + 1) % count;
      int can = 0;
      PERF_CUDA(cudaDeviceCanAccessPeer(&can, dev, other));
      void* far = nullptr;
      PERF_CUDA(cudaSetDevice(other));
      PERF_CUDA(cudaMalloc(&far, bytes));
      PERF_CUDA(cudaSetDevice(dev));
      if (can) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(other, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) PERF_CUDA(e);
        (void)cudaGetLastError();
      }
      c.peer_gbps = copy_rate(far, other, src, dev, bytes, reps, stream, timeout_s);
      PERF_CUDA(cudaMemsetAsync(dst, kPoison, bytes, stream));
      PERF_CUDA(cudaMemcpyPeerAsync(dst, dev, far, other, bytes, stream));
      check.pattern(dst, bytes, seed, stream);
      bad += check.take(stream, timeout_s);
      PERF_CUDA(cudaFree(far));
    }
    if (bad) die("ceiling copies delivered " + std::to_string(bad) + " wrong words");
    PERF_CUDA(cudaFree(src));
    PERF_CUDA(cudaFree(dst));
    PERF_CUDA(cudaStreamDestroy(stream));
  }
  double v[2] = {c.d2d_gbps, c.peer_gbps};
  MPI_Bcast(v, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  c.d2d_gbps = v[0];
  c.peer_gbps = v[1];
  return c;
}

// Device memory this process holds from before the runtime creates its heap until it
// exits: a random 0..31 pages of 2 MiB, so that each launch's heap lands on other
// physical pages. Without it, launches of one test in a row got the same pages (per-slot
// times equal to 0.01 us from launch to launch) and their pooled spread missed what
// differed between two runs. PERF_PLACEMENT_SHIFT=0 turns it off. Construct after
// selecting the device, before the runtime's init.
class PlacementShift {
 public:
  PlacementShift() {
    const char* env = std::getenv("PERF_PLACEMENT_SHIFT");
    if (env && std::string(env) == "0") return;
    pages_ = std::random_device{}() % 32;
    if (pages_) PERF_CUDA(cudaMalloc(&held_, pages_ << 21));
  }
  ~PlacementShift() {
    if (held_) cudaFree(held_);
  }
  PlacementShift(const PlacementShift&) = delete;
  PlacementShift& operator=(const PlacementShift&) = delete;
  // Rank 0 prints every PE's page count. COLLECTIVE.
  void print() const {
    const std::vector<unsigned long long> all = gather_to_root(pages_);
    if (mpi_rank() != 0) return;
    std::printf("# placement shift: 2 MiB pages held before init, per PE:");
    for (unsigned long long n : all) std::printf(" %llu", n);
    std::printf("\n");
  }

 private:
  size_t pages_ = 0;
  void* held_ = nullptr;
};

// A seed every rank agrees on, different in every run.
inline uint64_t run_seed() {
  uint64_t seed = 0;
  if (mpi_rank() == 0)
    seed = static_cast<uint64_t>(
               std::chrono::high_resolution_clock::now().time_since_epoch().count()) *
           0x2545F4914F6CDD1Dull;
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

inline int device_sm_count() {
  int dev = 0, sms = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// Picks the GPU for this rank (node-local rank modulo the device count) and creates
// the context before anything is timed. Prints the device once.
inline void select_device(const char* runtime) {
  int count = 0;
  PERF_CUDA(cudaGetDeviceCount(&count));
  if (count == 0) die("no CUDA device");
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  PERF_CUDA(cudaSetDevice(local_rank % count));
  PERF_CUDA(cudaFree(nullptr));
  if (mpi_rank() == 0) {
    cudaDeviceProp prop;
    PERF_CUDA(cudaGetDeviceProperties(&prop, local_rank % count));
    int driver = 0;
    PERF_CUDA(cudaDriverGetVersion(&driver));
    std::printf("# %s on %s (%d SMs), %d GPU(s) visible, driver API %d, %d PE(s), %d per GPU\n",
                runtime, prop.name, prop.multiProcessorCount, count, driver, mpi_size(),
                (mpi_size() + count - 1) / count);
  }
}

}  // namespace perf
