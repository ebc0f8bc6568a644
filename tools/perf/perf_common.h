// Host-side pieces shared by tmashmem-perf and the NVSHMEM baseline (perf_nvshmem):
// the command line (nccl-tests style), size and SM-count lists, statistics over
// repetitions, and the report (a human table on stdout, rows appended to a CSV file
// with the same columns in both programs so that plot.py can join them).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace perf {

inline int mpi_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int mpi_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Every rank's `mine`, on rank 0 (rank order; empty elsewhere). COLLECTIVE.
inline std::vector<unsigned long long> gather_to_root(unsigned long long mine) {
  std::vector<unsigned long long> all(mpi_rank() == 0 ? static_cast<size_t>(mpi_size()) : 0);
  MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1, MPI_UNSIGNED_LONG_LONG, 0,
             MPI_COMM_WORLD);
  return all;
}

// Ends the whole job: a benchmark that cannot go on must not leave a peer waiting.
[[noreturn]] inline void die(const std::string& message) {
  std::fprintf(stderr, "[rank %d] tmashmem-perf: %s\n", mpi_rank(), message.c_str());
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
  double mult = 1;
  switch (*end) {
    case 'k':
    case 'K':
      mult = 1024.0;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1024.0 * 1024.0;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1024.0 * 1024.0 * 1024.0;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * mult);
  return true;
}

