// The benchmark programs' CUDA half, layer 2 of 3 (on harness_options.h): error checks and
// watchdog waits, data patterns and their on-device checks, shares of a buffer, the plain
// copy kernel (the bandwidth rows' reference), timing (events with a stream hold, in-kernel
// stamps) and the machine (copy-engine ceilings, PlacementShift, device choice). The why of
// PlacementShift: docs/perf-method.md; of the hold: docs/performance.md, "Copy-engine rows".
#pragma once

#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>

#include "tools/perf/harness_options.h"

#define PERF_CUDA(call) ::perf::cuda_check((call), #call, __FILE__, __LINE__)
#define PERF_LAUNCHED(what) ::perf::cuda_check(cudaGetLastError(), what, __FILE__, __LINE__)

namespace perf {

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    die(std::string(file) + ":" + std::to_string(line) + ": " + what +
        " failed: " + cudaGetErrorString(e));
}

// Waits for `event` by polling, so that a kernel waiting for a peer that never comes ends
// the job with a message instead of hanging it.
inline void wait_event(cudaEvent_t event, double timeout_s, const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  for (cudaError_t e; (e = cudaEventQuery(event)) != cudaSuccess; usleep(20)) {
    if (e != cudaErrorNotReady) die(what + ": " + cudaGetErrorString(e));
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
      die(what + " did not finish within " + std::to_string(timeout_s) +
          " s (a peer that never answered? is MPS running?)");
  }
}

inline void sync_stream(cudaStream_t stream, double timeout_s, const std::string& what) {
  cudaEvent_t done;
  PERF_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  PERF_CUDA(cudaEventRecord(done, stream));
  wait_event(done, timeout_s, what);
  PERF_CUDA(cudaEventDestroy(done));
}

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

// Counts the elements of p[0..n) that differ from words first, first+1, ... of the pattern
// (kPattern) or from `value`.
template <class T, bool kPattern>
__global__ void count_wrong_kernel(const T* p, size_t n, uint64_t seed, uint64_t first, T value,
                                   unsigned long long* bad) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    mine += p[i] != (kPattern ? T(pattern_word(seed, first + i)) : value);
  if (mine) atomicAdd(bad, mine);
}

inline unsigned grid_for(size_t n) {
  return static_cast<unsigned>(std::min<size_t>(2048, std::max<size_t>(1, (n + 255) / 256)));
}

// Fills `bytes` (a multiple of 4) at p with the pattern for `seed`.
inline void fill_pattern(void* p, size_t bytes, uint64_t seed, cudaStream_t stream) {
  if (bytes % 4) die("fill_pattern: size " + std::to_string(bytes) + " is not a multiple of 4");
  fill_pattern_kernel<<<grid_for(bytes / 4), 256, 0, stream>>>(static_cast<uint32_t*>(p), bytes / 4,
                                                               seed);
  PERF_LAUNCHED("fill_pattern_kernel");
}

// Counts wrong destination items on the device; read the total with take().
class Checker {
 public:
  Checker() {
    PERF_CUDA(cudaMalloc(&bad_, sizeof *bad_));
    PERF_CUDA(cudaMemset(bad_, 0, sizeof *bad_));
    PERF_CUDA(cudaMallocHost(&host_, sizeof *host_));
  }
  ~Checker() {
    cudaFree(bad_);
    cudaFreeHost(host_);
  }
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  // [p, p + bytes) must hold words first_word, first_word + 1, ... of the pattern for
  // `seed` (fill_pattern writes word 0 at its start).
  void pattern(const void* p, size_t bytes, uint64_t seed, cudaStream_t s,
               uint64_t first_word = 0) {
    if (bytes % 4) die("Checker::pattern: size " + std::to_string(bytes) + " not a multiple of 4");
    count<uint32_t, true>(static_cast<const uint32_t*>(p), bytes / 4, seed, first_word, 0, s);
  }
  // Every element of p[0..n) must equal `value` (guard bytes keep the poison).
  template <class T>
  void equal(const T* p, size_t n, T value, cudaStream_t s) {
    count<T, false>(p, n, 0, 0, value, s);
  }
  void add_host(unsigned long long n) { host_extra_ += n; }

  // Waits for the checks enqueued so far; returns how many items were wrong, resets.
  unsigned long long take(cudaStream_t stream, double timeout_s) {
    PERF_CUDA(cudaMemcpyAsync(host_, bad_, sizeof *host_, cudaMemcpyDeviceToHost, stream));
    PERF_CUDA(cudaMemsetAsync(bad_, 0, sizeof *bad_, stream));
    sync_stream(stream, timeout_s, "destination check");
    const unsigned long long n = *host_ + host_extra_;
    host_extra_ = 0;
    return n;
  }

