// The measurement loops shared by tmashmem-perf and the NVSHMEM baseline. A program
// describes each operation as a Case (how to prepare the destination, run the timed
// work, and check the destination); the loops here time it, check it after every
// timed repetition, and report it. Only the kernels differ between the programs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tools/perf/perf_common.h"
#include "tools/perf/perf_cuda.cuh"

namespace perf {

// Where repetition r of a case puts its data. Where a buffer lands in the L2 (and in
// which physical pages) moves an L2-resident copy by up to ~10% and the tile message
// rate by up to ~30% on an H200; a run that used one address for every repetition
// reported a spread narrower than the difference between two runs. Rotating over
// kSlots placements, each in other 2 MiB pages and at another offset inside its page,
// puts that variation inside the reported spread. Footprints above kSlotMaxBytes
// (DRAM-bound, and two runs agree there) stay at offset 0. Offsets are multiples of
// kSlotAlign.
constexpr int kSlots = 4;
constexpr size_t kSlotMaxBytes = size_t(16) << 20;
constexpr size_t kSlotAlign = 4096;
inline size_t slot_stride(size_t footprint) {
  constexpr size_t kPage = size_t(2) << 20, kSlack = 64 * 1024, kShift = 17 * kSlotAlign;  // 68 KiB
  return (footprint + kSlack + kPage - 1) / kPage * kPage + kShift;
}
inline size_t slot_offset(size_t footprint, int rep) {
  return footprint > kSlotMaxBytes ? 0 : size_t(rep % kSlots) * slot_stride(footprint);
}
// Bytes a buffer needs so that every slot of a `footprint`-byte repetition fits.
inline size_t slot_span(size_t footprint) { return slot_offset(footprint, kSlots - 1) + footprint; }
// The same over several footprints (the largest need; not monotonic in the size).
inline size_t slot_span(const std::vector<size_t>& footprints) {
  size_t span = 0;
  for (size_t f : footprints) span = std::max(span, slot_span(f));
  return span;
}

// One operation measured with CUDA events around `run` (bandwidth, message rate,
// single-thread latency). Everything but `run` is outside the timed region. `off` is
// the byte offset of this repetition's placement in every buffer the case touches
// (slot_offset of its footprint; 0 for cases without one).
struct Case {
  std::string test;  // the CSV's test column ("bw" when empty)
  std::string op;
  std::string ref;       // op whose GB/s is the ratio's denominator ("" : none)
  bool uses_sms = true;  // false: independent of the CTA count (copy engine)
  int threads = 0;       // threads per CTA, for the report
  long max_iters = 0;    // 0: no cap beyond the options
  // Bytes one repetition touches in each buffer, guard excluded. Set: repetitions rotate
  // over slot placements (slot_offset); unset: every repetition at offset 0.
  std::function<size_t(size_t bytes)> footprint;
  // Poison the destination (before every repetition).
  std::function<void(cudaStream_t, size_t bytes, size_t off)> prepare;
  // The timed work: `iters` iterations with `ctas` CTAs.
  std::function<void(cudaStream_t, int ctas, size_t bytes, long iters, size_t off)> run;
  // Enqueue checks of the destination into `check` (after every repetition).
  std::function<void(cudaStream_t, int ctas, size_t bytes, long iters, size_t off, Checker&)>
      verify;
  // Messages one iteration stands for (message rate); default 1.
  std::function<double(int ctas, size_t bytes)> messages;
  // Whether the op runs at this size (default: every size).
  std::function<bool(size_t bytes)> applies;

