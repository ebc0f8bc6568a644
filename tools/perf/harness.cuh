// The harness of every benchmark program (tmashmem-perf, perf_nvshmem, bench_init*): MPI and
// CUDA helpers, the command line (nccl-tests style), the report (a table on stdout, CSV rows
// whose columns perf.py pools), data patterns and their on-device checks, timing (events with
// a stream hold, in-kernel stamps), the machine (ceilings, PlacementShift, device), and the
// loops that time a Case or StampCase, check its destination after every repetition and
// report it. The why of slots, flag slots, the hold and PlacementShift: docs/performance.md.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tests/common/test_util.h"  // mpi_rank, mpi_size: one definition for tests and tools

#define PERF_CUDA(call) ::perf::cuda_check((call), #call, __FILE__, __LINE__)
#define PERF_LAUNCHED(what) ::perf::cuda_check(cudaGetLastError(), what, __FILE__, __LINE__)

namespace perf {

using tmashmem_test::mpi_rank;
using tmashmem_test::mpi_size;

// Ends the whole job: a benchmark that cannot go on must not leave a peer waiting.
[[noreturn]] inline void die(const std::string& message) {
  std::fprintf(stderr, "[rank %d] perf: %s\n", mpi_rank(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}

// "16K", "256M", "1G", "4096" -> bytes (binary multiples). Returns false on junk.
inline bool parse_size(const char* text, size_t* out) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || errno != 0 || v < 0) return false;
  const char* u = *end ? std::strchr("kmg", *end | 0x20) : nullptr;
  const double mult = u ? double(size_t(1) << (10 * (u - "kmg" + 1))) : 1.0;
  end += u != nullptr;
  end += *end == 'B' || *end == 'b';
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * mult);
  return true;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  for (size_t start = 0, end; start <= s.size(); start = end + 1) {
    end = std::min(s.find(sep, start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
  }
  return out;
}

struct Options {
  std::string test;      // bw | mcast | msg | pingpong | barrier | coll
  size_t min_bytes = 0;  // 0: the test's default
  size_t max_bytes = 0;
  double step_factor = 0;                 // 0: the test's default
  long iters = 0;                         // 0: the test's default (most timed iterations)
  long warmup = 0;                        // 0: the test's default
  int reps = 5;                           // timed repetitions; min / median / max over them
  std::string sms;                        // "": the test's default; "all" = every SM
  int threads = 1024;                     // threads per CTA: block ops, SM copies, message rate
  std::vector<std::string> ops;           // empty: every op of the test
  size_t target_bytes = size_t(1) << 30;  // bandwidth: iterations grow until this much moves
  int nbi_threads = 4;                    // issuing threads per CTA for put_nbi / get_nbi
  size_t stage_bytes = 48 * 1024;         // shared-memory staging per issuing thread
  int tile_rows = 32;                     // tile bandwidth: box rows of 1 KiB (32 KiB tiles)
  int tile_stages = 6;                    // tile bandwidth: tiles in flight per CTA
  double timeout_s = 20;                  // host watchdog per kernel, bound of device waits
  int algo = 0;                           // coll: tmashmem's all-reduce algorithm (0: auto)
  int graph = 0;                          // coll: 1 times the calls captured into one CUDA graph
  std::string csv;                        // append rows here

  bool want(const std::string& op) const {
    return ops.empty() || std::find(ops.begin(), ops.end(), op) != ops.end();
  }
  uint64_t timeout_ns() const { return static_cast<uint64_t>(timeout_s * 1e9); }
};

// Parses argv (rank 0 says why it refused an argument, or prints the usage for -h);
// returns false where the program should not run: a bad argument (*code 2) or -h (0).
inline bool parse_options(int argc, char** argv, Options* o, int* code) {
  using Field =
      std::variant<size_t*, double*, long*, int*, std::string*, std::vector<std::string>*>;
  struct Flag {
    const char* name;
    Field field;
    double lo, hi;
    const char* help;
  };
  const double kMax = 1e18;
  const Flag flags[] = {
      {"-b", &o->min_bytes, 0, kMax, "SIZE  smallest size (K/M/G suffixes)"},
      {"-e", &o->max_bytes, 0, kMax, "SIZE  largest size"},
      {"-f", &o->step_factor, 1 + 1e-9, kMax, "F     size step factor"},
      {"-n", &o->iters, 1, kMax, "N     most timed iterations per repetition"},
      {"-w", &o->warmup, 0, kMax, "N     warm-up iterations"},
      {"-r", &o->reps, 1, 1e6, "N     timed repetitions: min / median / max over them (5)"},
      {"-s", &o->sms, 0, 0, "LIST  CTA counts, e.g. 1,16,all (coll: n_sms, 0 auto)"},
      {"-t", &o->threads, 32, 1024, "N     threads per CTA, a multiple of 32 (1024)"},
      {"-o", &o->ops, 0, 0, "LIST  only these ops"},
      {"--target", &o->target_bytes, 1, kMax, "SIZE  bw: bytes per repetition (1G)"},
      {"--nbi-threads", &o->nbi_threads, 1, 32, "N     issuing threads per CTA of nbi_* (4)"},
      {"--stage", &o->stage_bytes, 1024, kMax, "SIZE  shared-memory staging per issuer (48K)"},
      {"--tile-rows", &o->tile_rows, 1, 256, "N     tile bw: rows of 1 KiB per tile (32)"},
      {"--tile-stages", &o->tile_stages, 2, 64, "N     tile bw: tiles in flight per CTA (6)"},
      {"--timeout", &o->timeout_s, 1e-9, kMax, "S     host watchdog, device wait bound (20)"},
      {"--algo", &o->algo, 0, 2, "N     coll: tmashmem all-reduce, 0 auto, 1 one-shot, 2 two-shot"},
      {"--graph", &o->graph, 0, 1, "0|1   coll: 1 times the -n calls as one CUDA graph (0)"},
      {"--csv", &o->csv, 0, 0, "FILE  append rows (a header when the file is empty)"},
  };
  auto set = [](const Flag& f, const char* v) {
    return std::visit(
        [&](auto* p) {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, std::string>) {
            return !(*p = v).empty();
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            return !(*p = split(v, ',')).empty();
          } else if constexpr (std::is_same_v<T, size_t>) {
            return parse_size(v, p) && double(*p) >= f.lo;
          } else {
            char* end = nullptr;
            const double n = std::strtod(v, &end);
            *p = static_cast<T>(n);
            return end != v && *end == '\0' && n >= f.lo && n <= f.hi &&
                   (std::is_floating_point_v<T> || double(*p) == n);
          }
        },
        f.field);
  };
  auto fail = [&](const char* what, const char* value) {
    if (mpi_rank() == 0) std::fprintf(stderr, "perf: bad %s '%s' (see --help)\n", what, value);
    *code = 2;
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const Flag* f = std::find_if(std::begin(flags), std::end(flags),
                                 [&](const Flag& g) { return a == g.name; });
    if (a == "-h" || a == "--help") {
      if (mpi_rank() == 0)
        std::printf("usage: mpirun -np N %s bw|mcast|msg|pingpong|barrier|coll [options]\n",
                    argv[0]);
      for (const Flag& g : flags)
        if (mpi_rank() == 0) std::printf("  %-14s %s\n", g.name, g.help);
      *code = 0;
      return false;
    } else if (a[0] != '-') {
      if (!o->test.empty()) return fail("extra argument", argv[i]);
      o->test = a;
    } else if (f == std::end(flags)) {
      return fail("option", argv[i]);
    } else if (i + 1 >= argc) {
      return fail("option (missing value)", argv[i]);
    } else if (!set(*f, argv[++i])) {
      return fail(argv[i - 1], argv[i]);
    }
  }
  if (o->threads % 32) return fail("-t (a multiple of 32)", std::to_string(o->threads).c_str());
  if (o->test.empty()) return fail("test", "(none given)");
  return true;
}

// Sizes min, min*f, ... up to max (max itself always included when min <= max); dies
// unless there is one and every one is a non-zero multiple of `align`.
inline std::vector<size_t> size_list(const Options& o, size_t min_bytes, size_t max_bytes,
                                     double factor, size_t align, const char* test) {
  min_bytes = o.min_bytes ? o.min_bytes : min_bytes;
  max_bytes = o.max_bytes ? o.max_bytes : max_bytes;
  factor = o.step_factor ? o.step_factor : factor;
  std::vector<size_t> out;
  for (double s = double(min_bytes); s <= double(max_bytes) * 1.0000001; s *= factor)
    out.push_back(static_cast<size_t>(s));
  if (!out.empty() && max_bytes > out.back()) out.push_back(max_bytes);
  if (out.empty()) die(std::string(test) + ": no sizes between -b and -e");
  for (size_t s : out)
    if (s == 0 || s % align)
      die(std::string(test) + " sizes must be multiples of " + std::to_string(align) +
          " bytes; got " + std::to_string(s));
  return out;
}

// "1,16,132" or "all" (the option, else `fallback`) -> CTA counts within 1..device_sms.
inline std::vector<int> sm_list(const Options& o, const char* fallback, int device_sms) {
  const std::string text = o.sms.empty() ? fallback : o.sms;
  std::vector<int> out;
  for (const std::string& item : split(text, ',')) {
    out.push_back(item == "all" ? device_sms : std::atoi(item.c_str()));
    if (out.back() < 1 || out.back() > device_sms)
      die("bad SM list '" + text + "' (1.." + std::to_string(device_sms) + " or all)");
  }
  if (out.empty()) die("empty SM list");
  return out;
}

struct Spread {
  double min = 0, median = 0, max = 0;
};

inline Spread spread_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {v.front(), n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.back()};
}