inline std::string format_size(size_t bytes) {
  char buf[32];
  if (bytes >= (size_t(1) << 30) && bytes % (size_t(1) << 30) == 0)
    std::snprintf(buf, sizeof buf, "%zuG", bytes >> 30);
  else if (bytes >= (size_t(1) << 20) && bytes % (size_t(1) << 20) == 0)
    std::snprintf(buf, sizeof buf, "%zuM", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%zuK", bytes >> 10);
  else
    std::snprintf(buf, sizeof buf, "%zu", bytes);
  return buf;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    const std::string item =
        s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

struct Options {
  std::string test;      // ceiling | bw | msg | pingpong | barrier | all
  size_t min_bytes = 0;  // 0: the test's default
  size_t max_bytes = 0;
  double step_factor = 0;        // 0: the test's default
  long iters = 0;                // 0: the test's default (the most timed iterations per repetition)
  long warmup = 0;               // 0: the test's default
  int reps = 5;                  // timed repetitions; min / median / max over them
  std::string sms = "";          // "" : the test's default; "all" = every SM
  int threads = 1024;            // threads per CTA for block-scope ops, SM copies, message rate
  std::vector<std::string> ops;  // empty: every op of the test
  size_t target_bytes = size_t(1) << 30;  // bandwidth: iterations grow until this much moves
  int nbi_threads = 4;                    // issuing threads per CTA for put_nbi / get_nbi
  size_t stage_bytes = 48 * 1024;         // shared-memory staging per issuing thread
  int tile_rows = 32;                     // tile bandwidth: box rows of 1 KiB (32 KiB tiles)
  int tile_stages = 6;                    // tile bandwidth: tiles in flight per CTA
  double timeout_s = 20;                  // host watchdog per kernel and bound of every device wait
  std::string csv;                        // append rows here
  bool help = false;

  bool want(const std::string& op) const {
    return ops.empty() || std::find(ops.begin(), ops.end(), op) != ops.end();
  }
  uint64_t timeout_ns() const { return static_cast<uint64_t>(timeout_s * 1e9); }
};

inline void print_usage(const char* prog) {
  std::printf(
      "usage: mpirun -np N %s <test> [options]\n"
      "tests:\n"
      "  ceiling   cudaMemcpy device-to-device (and cudaMemcpyPeer across GPUs) rates\n"
      "  bw        bandwidth, PE 0 writing into / reading from PE 1 (itself with 1 PE)\n"
      "  msg       small messages in one persistent kernel: rate (many threads) and\n"
      "            latency (one thread, op + quiet per message)\n"
      "  pingpong  round trips between PE 0 and PE 1 inside one kernel on each\n"
      "  barrier   device barrier latency, every PE, inside one kernel\n"
      "  all       all of the above with their defaults\n"
      "options:\n"
      "  -b, --minbytes SIZE   smallest size (K/M/G suffixes)\n"
      "  -e, --maxbytes SIZE   largest size (up to 1G for bw)\n"
      "  -f, --stepfactor F    multiply the size by F each step\n"
      "  -n, --iters N         most timed iterations per repetition (bw: fewer for large\n"
      "                        sizes, see --target)\n"
      "  -w, --warmup N        warm-up iterations before the timed repetitions\n"
      "  -r, --reps N          timed repetitions; tables show min/median/max (default 5)\n"
      "  -s, --sms LIST        CTA counts, one CTA per SM: e.g. 1,16,132 or all\n"
      "  -t, --threads N       threads per CTA (default 1024)\n"
      "  -o, --ops LIST        only these ops (names as printed in the tables)\n"
      "      --target SIZE     bw: bytes per repetition before iterations stop growing (1G)\n"
      "      --nbi-threads N   bw: issuing threads per CTA for put_nbi/get_nbi (4)\n"
      "      --stage SIZE      bw: shared-memory staging per issuing thread (48K)\n"
      "      --tile-rows N     bw: tile = N rows of 1 KiB (32)\n"
      "      --tile-stages N   bw: tiles in flight per CTA (6)\n"
      "      --timeout S       watchdog per kernel and bound of device waits (20 s)\n"
      "      --csv FILE        append rows to FILE (header when the file is empty)\n",
      prog);
}

// Parses argv; on a bad argument prints why (rank 0) and returns false.
inline bool parse_options(int argc, char** argv, Options* o) {
  const bool talk = mpi_rank() == 0;
  auto fail = [&](const char* what, const char* value) {
    if (talk) std::fprintf(stderr, "tmashmem-perf: bad %s '%s' (see --help)\n", what, value);
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char** out) -> bool {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    const char* v = nullptr;
    if (a == "-h" || a == "--help") {
      o->help = true;
    } else if (a[0] != '-') {
      if (!o->test.empty()) return fail("extra argument", a.c_str());
      o->test = a;
    } else if (!value(&v)) {
      return fail("option (missing value)", a.c_str());
    } else if (a == "-b" || a == "--minbytes") {
      if (!parse_size(v, &o->min_bytes)) return fail("size", v);
    } else if (a == "-e" || a == "--maxbytes") {
      if (!parse_size(v, &o->max_bytes)) return fail("size", v);
    } else if (a == "-f" || a == "--stepfactor") {
      o->step_factor = std::atof(v);
      if (o->step_factor <= 1) return fail("step factor (must be > 1)", v);
    } else if (a == "-n" || a == "--iters") {
      o->iters = std::atol(v);
      if (o->iters < 1) return fail("iteration count", v);
    } else if (a == "-w" || a == "--warmup") {
      o->warmup = std::atol(v);
      if (o->warmup < 0) return fail("warm-up count", v);
    } else if (a == "-r" || a == "--reps") {
      o->reps = std::atoi(v);
      if (o->reps < 1) return fail("repetition count", v);
    } else if (a == "-s" || a == "--sms") {
      o->sms = v;
    } else if (a == "-t" || a == "--threads") {
      o->threads = std::atoi(v);
      if (o->threads < 32 || o->threads > 1024 || o->threads % 32 != 0)
        return fail("thread count (32..1024, a multiple of 32)", v);
    } else if (a == "-o" || a == "--ops") {
      o->ops = split(v, ',');
    } else if (a == "--target") {
      if (!parse_size(v, &o->target_bytes) || o->target_bytes == 0) return fail("size", v);
    } else if (a == "--nbi-threads") {
      o->nbi_threads = std::atoi(v);
      if (o->nbi_threads < 1 || o->nbi_threads > 32) return fail("issuer count (1..32)", v);
    } else if (a == "--stage") {
      if (!parse_size(v, &o->stage_bytes) || o->stage_bytes < 1024) return fail("stage size", v);
    } else if (a == "--tile-rows") {
      o->tile_rows = std::atoi(v);
      if (o->tile_rows < 1 || o->tile_rows > 256) return fail("tile rows (1..256)", v);
    } else if (a == "--tile-stages") {
      o->tile_stages = std::atoi(v);
      if (o->tile_stages < 2 || o->tile_stages > 64) return fail("tile stages (2..64)", v);
    } else if (a == "--timeout") {
      o->timeout_s = std::atof(v);
      if (o->timeout_s <= 0) return fail("timeout", v);
    } else if (a == "--csv") {
      o->csv = v;
    } else {
      return fail("option", a.c_str());
    }
  }
  if (o->help) return true;
  if (o->test.empty()) return fail("test", "(none given)");
  return true;
}

// Sizes min, min*f, ... up to max (max itself always included when min <= max).
inline std::vector<size_t> size_list(size_t min_bytes, size_t max_bytes, double factor) {
  std::vector<size_t> out;
  double s = static_cast<double>(min_bytes);
  while (s <= static_cast<double>(max_bytes) * 1.0000001) {
    out.push_back(static_cast<size_t>(s));
    s *= factor;
  }
  if (!out.empty() && out.back() != max_bytes && max_bytes > out.back()) out.push_back(max_bytes);
  return out;
}

// "1,16,132" or "all" -> CTA counts, each within 1..device_sms.
inline bool sm_list(const std::string& text, int device_sms, std::vector<int>* out) {
  out->clear();
  for (const std::string& item : split(text, ',')) {
    const int n = item == "all" ? device_sms : std::atoi(item.c_str());
    if (n < 1 || n > device_sms) return false;
    out->push_back(n);
  }
  return !out->empty();
}

struct Spread {
  double min = 0, median = 0, max = 0;
};

inline Spread spread_of(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

// One result line. Times are per iteration (bw: one copy of `bytes`; msg: one
// message; pingpong: one round trip; barrier: one barrier), in microseconds.
struct Row {
  std::string test, op;
  int pes = 1, sms = 0, threads = 0;
  size_t bytes = 0;
  long iters = 0;
  int reps = 0;
  Spread time_us;
  std::vector<double> samples_us;  // what time_us summarises: one per repetition, in order
  double messages_per_iter = 1;    // messages one iteration stands for (message rate)
  std::string ref_op;              // reference measured in the same run ("" if none)
  double ref_gbps = 0;
  std::string check;  // "ok", "FAIL(<n> bad)", "n/a"

  // Sets the repetitions' times and their min / median / max.
  void set_samples(std::vector<double> samples) {
    time_us = spread_of(samples);
    samples_us = std::move(samples);
  }
  double gbps(double t_us) const {
    return t_us > 0 ? static_cast<double>(bytes) * messages_per_iter / (t_us * 1e3) : 0;
  }
  double mops(double t_us) const { return t_us > 0 ? messages_per_iter / t_us : 0; }
  // Payload bytes one timed repetition moves.
  double bytes_moved() const {
    return static_cast<double>(bytes) * messages_per_iter * static_cast<double>(iters);
  }
};

class Report {
 public:
  Report(std::string runtime, const Options& opt) : runtime_(std::move(runtime)), opt_(opt) {}

  // Ceilings measured in this run, printed with every table and written to every row.
  void set_ceiling(double d2d_gbps, double peer_gbps) {
    d2d_gbps_ = d2d_gbps;
    peer_gbps_ = peer_gbps;
  }
  double ceiling_d2d() const { return d2d_gbps_; }
  double ceiling_peer() const { return peer_gbps_; }

  void table_header(const std::string& title) const {
    if (mpi_rank() != 0) return;
    std::printf(
        "\n# %s %s | %d PE%s | ceilings: cudaMemcpy D2D %.1f GB/s payload (%.1f GB/s "
        "read+write)",
        runtime_.c_str(), title.c_str(), mpi_size(), mpi_size() > 1 ? "s" : "", d2d_gbps_,
        2 * d2d_gbps_);
    if (peer_gbps_ > 0) std::printf(", cudaMemcpyPeer %.1f GB/s", peer_gbps_);
    std::printf("\n# %10s %-16s %4s %5s %7s %12s %11s %11s %11s %10s %21s %10s %9s  %s\n",
                "size(B)", "op", "SMs", "thr", "iters", "moved(B)", "t_min(us)", "t_med(us)",
                "t_max(us)", "GB/s", "GB/s [min - max]", "Mops/s", "vs ref", "check");
    std::fflush(stdout);
  }

  // Prints the row (rank 0) and appends it to the CSV file.
  void add(const Row& r) {
    if (mpi_rank() != 0) return;
    const double g = r.gbps(r.time_us.median);
    const double ratio = r.ref_gbps > 0 ? g / r.ref_gbps : 0;
    char ratio_text[32] = "-";
    if (ratio > 0) std::snprintf(ratio_text, sizeof ratio_text, "%.3fx", ratio);
    std::printf(
        "  %10zu %-16s %4d %5d %7ld %12.4g %11.3f %11.3f %11.3f %10.2f [%8.2f - %8.2f] "
        "%10.3f %9s  %s\n",
        r.bytes, r.op.c_str(), r.sms, r.threads, r.iters, r.bytes_moved(), r.time_us.min,
        r.time_us.median, r.time_us.max, g, r.gbps(r.time_us.max), r.gbps(r.time_us.min),
        r.mops(r.time_us.median), ratio_text, r.check.c_str());
    std::fflush(stdout);
    if (!r.check.empty() && r.check != "ok" && r.check != "n/a") ++failures_;
    if (opt_.csv.empty()) return;
    FILE* f = std::fopen(opt_.csv.c_str(), "a");
    if (!f) {
      std::fprintf(stderr, "tmashmem-perf: cannot append to %s: %s\n", opt_.csv.c_str(),
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
    std::fprintf(
        f,
        "%s,%s,%s,%d,%d,%d,%zu,%ld,%d,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.4f,%s,%.3f,%.4f,%.3f,"
        "%.3f,%.0f,%s,",
        runtime_.c_str(), r.test.c_str(), r.op.c_str(), r.pes, r.sms, r.threads, r.bytes, r.iters,
        r.reps, r.time_us.min, r.time_us.median, r.time_us.max, r.gbps(r.time_us.max), g,
        r.gbps(r.time_us.min), r.mops(r.time_us.median), r.ref_op.c_str(), r.ref_gbps, ratio,
        d2d_gbps_, peer_gbps_, r.bytes_moved(), r.check.c_str());
    // Every repetition's time, ';'-separated, so that runs can be merged (merge.py).
    for (size_t i = 0; i < r.samples_us.size(); ++i)
      std::fprintf(f, "%s%.4f", i ? ";" : "", r.samples_us[i]);
    std::fprintf(f, "\n");
    std::fclose(f);
  }

  // Rows whose destination check failed (rank 0's count; 0 elsewhere).
  int failures() const { return failures_; }
  void note_failure() { ++failures_; }

 private:
  std::string runtime_;
  const Options& opt_;
  double d2d_gbps_ = 0, peer_gbps_ = 0;
  int failures_ = 0;
};

inline std::string check_text(unsigned long long bad) {
  if (bad == 0) return "ok";
  char buf[48];
  std::snprintf(buf, sizeof buf, "FAIL(%llu bad)", bad);
  return buf;
}

}  // namespace perf
