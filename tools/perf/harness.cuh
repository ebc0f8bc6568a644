// The benchmark harness, layer 3 of 3 (on harness_cuda.cuh and harness_options.h): the loops
// that time a Case (destination checked after every repetition) or a StampCase (checked once
// after its repetitions) and report it.
// The why of buffer slots: docs/perf-method.md, "Do two runs agree?".
#pragma once

#include <functional>
#include <map>
#include <set>

#include "tools/perf/harness_cuda.cuh"

namespace perf {

// Where repetition r of a case puts its data: one of kSlots placements in other 2 MiB pages
// and at other offsets (docs/perf-method.md, "Do two runs agree?"); footprints above kSlotMaxBytes
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