// One result line. Times are per iteration (bw: one copy of `bytes`; msg: one message;
// pingpong: one round trip; barrier: one barrier), in microseconds.
struct Row {
  std::string test, op;
  int pes = mpi_size(), sms = 0, threads = 0;
  size_t bytes = 0;
  long iters = 0;
  int reps = 0;
  Spread time_us;
  std::vector<double> samples_us;  // what time_us summarises: one per repetition, in order
  double messages_per_iter = 1;    // messages one iteration stands for (message rate)
  std::string ref_op;              // reference measured in the same run ("" if none)
  double ref_gbps = 0;
  std::string check;    // "ok", "FAIL(<n> bad)", "FAIL(timeout/data)", "n/a" (not checked)
  std::string runtime;  // "": the report's

  Row() = default;
  Row(std::string t, std::string o, int s, int thr, size_t b, long it)
      : test(std::move(t)), op(std::move(o)), sms(s), threads(thr), bytes(b), iters(it) {}

  void set_samples(std::vector<double> samples) {
    time_us = spread_of(samples);
    reps = static_cast<int>(samples.size());
    samples_us = std::move(samples);
  }
  double gbps(double t_us) const {
    return t_us > 0 ? static_cast<double>(bytes) * messages_per_iter / (t_us * 1e3) : 0;
  }
};

