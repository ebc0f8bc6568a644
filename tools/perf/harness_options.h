// The benchmark programs' host half (tmashmem-perf, perf_nvshmem, bench_init*): the command
// line (nccl-tests style, each option once with its help) and the report (a table on stdout,
// CSV rows that perf.py pools). Layer 1 of 3: harness_cuda.cuh adds the CUDA half,
// harness.cuh the loops that time and check a case.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tests/common/test_util.h"  // mpi_rank, mpi_size: one definition for tests and tools

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
  int tile_rows = 0;                      // tile bandwidth: rows of 1 KiB per tile (0: by size)
  int sources = 1;                        // mcast: copies of the source the calls cycle through
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
      {"--tile-rows", &o->tile_rows, 0, 32, "N     tile bw: rows of 1 KiB per tile (0: by size)"},
      {"--sources", &o->sources, 1, 64, "N     mcast: calls cycle through N source copies (1)"},
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
      if (mpi_rank() == 0) {
        std::printf("usage: mpirun -np N %s bw|mcast|msg|pingpong|barrier|coll [options]\n",
                    argv[0]);
        for (const Flag& g : flags) std::printf("  %-14s %s\n", g.name, g.help);
      }
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

}  // namespace perf