 private:
  template <class T, bool kPattern>
  void count(const T* p, size_t n, uint64_t seed, uint64_t first, T value, cudaStream_t s) {
    if (n == 0) return;
    count_wrong_kernel<T, kPattern><<<grid_for(n), 256, 0, s>>>(p, n, seed, first, value, bad_);
    PERF_LAUNCHED("count_wrong_kernel");
  }
  unsigned long long *bad_ = nullptr, *host_ = nullptr, host_extra_ = 0;
};

// Share `i` of `n` of a `bytes` buffer (CTA i's of n, for example): equal shares rounded up
// to `align` bytes, the last one shorter (possibly empty). Identical for every runtime.
struct Range {
  size_t begin, end;
};

__host__ __device__ inline Range share(size_t bytes, unsigned i, unsigned n, size_t align = 16) {
  const size_t each = ((bytes + n - 1) / n + align - 1) / align * align;
  const size_t begin = size_t(i) * each < bytes ? size_t(i) * each : bytes;
  return {begin, begin + each < bytes ? begin + each : bytes};
}

// What a hand-written kernel gets: each CTA copies its share with 16-byte loads and stores,
// four in flight per thread; `iters` times over.
static __global__ void sm_copy_kernel(char* dst, const char* src, size_t bytes, long iters) {
  const Range r = share(bytes, blockIdx.x, gridDim.x);
  uint4* d = reinterpret_cast<uint4*>(dst + r.begin);
  const uint4* s = reinterpret_cast<const uint4*>(src + r.begin);
  const size_t units = (r.end - r.begin) / 16, stride = blockDim.x;
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

// Per-iteration times inside one kernel. stamps[0..n] are clock64() at the iteration
// boundaries; stamps[n+1], stamps[n+2] the global timer (ns) next to stamps[0] and
// stamps[n], which converts cycles to ns over the whole run (its tick can be coarser than
// one round trip); stamps[n+3] is 1 + the SM of the kernel's timing thread (0: none).
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
__device__ __forceinline__ void stamp_sm(uint64_t* stamps, long n) {
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  stamps[n + 3] = uint64_t(sm) + 1;
}

// Median per iteration (us) from the stamps of n iterations.
inline double median_iteration_us(const std::vector<uint64_t>& st, long n) {
  const size_t m = size_t(n);
  const double ns = double(st[m + 2] - st[m + 1]), cycles = double(st[m] - st[0]);
  std::vector<double> each(m);
  for (size_t i = 0; i < m; ++i)
    each[i] = double(st[i + 1] - st[i]) * (cycles > 0 ? ns / cycles : 0) * 1e-3;
  return spread_of(each).median;
}

// With `hold`, the stream waits behind a one-thread kernel spinning on a host-mapped word
// until everything is enqueued, so that events time the copies, not the host's enqueueing;
// the spin gives up after 2 s (a host blocked on a full queue would never release it),
// which time() reports.
static __global__ void stream_hold_kernel(const volatile int* go, int* timed_out, uint64_t limit) {
  for (const uint64_t start = global_timer(); *go == 0;)
    if (global_timer() - start > limit) {
      *timed_out = 1;
      return;
    }
}

class StreamTimer {
 public:
  explicit StreamTimer(bool hold) {
    PERF_CUDA(cudaEventCreate(&start_));
    PERF_CUDA(cudaEventCreate(&stop_));
    if (!hold) return;
    int* p = nullptr;
    PERF_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&p), 2 * sizeof(int), cudaHostAllocMapped));
    hold_ = p;
    PERF_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&hold_dev_), p, 0));
  }
  ~StreamTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    if (hold_) cudaFreeHost(const_cast<int*>(hold_));
  }
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;

  // Milliseconds `enqueue` takes on `s` (bounded wait); *held_out: the hold gave up first.
  template <class F>
  double time(cudaStream_t s, double timeout_s, const std::string& what, F&& enqueue,
              bool* held_out = nullptr) {
    if (hold_) {
      hold_[0] = hold_[1] = 0;
      stream_hold_kernel<<<1, 1, 0, s>>>(hold_dev_, hold_dev_ + 1, 2000000000ull);
      PERF_LAUNCHED("stream_hold_kernel");
    }
    PERF_CUDA(cudaEventRecord(start_, s));
    enqueue();
    PERF_CUDA(cudaEventRecord(stop_, s));
    if (hold_) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      hold_[0] = 1;
    }
    wait_event(stop_, timeout_s, what);
    if (held_out) *held_out = hold_ && hold_[1] != 0;
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  volatile int* hold_ = nullptr;
  int* hold_dev_ = nullptr;
};