inline std::string check_text(unsigned long long bad) {
  return bad ? "FAIL(" + std::to_string(bad) + " bad)" : "ok";
}

class Report {
 public:
  Report(std::string runtime, const Options& opt) : runtime_(std::move(runtime)), opt_(opt) {}

  // Ceilings measured in this run (payload GB/s), printed with every table, in every row.
  double d2d_gbps = 0, peer_gbps = 0;

  void table_header(const std::string& title) const {
    if (mpi_rank() != 0) return;
    std::printf("\n# %s %s | %d PE(s) | ceilings: cudaMemcpy D2D %.1f GB/s payload",
                runtime_.c_str(), title.c_str(), mpi_size(), d2d_gbps);
    if (peer_gbps > 0) std::printf(", cudaMemcpyPeer %.1f GB/s", peer_gbps);
    std::printf("\n# %10s %-16s %4s %5s %7s %11s %11s %11s %10s %10s %9s  %s\n", "size(B)", "op",
                "SMs", "thr", "iters", "t_min(us)", "t_med(us)", "t_max(us)", "GB/s", "Mops/s",
                "vs ref", "check");
    std::fflush(stdout);
  }

  // Prints the row (rank 0) and appends it to the CSV file.
  void add(const Row& r) {
    if (mpi_rank() != 0) return;
    const double t = r.time_us.median, g = r.gbps(t), mops = t > 0 ? r.messages_per_iter / t : 0;
    const double ratio = r.ref_gbps > 0 ? g / r.ref_gbps : 0;
    std::printf("  %10zu %-16s %4d %5d %7ld %11.3f %11.3f %11.3f %10.2f %10.3f %8.3fx  %s\n",
                r.bytes, r.op.c_str(), r.sms, r.threads, r.iters, r.time_us.min, t, r.time_us.max,
                g, mops, ratio, r.check.c_str());
    std::fflush(stdout);
    failures_ += r.check != "ok" && r.check != "n/a";
    if (opt_.csv.empty()) return;
    const std::string& runtime = r.runtime.empty() ? runtime_ : r.runtime;
    FILE* f = std::fopen(opt_.csv.c_str(), "a");
    if (!f) {
      std::fprintf(stderr, "perf: cannot append to %s: %s\n", opt_.csv.c_str(),
                   std::strerror(errno));
      ++failures_;
      return;
    }
    std::fseek(f, 0, SEEK_END);
    if (std::ftell(f) == 0)
      std::fprintf(f,
                   "runtime,test,op,pes,sms,threads,bytes,iters,reps,time_us_min,time_us_median,"
                   "time_us_max,gbps_min,gbps_median,gbps_max,mops_median,ref_op,ref_gbps,"
                   "ratio_to_ref,ceiling_d2d_gbps,ceiling_peer_gbps,bytes_moved,check,"
                   "time_us_samples\n");
    std::fprintf(f,
                 "%s,%s,%s,%d,%d,%d,%zu,%ld,%d,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.4f,%s,%.3f,%.4f,"
                 "%.3f,%.3f,%.0f,%s,",
                 runtime.c_str(), r.test.c_str(), r.op.c_str(), r.pes, r.sms, r.threads, r.bytes,
                 r.iters, r.reps, r.time_us.min, t, r.time_us.max, r.gbps(r.time_us.max), g,
                 r.gbps(r.time_us.min), mops, r.ref_op.c_str(), r.ref_gbps, ratio, d2d_gbps,
                 peer_gbps, double(r.bytes) * r.messages_per_iter * double(r.iters),
                 r.check.c_str());
    // Every repetition's time, ';'-separated, so that launches can be pooled (perf.py).
    for (size_t i = 0; i < r.samples_us.size(); ++i)
      std::fprintf(f, "%s%.4f", i ? ";" : "", r.samples_us[i]);
    std::fprintf(f, "\n");
    std::fclose(f);
  }