  bool runs_at(size_t bytes) const { return !applies || applies(bytes); }
  size_t offset(size_t bytes, int rep) const {
    return footprint ? slot_offset(footprint(bytes), rep) : 0;
  }
};

// Makes `dst` (this PE's buffer or a peer's mapping of one) a bandwidth case's
// destination: before every repetition its `bytes` and the `guard` bytes after them are
// poisoned, after it they must hold the pattern for *seed (the current size's, read when
// the check is enqueued) and the poison, at the repetition's offset.
inline void use_destination(Case& c, char* dst, const uint64_t* seed, size_t guard) {
  c.prepare = [=](cudaStream_t s, size_t bytes, size_t o) {
    PERF_CUDA(cudaMemsetAsync(dst + o, kPoison, bytes + guard, s));
  };
  c.verify = [=](cudaStream_t s, int, size_t bytes, long, size_t o, Checker& ch) {
    ch.pattern(dst + o, bytes, *seed, s);
    ch.bytes_equal(dst + o + bytes, guard, kPoison, s);
  };
}

struct Measured {
  std::vector<double> samples;  // time per iteration (us), one per repetition, in order
  unsigned long long bad = 0;
};

// Runs `c` once untimed (warm-up iterations), then `reps` timed repetitions of
// `iters` iterations, repetition r at c.offset(bytes, r); the destination is poisoned
// before and checked after each.
inline Measured measure(const Case& c, cudaStream_t stream, int ctas, size_t bytes, long iters,
                        long warmup, int reps, double timeout_s, Checker& check) {
  const std::string what =
      c.op + " (" + std::to_string(bytes) + " B, " + std::to_string(ctas) + " CTAs)";
  if (warmup > 0) {
    if (c.prepare) c.prepare(stream, bytes, 0);
    c.run(stream, ctas, bytes, warmup, 0);
    sync_stream(stream, timeout_s, what + " warm-up");
  }
  EventPair ev;
  // Copy-engine cases enqueue one API call per iteration: hold the stream until all are
  // enqueued, so the events time the copies, not the host (StreamHold).
  std::optional<StreamHold> hold;  // pinned memory only for the cases that use it
  const bool held = !c.uses_sms;
  if (held) hold.emplace();
  std::vector<double> per_iter_us;
  for (int r = 0; r < reps; ++r) {
    const size_t off = c.offset(bytes, r);
    if (c.prepare) c.prepare(stream, bytes, off);
    if (held) hold->hold(stream);
    ev.start(stream);
    c.run(stream, ctas, bytes, iters, off);
    ev.stop(stream);
    if (held) hold->release();
    if (c.verify) c.verify(stream, ctas, bytes, iters, off, check);
    const double ms = ev.elapsed_ms(timeout_s, what);
    if (held && hold->held_out())
      die(what + ": the stream hold gave up before " + std::to_string(iters) +
          " copies were enqueued; lower the copy-engine iteration cap (Case::max_iters)");
    per_iter_us.push_back(ms * 1e3 / static_cast<double>(iters));
  }
  Measured m;
  m.samples = std::move(per_iter_us);
  m.bad = check.take(stream, timeout_s);
  return m;
}

// Bandwidth: every size, every CTA count; copy-engine cases once per size. Rank 0
// measures; the other ranks wait (their memory is the target). `fill_sources` writes
// `bytes` of source at every offset a case uses at that size.
// Returns rank 0's failures on every rank.
inline int run_bandwidth(
    const Options& opt, Report& report, const std::vector<Case>& cases,
    const std::vector<size_t>& sizes, const std::vector<int>& sms,
    const std::function<void(cudaStream_t, size_t bytes, size_t off)>& fill_sources,
    const std::string& title) {
  report.table_header(title);
  if (mpi_rank() == 0) {
    cudaStream_t stream;
    PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Checker check;
    for (size_t bytes : sizes) {
      std::set<size_t> offsets;  // every placement a case at this size reads its source at
      for (const Case& c : cases)
        for (int r = 0; r < kSlots; ++r) offsets.insert(c.offset(bytes, r));
      for (size_t off : offsets) fill_sources(stream, bytes, off);
      std::map<std::string, double> gbps;  // this size's results, for the ratios
      const long base_iters = std::max<long>(
          1, std::min<long>(opt.iters ? opt.iters : 1000,
                            static_cast<long>((opt.target_bytes + bytes - 1) / bytes)));
      auto one = [&](const Case& c, int ctas) {
        long iters = c.max_iters ? std::min(base_iters, c.max_iters) : base_iters;
        const long warmup = opt.warmup ? opt.warmup : std::max<long>(1, iters / 10);
        const Measured m =
            measure(c, stream, ctas, bytes, iters, warmup, opt.reps, opt.timeout_s, check);
        Row row;
        row.test = c.test.empty() ? "bw" : c.test;
        row.op = c.op;
        row.pes = mpi_size();
        row.sms = c.uses_sms ? ctas : 0;
        row.threads = c.uses_sms ? c.threads : 0;
        row.bytes = bytes;
        row.iters = iters;
        row.reps = opt.reps;
        row.set_samples(m.samples);
        row.check = check_text(m.bad);
        const double g = row.gbps(row.time_us.median);
        if (!c.uses_sms) gbps[c.op] = g;
        if (!c.ref.empty() && gbps.count(c.ref)) {
          row.ref_op = c.ref;
          row.ref_gbps = gbps[c.ref];
        }
        report.add(row);
      };
      for (const Case& c : cases)
        if (!c.uses_sms && opt.want(c.op) && c.runs_at(bytes)) one(c, 1);
      for (int ctas : sms)
        for (const Case& c : cases)
          if (c.uses_sms && opt.want(c.op) && c.runs_at(bytes)) one(c, ctas);
    }
    PERF_CUDA(cudaStreamDestroy(stream));
  }
  int failures = report.failures();
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  return failures;
}

// Small messages: each case at each size, `ctas` CTAs (rate, uses_sms) or one
// thread (latency, run once). Rank 0 measures.
inline int run_messages(const Options& opt, Report& report, const std::vector<Case>& cases,
                        const std::vector<size_t>& sizes, const std::vector<int>& sms,
                        const std::function<long(const Case&, int ctas, size_t bytes)>& iters_for,
                        const std::string& title) {
  report.table_header(title);
  if (mpi_rank() == 0) {
    cudaStream_t stream;
    PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Checker check;
    for (int ctas : sms) {
      for (size_t bytes : sizes) {
        std::map<std::string, double> gbps;
        for (const Case& c : cases) {
          if (!opt.want(c.op) || !c.runs_at(bytes)) continue;
          if (!c.uses_sms && ctas != sms.front()) continue;  // one thread: once
          const int grid = c.uses_sms ? ctas : 1;
          const long iters = iters_for(c, grid, bytes);
          const long warmup = opt.warmup ? opt.warmup : std::max<long>(1, iters / 10);
          const Measured m =
              measure(c, stream, grid, bytes, iters, warmup, opt.reps, opt.timeout_s, check);
          Row row;
          row.test = c.test.empty() ? "msg" : c.test;
          row.op = c.op;
          row.pes = mpi_size();
          row.sms = grid;
          row.threads = c.threads;
          row.bytes = bytes;
          row.iters = iters;
          row.reps = opt.reps;
          row.set_samples(m.samples);
          row.messages_per_iter = c.messages ? c.messages(grid, bytes) : 1;
          row.check = check_text(m.bad);
          gbps[c.op] = row.gbps(row.time_us.median);
          if (!c.ref.empty() && gbps.count(c.ref)) {
            row.ref_op = c.ref;
            row.ref_gbps = gbps[c.ref];
          }
          report.add(row);
        }
      }
    }
    PERF_CUDA(cudaStreamDestroy(stream));
  }
  int failures = report.failures();
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  return failures;
}

// An operation timed inside one kernel that runs on several PEs at once (ping-pong,
// barrier): per-iteration stamps, median per iteration.
struct StampCase {
  std::string op;
  size_t bytes = 0;
  int ctas = 1, threads = 1;
  bool participates = true;  // this rank launches a kernel
  // Enqueues repetition `rep` of the kernel: `warmup` untimed then `iters` timed
  // iterations, values starting after `base`; this rank's stamps (stamp_words(iters)) and an
  // error word.
  std::function<void(cudaStream_t, int rep, long warmup, long iters, uint64_t base,
                     uint64_t* stamps, int* error)>
      run;
  // Values one kernel consumes (signals are never reset; each run starts past them).
  std::function<uint64_t(long warmup, long iters)> values;
  // Optional untimed check run after the timed repetitions (`iters` iterations, values
  // after `base`, which is then advanced like a timed run): returns wrong items.
  std::function<unsigned long long(cudaStream_t, uint64_t base)> verify;
};

// Runs each case `reps` times on every participating rank at once; reports rank 0's
// median per iteration (min / median / max over repetitions). `base` is the running
// signal value every rank agrees on; it is advanced past what each run used.
inline int run_stamped(const Options& opt, Report& report, const std::string& test,
                       const std::vector<StampCase>& cases, long iters, long warmup,
                       uint64_t* base) {
  cudaStream_t stream;
  PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint64_t* stamps = nullptr;
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&stamps, sizeof(uint64_t) * stamp_words(iters)));
  PERF_CUDA(cudaMalloc(&error, sizeof(int)));
  std::vector<uint64_t> host(stamp_words(iters));
  int failures = 0;
  for (const StampCase& c : cases) {
    if (!opt.want(c.op)) continue;
    std::vector<double> medians, means;
    std::string placement;  // the SM of each PE's timing thread, per repetition
    bool placed = false;
    int errors = 0;
    for (int r = 0; r < opt.reps; ++r) {
      int err = 0;
      PERF_CUDA(cudaMemsetAsync(error, 0, sizeof(int), stream));
      PERF_CUDA(cudaMemsetAsync(stamps, 0, sizeof(uint64_t) * stamp_words(iters), stream));
      sync_stream(stream, opt.timeout_s, c.op + " setup");
      MPI_Barrier(MPI_COMM_WORLD);  // every kernel starts at about the same time
      if (c.participates) {
        c.run(stream, r, warmup, iters, *base, stamps, error);
        sync_stream(stream, opt.timeout_s + 5, c.op + " kernel");
        PERF_CUDA(cudaMemcpy(&err, error, sizeof(int), cudaMemcpyDeviceToHost));
        PERF_CUDA(cudaMemcpy(host.data(), stamps, sizeof(uint64_t) * host.size(),
                             cudaMemcpyDeviceToHost));
      }
      *base += c.values(warmup, iters);
      int any = 0;
      MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (any) {
        ++errors;
        if (mpi_rank() == 0)
          std::fprintf(stderr, "%s %s: a PE reported error %d in repetition %d\n", test.c_str(),
                       c.op.c_str(), any, r);
        // Timed-out waits leave signals inconsistent; stop this case here.
        break;
      }
      const std::vector<unsigned long long> sms =
          gather_to_root(c.participates ? host[size_t(iters) + 3] : 0);
      if (mpi_rank() == 0) {
        const IterationTimes t = iteration_times(host, iters);
        medians.push_back(t.median_us);
        means.push_back(t.mean_us);
        placement += r ? " " : "";
        for (size_t p = 0; p < sms.size(); ++p) {
          placement += std::string(p ? "/" : "") + (sms[p] ? std::to_string(sms[p] - 1) : "-");
          placed = placed || sms[p] != 0;
        }
      }
    }
    unsigned long long bad = 0;
    if (errors == 0 && c.verify) {
      MPI_Barrier(MPI_COMM_WORLD);
      bad = c.verify(stream, *base);
      *base += c.values(0, iters);
      unsigned long long all = 0;
      MPI_Allreduce(&bad, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      bad = all;
    }
    Row row;
    row.test = test;
    row.op = c.op;
    row.pes = mpi_size();
    row.sms = c.ctas;
    row.threads = c.threads;
    row.bytes = c.bytes;
    row.iters = iters;
    row.reps = static_cast<int>(medians.size());
    row.set_samples(medians);
    row.check = errors ? "FAIL(timeout/data)" : check_text(bad);
    report.add(row);
    if (mpi_rank() == 0 && !means.empty())
      std::printf("  %10s %-16s mean per iteration %.3f us (median over repetitions)\n", "",
                  c.op.c_str(), spread_of(means).median);
    if (mpi_rank() == 0 && placed)
      std::printf("  %10s %-16s SM of PE 0/1/... per repetition: %s\n", "", c.op.c_str(),
                  placement.c_str());
    if (errors || bad) ++failures;
    if (errors) break;  // the signals and barrier counters are no longer consistent
  }
  PERF_CUDA(cudaFree(stamps));
  PERF_CUDA(cudaFree(error));
  PERF_CUDA(cudaStreamDestroy(stream));
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return failures;
}

}  // namespace perf