// Lets `kernel` use `bytes` of dynamic shared memory, or says which option to lower.
inline void set_smem(const void* kernel, size_t bytes, const char* name) {
  int dev = 0, optin = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (bytes > size_t(optin))
    die(std::string(name) + " needs " + std::to_string(bytes) + " bytes of shared memory per " +
        "CTA; the device allows " + std::to_string(optin) + " (lower --stage or --nbi-threads)");
  PERF_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

// Payload GB/s of cudaMemcpy device-to-device (256 MiB, the median of `reps` repetitions of 4
// copies, the copy checked) on rank 0, and of cudaMemcpyPeer to the next GPU where more than
// one is visible (else 0), on every rank.
inline void measure_ceilings(double* d2d_gbps, double* peer_gbps, int reps, double timeout_s) {
  const size_t bytes = size_t(256) << 20;
  double v[2] = {0, 0};
  int dev = 0, count = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaGetDeviceCount(&count));
  for (int peer = 0; mpi_rank() == 0 && peer < (count > 1 ? 2 : 1); ++peer) {
    const int other = peer ? (dev + 1) % count : dev;
    void *src = nullptr, *dst = nullptr, *back = nullptr;
    PERF_CUDA(cudaMalloc(&src, bytes));
    PERF_CUDA(cudaMalloc(&back, bytes));
    PERF_CUDA(cudaSetDevice(other));
    PERF_CUDA(cudaMalloc(&dst, bytes));
    PERF_CUDA(cudaSetDevice(dev));
    if (peer && cudaDeviceEnablePeerAccess(other, 0) != cudaSuccess) (void)cudaGetLastError();
    const uint64_t seed = std::random_device{}();
    fill_pattern(src, bytes, seed, nullptr);
    StreamTimer timer(false);
    std::vector<double> gbps;
    for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
      const double ms = timer.time(nullptr, timeout_s, "ceiling", [&] {
        for (int i = 0; i < 4; ++i) PERF_CUDA(cudaMemcpyPeerAsync(dst, other, src, dev, bytes));
      });
      if (r >= 0) gbps.push_back(double(bytes) * 4 / (ms * 1e6));
    }
    PERF_CUDA(cudaMemcpyPeer(back, dev, dst, other, bytes));
    Checker check;
    check.pattern(back, bytes, seed, nullptr);
    if (const unsigned long long bad = check.take(nullptr, timeout_s))
      die("ceiling copies delivered " + std::to_string(bad) + " wrong words");
    for (void* p : {src, dst, back}) PERF_CUDA(cudaFree(p));
    v[peer] = spread_of(gbps).median;
  }
  MPI_Bcast(v, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  *d2d_gbps = v[0];
  *peer_gbps = v[1];
}

// A random 0..31 pages of 2 MiB held from before the runtime's heap until exit, so that each
// launch's heap lands on other physical pages (PERF_PLACEMENT_SHIFT=0: off). Construct after
// select_device, before init; print() (collective) says every PE's.
class PlacementShift {
 public:
  PlacementShift() {
    const char* env = std::getenv("PERF_PLACEMENT_SHIFT");
    pages_ = env && std::string(env) == "0" ? 0 : std::random_device{}() % 32;
    if (pages_) PERF_CUDA(cudaMalloc(&held_, pages_ << 21));
  }
  ~PlacementShift() {
    if (held_) cudaFree(held_);
  }
  PlacementShift(const PlacementShift&) = delete;
  PlacementShift& operator=(const PlacementShift&) = delete;
  void print() const {
    unsigned long long mine = pages_;
    std::vector<unsigned long long> all(mpi_rank() == 0 ? static_cast<size_t>(mpi_size()) : 0);
    MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1, MPI_UNSIGNED_LONG_LONG, 0,
               MPI_COMM_WORLD);
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
  uint64_t seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

inline int device_sm_count() {
  int dev = 0, sms = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// Picks this rank's GPU (node-local rank modulo the device count) and creates the context
// before anything is timed. Prints the device and the command line once.
inline void select_device(const char* runtime, int argc, char** argv) {
  int count = 0, local_rank = 0, driver = 0;
  PERF_CUDA(cudaGetDeviceCount(&count));
  if (count == 0) die("no CUDA device");
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  PERF_CUDA(cudaSetDevice(local_rank % count));
  PERF_CUDA(cudaFree(nullptr));
  if (mpi_rank() != 0) return;
  cudaDeviceProp prop;
  PERF_CUDA(cudaGetDeviceProperties(&prop, local_rank % count));
  PERF_CUDA(cudaDriverGetVersion(&driver));
  std::printf("# %s on %s (%d SMs), %d GPU(s) visible, driver API %d, %d PE(s)\n#", runtime,
              prop.name, prop.multiProcessorCount, count, driver, mpi_size());
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
}

}  // namespace perf