  // Rows whose destination check failed (rank 0's count; 0 elsewhere).
  int failures() const { return failures_; }

 private:
  std::string runtime_;
  const Options& opt_;
  int failures_ = 0;
};

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

// Share `i` of `n` of a `bytes` buffer: equal shares rounded up to `align` bytes, the last
// one shorter (possibly empty). Identical for every runtime.
struct Range {
  size_t begin, end;
};

__host__ __device__ inline Range share(size_t bytes, unsigned i, unsigned n, size_t align = 16) {
  const size_t each = ((bytes + n - 1) / n + align - 1) / align * align;
  const size_t begin = size_t(i) * each < bytes ? size_t(i) * each : bytes;
  return {begin, begin + each < bytes ? begin + each : bytes};
}

__host__ __device__ inline Range cta_range(size_t bytes, unsigned cta, unsigned ctas) {
  return share(bytes, cta, ctas);
}

// What a hand-written kernel gets: each CTA copies its share with 16-byte loads and stores,
// four in flight per thread; `iters` times over.
static __global__ void sm_copy_kernel(char* dst, const char* src, size_t bytes, long iters) {
  const Range r = cta_range(bytes, blockIdx.x, gridDim.x);
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

// What one ping-pong round sends: a signal (tmashmem: signal_op, a release; NVSHMEM:
// nvshmemx_signal_op, relaxed), a relaxed signal (tmashmem only), or a put + signal from one
// thread or from the whole block.
enum class PingOp { Signal, SignalRelaxed, PutSignalThread, PutSignalBlock };

// Repetition r of a ping-pong waits on flag slot r % kPingFlagSlots (docs/performance.md,
// "Do two runs agree?"); the stride is no power of two, so slots differ in many address bits.
constexpr int kPingFlagSlots = 16;
constexpr size_t kPingFlagStride = 4096 + 256;
constexpr size_t kPingFlagBytes = kPingFlagSlots * kPingFlagStride;
inline uint64_t* ping_flag(uint64_t* flags, int rep) {
  return flags + size_t(rep % kPingFlagSlots) * (kPingFlagStride / sizeof(uint64_t));
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
// until everything is enqueued, so that events time the copies, not the host's enqueueing
// (docs/performance.md, "Copy-engine rows"); the spin gives up after 2 s (a host blocked on a
// full queue would never release it), which time() reports as a failure.
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
    int* p = nullptr;
    if (hold)
      PERF_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&p), 2 * sizeof(int), cudaHostAllocMapped));
    hold_ = p;
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
      int* dev = nullptr;
      hold_[0] = hold_[1] = 0;
      PERF_CUDA(
          cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), const_cast<int*>(hold_), 0));
      stream_hold_kernel<<<1, 1, 0, s>>>(dev, dev + 1, 2000000000ull);
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
};

// Lets `kernel` use `bytes` of dynamic shared memory, or says which option to lower.
inline void set_smem(const void* kernel, size_t bytes, const char* name) {
  int dev = 0, optin = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (bytes > size_t(optin))
    die(std::string(name) + " needs " + std::to_string(bytes) + " bytes of shared memory per " +
        "CTA; the device allows " + std::to_string(optin) +
        " (lower --stage, --nbi-threads, --tile-stages or --tile-rows)");
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
// launch's heap lands on other physical pages (docs/performance.md; PERF_PLACEMENT_SHIFT=0:
// off). Construct after select_device, before init; print() (collective) says every PE's.
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
    std::vector<unsigned long long> all(mpi_rank() == 0 ? size_t(mpi_size()) : 0);
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

// Where repetition r of a case puts its data: one of kSlots placements in other 2 MiB pages
// and at other offsets (docs/performance.md, "Buffer slots"); footprints above kSlotMaxBytes
// (DRAM-bound) stay at offset 0. Offsets are multiples of kSlotAlign.
constexpr int kSlots = 4;
constexpr size_t kSlotMaxBytes = size_t(16) << 20, kSlotAlign = 4096;
inline size_t slot_offset(size_t footprint, int rep) {
  constexpr size_t kPage = size_t(2) << 20, kSlack = 64 * 1024, kShift = 17 * kSlotAlign;
  const size_t stride = (footprint + kSlack + kPage - 1) / kPage * kPage + kShift;
  return footprint > kSlotMaxBytes ? 0 : size_t(rep % kSlots) * stride;
}
// Bytes a buffer needs so that every slot of every footprint fits (not monotonic in size).
inline size_t slot_span(const std::vector<size_t>& footprints) {
  size_t span = 0;
  for (size_t f : footprints) span = std::max(span, slot_offset(f, kSlots - 1) + f);
  return span;
}

constexpr size_t kGuard = 4096;  // poisoned bytes after every destination

// One operation timed with CUDA events around `run`; everything else is untimed. `off` is
// the byte offset of this repetition's placement in every buffer the case touches.
struct Case {
  std::string test = "bw";  // the CSV's test column
  std::string op;
  std::string ref;     // op whose GB/s (same SM count, else the copy engine's) is the denominator
  int grid = 0;        // 0: run at every SM count of the list; else once, with this many CTAs
  int threads = 0;     // threads per CTA, for the report (0: not SM-driven, reports 0 SMs)
  long max_iters = 0;  // 0: no cap beyond the options
  bool hold = false;   // copy engine: time with the stream held (StreamTimer)
  // Bytes one repetition touches in each buffer, guard excluded. Set: repetitions rotate
  // over slot placements (slot_offset); unset: every repetition at offset 0.
  std::function<size_t(size_t bytes)> footprint;
  std::function<void(cudaStream_t, size_t bytes, size_t off)> prepare;  // before every repetition
  std::function<void(cudaStream_t, int ctas, size_t bytes, long iters, size_t off)> run;
  // Enqueue checks of the destination (after every repetition).
  std::function<void(cudaStream_t, int ctas, size_t bytes, long iters, size_t off, Checker&)>
      verify;
  std::function<long(int ctas, size_t bytes)> iters;       // default: the bandwidth rule
  std::function<double(int ctas, size_t bytes)> messages;  // per iteration; default 1
  std::function<bool(size_t bytes)> applies;               // default: every size

  size_t offset(size_t bytes, int rep) const {
    return footprint ? slot_offset(footprint(bytes), rep) : 0;
  }
};

// Makes each of `dsts` (this PE's buffer or peers' mappings of one) a destination: before
// every repetition its `bytes` and the kGuard bytes after them are poisoned, after it they
// must hold the pattern for *seed (read when the check is enqueued) and the poison.
inline void use_destination(Case& c, std::vector<char*> dsts, const uint64_t* seed) {
  c.prepare = [=](cudaStream_t s, size_t bytes, size_t o) {
    for (char* d : dsts) PERF_CUDA(cudaMemsetAsync(d + o, kPoison, bytes + kGuard, s));
  };
  c.verify = [=](cudaStream_t s, int, size_t bytes, long, size_t o, Checker& ch) {
    for (char* d : dsts) {
      ch.pattern(d + o, bytes, *seed, s);
      ch.equal(reinterpret_cast<const unsigned char*>(d + o + bytes), kGuard, kPoison, s);
    }
  };
}

// Adds a device error word to c's check: non-zero after a repetition counts one bad item.
inline void check_error_word(Case& c, int* error, double timeout_s) {
  c.verify = [inner = c.verify, error, timeout_s, op = c.op](cudaStream_t s, int ctas, size_t bytes,
                                                             long it, size_t o, Checker& ch) {
    if (inner) inner(s, ctas, bytes, it, o, ch);
    int e = 0;
    sync_stream(s, timeout_s, op);
    PERF_CUDA(cudaMemcpy(&e, error, sizeof(int), cudaMemcpyDeviceToHost));
    ch.add_host(e != 0);
    if (e) PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
  };
}

// Runs `c` once untimed (warm-up iterations), then `reps` timed repetitions, repetition r
// at c.offset(bytes, r); the destination is prepared before and checked after each.
// Returns the time per iteration (us) of each repetition; *bad: wrong items.
inline std::vector<double> measure(const Case& c, cudaStream_t stream, int ctas, size_t bytes,
                                   long iters, long warmup, int reps, double timeout_s,
                                   Checker& check, unsigned long long* bad) {
  const std::string what =
      c.op + " (" + std::to_string(bytes) + " B, " + std::to_string(ctas) + " CTAs)";
  if (warmup > 0) {
    if (c.prepare) c.prepare(stream, bytes, 0);
    c.run(stream, ctas, bytes, warmup, 0);
    sync_stream(stream, timeout_s, what + " warm-up");
  }
  StreamTimer timer(c.hold);
  std::vector<double> per_iter_us;
  for (int r = 0; r < reps; ++r) {
    const size_t off = c.offset(bytes, r);
    if (c.prepare) c.prepare(stream, bytes, off);
    bool held_out = false;
    const double ms = timer.time(
        stream, timeout_s, what, [&] { c.run(stream, ctas, bytes, iters, off); }, &held_out);
    if (held_out)
      die(what + ": the stream hold gave up before " + std::to_string(iters) +
          " copies were enqueued; lower the copy-engine iteration cap (Case::max_iters)");
    if (c.verify) c.verify(stream, ctas, bytes, iters, off, check);
    per_iter_us.push_back(ms * 1e3 / static_cast<double>(iters));
  }
  *bad = check.take(stream, timeout_s);
  return per_iter_us;
}

// Every case at every size (outer loop) and SM count; rank 0 measures, the other ranks wait
// (their memory is the target). `fill_sources` (optional) writes `bytes` of source at every
// offset a case uses at that size. Returns rank 0's failures on every rank.
inline int run_cases(const Options& opt, Report& report, const std::vector<Case>& cases,
                     const std::vector<size_t>& sizes, const std::vector<int>& sms,
                     const std::function<void(cudaStream_t, size_t, size_t)>& fill_sources,
                     const std::string& title) {
  report.table_header(title);
  cudaStream_t stream;
  PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Checker check;
  for (size_t bytes : mpi_rank() == 0 ? sizes : std::vector<size_t>{}) {  // rank 0 measures
    std::set<size_t> offsets;  // every placement a case reads its source at, at this size
    for (const Case& c : cases)
      for (int r = 0; r < kSlots; ++r) offsets.insert(c.offset(bytes, r));
    for (size_t off : offsets)
      if (fill_sources) fill_sources(stream, bytes, off);
    std::map<std::pair<std::string, int>, double> gbps;  // (op, SMs) at this size
    for (int ctas : sms) {
      for (const Case& c : cases) {
        if (!opt.want(c.op) || (c.applies && !c.applies(bytes))) continue;
        if (c.grid && ctas != sms.front()) continue;  // fixed grid: once per size
        const int grid = c.grid ? c.grid : ctas;
        const long by_target = long((opt.target_bytes + bytes - 1) / bytes);
        long iters =
            c.iters ? c.iters(grid, bytes)
                    : std::max<long>(1, std::min<long>(opt.iters ? opt.iters : 1000, by_target));
        if (c.max_iters) iters = std::min(iters, c.max_iters);
        const long warmup = opt.warmup ? opt.warmup : std::max<long>(1, iters / 10);
        unsigned long long bad = 0;
        Row row(c.test, c.op, c.threads ? grid : 0, c.threads, bytes, iters);
        row.set_samples(
            measure(c, stream, grid, bytes, iters, warmup, opt.reps, opt.timeout_s, check, &bad));
        row.messages_per_iter = c.messages ? c.messages(grid, bytes) : 1;
        row.check = check_text(bad);
        gbps[{c.op, row.sms}] = row.gbps(row.time_us.median);
        for (int at : {row.sms, 0})
          if (!c.ref.empty() && row.ref_op.empty() && gbps.count({c.ref, at})) {
            row.ref_op = c.ref;
            row.ref_gbps = gbps[{c.ref, at}];
          }
        report.add(row);
      }
    }
  }
  PERF_CUDA(cudaStreamDestroy(stream));
  int failures = report.failures();
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  return failures;
}

struct StampCase {
  std::string op;
  size_t bytes = 0;
  int ctas = 1, threads = 1;
  bool participates = true;  // this rank launches a kernel
  // Enqueues repetition `rep`: `warmup` untimed then `iters` timed iterations, values after
  // `base`; this rank's stamps (stamp_words(iters)) and an error word.
  std::function<void(cudaStream_t, int rep, long warmup, long iters, uint64_t base,
                     uint64_t* stamps, int* error)>
      run;
  // Optional untimed check after the timed repetitions (`iters` iterations, values after
  // `base`): returns wrong items.
  std::function<unsigned long long(cudaStream_t, uint64_t base)> verify;
};

// Runs each case `reps` times on every participating rank at once; reports rank 0's median
// per iteration (min / median / max over repetitions). Signals are never reset: `base`, the
// value every rank agrees on, advances past what each kernel used (warmup + iters). A
// timed-out wait leaves the signals inconsistent: the test stops there.
inline int run_stamped(const Options& opt, Report& report, const std::string& test,
                       const std::vector<StampCase>& cases, long iters, long warmup) {
  cudaStream_t stream;
  PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint64_t *stamps = nullptr, base = 0;
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&stamps, sizeof(uint64_t) * stamp_words(iters)));
  PERF_CUDA(cudaMalloc(&error, sizeof(int)));
  std::vector<uint64_t> host(stamp_words(iters));
  int failures = 0, err = 0;
  for (size_t i = 0; i < cases.size() && !err; ++i) {
    const StampCase& c = cases[i];
    if (!opt.want(c.op)) continue;
    std::vector<double> medians;
    for (int r = 0; r < opt.reps && !err; ++r) {
      PERF_CUDA(cudaMemsetAsync(error, 0, sizeof(int), stream));
      PERF_CUDA(cudaMemsetAsync(stamps, 0, sizeof(uint64_t) * host.size(), stream));
      sync_stream(stream, opt.timeout_s, c.op + " setup");
      MPI_Barrier(MPI_COMM_WORLD);  // every kernel starts at about the same time
      if (c.participates) {
        c.run(stream, r, warmup, iters, base, stamps, error);
        sync_stream(stream, opt.timeout_s + 5, c.op + " kernel");
        PERF_CUDA(cudaMemcpy(&err, error, sizeof(int), cudaMemcpyDeviceToHost));
        PERF_CUDA(cudaMemcpy(host.data(), stamps, sizeof(uint64_t) * host.size(),
                             cudaMemcpyDeviceToHost));
      }
      base += uint64_t(warmup + iters);
      MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (err && mpi_rank() == 0)
        std::fprintf(stderr, "%s %s: a PE reported error %d in repetition %d\n", test.c_str(),
                     c.op.c_str(), err, r);
      if (!err && mpi_rank() == 0) medians.push_back(median_iteration_us(host, iters));
    }
    unsigned long long bad = 0;
    if (!err && c.verify) {
      MPI_Barrier(MPI_COMM_WORLD);
      bad = c.verify(stream, base);
      base += uint64_t(iters);
      MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    Row row(test, c.op, c.ctas, c.threads, c.bytes, iters);
    row.set_samples(medians);
    row.check = err ? "FAIL(timeout/data)" : check_text(bad);
    report.add(row);
    failures += err || bad;
  }
  PERF_CUDA(cudaFree(stamps));
  PERF_CUDA(cudaFree(error));
  PERF_CUDA(cudaStreamDestroy(stream));
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return failures;
}

}  // namespace perf
