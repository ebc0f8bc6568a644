// perf_nvshmem: NVSHMEM measured with the same tests, loops, checks, table and CSV
// columns as tmashmem-perf (runtime column "nvshmem"), so that plot.py can join the
// two. Built only when TMASHMEM_NVSHMEM_HOME names an NVSHMEM install; initialised
// with NVSHMEM's unique-id bootstrap, the id broadcast over MPI.
//
//   mpirun -np 2 perf_nvshmem bw|msg|pingpong|barrier|ceiling|all [options]
//
// Environment: NVSHMEM_SYMMETRIC_SIZE must hold the buffers (run-perf.sh sets it).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "tools/perf/nvshmem/nvshmem_kernels.cuh"
#include "tools/perf/perf_common.h"
#include "tools/perf/perf_cuda.cuh"
#include "tools/perf/perf_driver.cuh"

using namespace perf;

namespace {

constexpr size_t kGuard = 4096;
constexpr size_t kMsgRegion = size_t(64) << 20;

char* sym_alloc(size_t bytes) {
  void* p = nvshmem_malloc(bytes);
  if (!p)
    die("nvshmem_malloc(" + std::to_string(bytes) +
        ") failed: raise NVSHMEM_SYMMETRIC_SIZE (run-perf.sh sets it)");
  return static_cast<char*>(p);
}

template <class T>
T* peer_ptr(T* p, int pe) {
  void* q = nvshmem_ptr(p, pe);
  if (!q)
    die("nvshmem_ptr: PE " + std::to_string(pe) +
        " is not reachable by load/store; the copy-engine references and the checks need it");
  return static_cast<T*>(q);
}

void collective_launch(const void* kernel, int ctas, int threads, void** args, cudaStream_t s) {
  const int st = nvshmemx_collective_launch(kernel, dim3(ctas), dim3(threads), args, 0, s);
  if (st != 0) die("nvshmemx_collective_launch failed with status " + std::to_string(st));
}

int test_ceiling(const Options& opt, Report& report) {
  report.table_header("ceiling (256 MiB copies, rank 0)");
  const size_t bytes = size_t(256) << 20;
  auto row = [&](const char* op, double gbps) {
    Row r;
    r.test = "ceiling";
    r.op = op;
    r.pes = mpi_size();
    r.bytes = bytes;
    r.iters = 4;
    r.reps = opt.reps;
    const double us = static_cast<double>(bytes) / (gbps * 1e3);
    r.time_us = {us, us, us};
    r.check = "ok";
    report.add(r);
  };
  row("memcpy_d2d", report.ceiling_d2d());
  if (report.ceiling_peer() > 0) row("memcpy_peer", report.ceiling_peer());
  return 0;
}

int test_bw(const Options& opt, Report& report, int device_sms) {
  const std::vector<size_t> sizes = size_list(opt.min_bytes ? opt.min_bytes : 16 * 1024,
                                              opt.max_bytes ? opt.max_bytes : size_t(256) << 20,
                                              opt.step_factor ? opt.step_factor : 4);
  for (size_t s : sizes)
    if (s == 0 || s % 16) die("bw sizes must be multiples of 16 bytes; got " + std::to_string(s));
  if (sizes.empty()) die("bw: no sizes between -b and -e");
  std::vector<int> sms;
  if (!sm_list(opt.sms.empty() ? "16,all" : opt.sms, device_sms, &sms))
    die("bad SM list '" + opt.sms + "' (1.." + std::to_string(device_sms) + " or all)");
  const int me = nvshmem_my_pe();
  const int pe = nvshmem_n_pes() > 1 ? 1 : me;
  // Every size's every slot (perf_driver.cuh) fits.
  char* src = sym_alloc(slot_span(sizes) + kGuard);
  char* dst = sym_alloc(slot_span(sizes) + kGuard);
  char* peer_src = peer_ptr(src, pe);
  char* peer_dst = peer_ptr(dst, pe);
  const uint64_t seed0 = run_seed();
  uint64_t seed = seed0;
  const int threads = opt.threads;

  std::vector<Case> cases;
  auto add = [&](const std::string& op, const std::string& ref, bool uses_sms, bool is_put,
                 std::function<void(cudaStream_t, int, size_t, long, size_t)> run) {
    Case c;
    c.op = op;
    c.ref = ref;
    c.uses_sms = uses_sms;
    c.threads = uses_sms ? threads : 0;
    c.footprint = [](size_t bytes) { return bytes; };
    c.run = std::move(run);
    // Put: local src -> PE pe's dst; get: PE pe's src -> local dst. Every buffer is used
    // at the repetition's slot offset (the runs' `o`).
    use_destination(c, is_put ? peer_dst : dst, &seed, kGuard);
    if (!uses_sms) c.max_iters = 200;
    cases.push_back(std::move(c));
  };
  add("memcpy_put", "", false, true, [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
    for (long i = 0; i < iters; ++i)
      PERF_CUDA(cudaMemcpyAsync(peer_dst + o, src + o, bytes, cudaMemcpyDeviceToDevice, s));
  });
  add("memcpy_get", "", false, false, [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
    for (long i = 0; i < iters; ++i)
      PERF_CUDA(cudaMemcpyAsync(dst + o, peer_src + o, bytes, cudaMemcpyDeviceToDevice, s));
  });
  add("smcopy_put", "memcpy_put", true, true,
      [=](cudaStream_t s, int ctas, size_t bytes, long it, size_t o) {
        sm_copy_kernel<<<ctas, threads, 0, s>>>(peer_dst + o, src + o, bytes, it);
        PERF_LAUNCHED("sm_copy_kernel");
      });
  add("smcopy_get", "memcpy_get", true, false,
      [=](cudaStream_t s, int ctas, size_t bytes, long it, size_t o) {
        sm_copy_kernel<<<ctas, threads, 0, s>>>(dst + o, peer_src + o, bytes, it);
        PERF_LAUNCHED("sm_copy_kernel");
      });
  add("block_put", "memcpy_put", true, true,
      [=](cudaStream_t s, int ctas, size_t bytes, long it, size_t o) {
        perf_nv::block_put_kernel<<<ctas, threads, 0, s>>>(dst + o, src + o, bytes, pe, it);
        PERF_LAUNCHED("nvshmemx_putmem_block kernel");
      });
  add("block_get", "memcpy_get", true, false,
      [=](cudaStream_t s, int ctas, size_t bytes, long it, size_t o) {
        perf_nv::block_get_kernel<<<ctas, threads, 0, s>>>(dst + o, src + o, bytes, pe, it);
        PERF_LAUNCHED("nvshmemx_getmem_block kernel");
      });
  add("nbi_put", "memcpy_put", true, true,
      [=](cudaStream_t s, int ctas, size_t bytes, long it, size_t o) {
        perf_nv::nbi_put_kernel<<<ctas, threads, 0, s>>>(dst + o, src + o, bytes, pe, it);
        PERF_LAUNCHED("nvshmemx_putmem_nbi_block kernel");
      });
  add("nbi_get", "memcpy_get", true, false,
      [=](cudaStream_t s, int ctas, size_t bytes, long it, size_t o) {
        perf_nv::nbi_get_kernel<<<ctas, threads, 0, s>>>(dst + o, src + o, bytes, pe, it);
        PERF_LAUNCHED("nvshmemx_getmem_nbi_block kernel");
      });
  auto fill = [&](cudaStream_t s, size_t bytes, size_t o) {
    seed = seed0 ^ (bytes * 0x9E3779B97F4A7C15ull);
    fill_pattern(src + o, bytes, seed, s);
    if (peer_src != src) fill_pattern(peer_src + o, bytes, seed, s);
  };
  char title[128];
  std::snprintf(title, sizeof title, "bw: PE %d %s PE %d's heap, %d threads/CTA", me,
                pe == me ? "<->" : "->", pe, threads);
  const int failures = run_bandwidth(opt, report, cases, sizes, sms, fill, title);
  PERF_CUDA(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  nvshmem_free(dst);
  nvshmem_free(src);
  return failures;
}

int test_msg(const Options& opt, Report& report, int device_sms) {
  const std::vector<size_t> sizes =
      size_list(opt.min_bytes ? opt.min_bytes : 8, opt.max_bytes ? opt.max_bytes : 4096,
                opt.step_factor ? opt.step_factor : 8);
  for (size_t s : sizes)
    if (s == 0 || s % 8) die("msg sizes must be multiples of 8 bytes; got " + std::to_string(s));
  if (sizes.empty()) die("msg: no sizes between -b and -e");
  std::vector<int> sms;
  if (!sm_list(opt.sms.empty() ? "all" : opt.sms, device_sms, &sms))
    die("bad SM list '" + opt.sms + "'");
  const int threads = opt.threads;
  const size_t max_threads = size_t(*std::max_element(sms.begin(), sms.end())) * threads;
  const size_t region = std::max(kMsgRegion, max_threads * sizes.back());
  const int me = nvshmem_my_pe();
  const int pe = nvshmem_n_pes() > 1 ? 1 : me;
  char* src = sym_alloc(region + kGuard);
  char* dst = sym_alloc(region + kGuard);
  uint64_t* sig = reinterpret_cast<uint64_t*>(sym_alloc(max_threads * sizeof(uint64_t)));
  char* peer_dst = peer_ptr(dst, pe);
  uint64_t* peer_sig = peer_ptr(sig, pe);
  const uint64_t seed = run_seed();
  if (mpi_rank() == 0) {
    fill_pattern(src, region, seed, nullptr);
    PERF_CUDA(cudaDeviceSynchronize());
  }
  auto laps_for = [&](int grid, int thr, size_t bytes) {
    const size_t t = size_t(grid) * thr;
    return static_cast<long>(std::max<size_t>(1, kMsgRegion / (t * bytes)));
  };
  auto covered = [&](int grid, int thr, size_t bytes, long iters) {
    return size_t(grid) * thr * bytes * size_t(std::min(iters, laps_for(grid, thr, bytes)));
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& op, const std::string& ref, bool rate, auto launch,
                 bool signals) {
    Case c;
    c.test = rate ? "msg_rate" : "msg_lat";
    c.op = op;
    c.ref = ref;
    c.uses_sms = rate;
    c.threads = rate ? threads : 1;
    c.messages = [rate, threads](int grid, size_t) { return rate ? double(grid) * threads : 1.0; };
    c.applies = [op](size_t bytes) { return (op != "p" && op != "raw_st") || bytes == 8; };
    // Rate kernels cycle through the whole region (no slots; see msg_kernel).
    c.prepare = [=](cudaStream_t s, size_t, size_t) {
      PERF_CUDA(cudaMemsetAsync(peer_dst, kPoison, region + kGuard, s));
      if (signals) PERF_CUDA(cudaMemsetAsync(peer_sig, 0, max_threads * sizeof(uint64_t), s));
    };
    c.run = [=](cudaStream_t s, int grid, size_t bytes, long iters, size_t) {
      const int thr = rate ? threads : 1;
      launch(s, grid, thr, bytes, laps_for(grid, thr, bytes), iters);
      PERF_LAUNCHED(op.c_str());
    };
    c.verify = [=](cudaStream_t s, int grid, size_t bytes, long iters, size_t, Checker& ch) {
      const int thr = rate ? threads : 1;
      const size_t n = covered(grid, thr, bytes, iters);
      ch.pattern(peer_dst, n, seed, s);
      ch.bytes_equal(peer_dst + n, kGuard, kPoison, s);
      if (signals) ch.u64_equal(peer_sig, size_t(grid) * thr, uint64_t(iters), s);
    };
    cases.push_back(std::move(c));
  };
  using perf_nv::MsgOp;
  auto msg = [&](auto op_tag, auto quiet_tag) {
    constexpr MsgOp kOp = decltype(op_tag)::value;
    constexpr bool kQuiet = decltype(quiet_tag)::value;
    return [=](cudaStream_t s, int grid, int thr, size_t bytes, long laps, long iters) {
      perf_nv::msg_kernel<kOp, kQuiet>
          <<<grid, thr, 0, s>>>(dst, peer_dst, src, bytes, sig, laps, pe, iters);
    };
  };
  using RawT = std::integral_constant<MsgOp, MsgOp::RawStore>;
  using PT = std::integral_constant<MsgOp, MsgOp::P>;
  using PutT = std::integral_constant<MsgOp, MsgOp::Put>;
  using PutSigT = std::integral_constant<MsgOp, MsgOp::PutSignal>;
  using Rate = std::false_type;
  using Lat = std::true_type;
  add("raw_st", "", true, msg(RawT{}, Rate{}), false);
  add("p", "raw_st", true, msg(PT{}, Rate{}), false);
  add("put", "", true, msg(PutT{}, Rate{}), false);
  add("put_signal", "", true, msg(PutSigT{}, Rate{}), true);
  add("raw_st", "", false, msg(RawT{}, Lat{}), false);
  add("p", "", false, msg(PT{}, Lat{}), false);
  add("put", "", false, msg(PutT{}, Lat{}), false);
  add("put_signal", "", false, msg(PutSigT{}, Lat{}), true);

  const long rate_iters_max = opt.iters ? opt.iters : 200;
  const long lat_iters = opt.iters ? opt.iters : 1000;
  auto iters_for = [&](const Case& c, int grid, size_t bytes) -> long {
    if (!c.uses_sms) return lat_iters;
    const size_t per_iter = size_t(grid) * size_t(c.threads) * bytes;
    return std::max<long>(
        1, std::min<long>(rate_iters_max, static_cast<long>(opt.target_bytes / per_iter)));
  };
  char title[160];
  std::snprintf(title, sizeof title,
                "msg: PE %d -> PE %d, one persistent kernel; rate: SMs x %d threads; latency "
                "(msg_lat): 1 thread, op + quiet per message",
                me, pe, threads);
  const int failures = run_messages(opt, report, cases, sizes, sms, iters_for, title);
  PERF_CUDA(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  nvshmem_free(sig);
  nvshmem_free(dst);
  nvshmem_free(src);
  return failures;
}

int test_pingpong(const Options& opt, Report& report) {
  if (nvshmem_n_pes() < 2) {
    if (mpi_rank() == 0) std::printf("# pingpong needs 2 PEs or more; skipped\n");
    return 0;
  }
  const std::vector<size_t> sizes =
      size_list(opt.min_bytes ? opt.min_bytes : 8, opt.max_bytes ? opt.max_bytes : size_t(1) << 20,
                opt.step_factor ? opt.step_factor : 8);
  for (size_t s : sizes)
    if (s == 0 || s % 8) die("pingpong sizes must be multiples of 8 bytes");
  if (sizes.empty()) die("pingpong: no sizes between -b and -e");
  const int me = nvshmem_my_pe();
  char* buf = sym_alloc(sizes.back());
  char* src = sym_alloc(sizes.back());
  uint64_t* flags = reinterpret_cast<uint64_t*>(sym_alloc(kPingFlagBytes));
  PERF_CUDA(cudaMemset(flags, 0, kPingFlagBytes));
  PERF_CUDA(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  const int peer = me == 0 ? 1 : 0;
  const int initiator = me == 0;

  std::vector<StampCase> cases;
  auto values = [](long warmup, long iters) { return uint64_t(warmup + iters); };
  auto make = [&](const std::string& op, size_t bytes, int threads, PingOp ping) {
    StampCase c;
    c.op = op;
    c.bytes = bytes;
    c.threads = threads;
    c.participates = me < 2;
    c.values = values;
    const void* kernel =
        ping == PingOp::Signal
            ? reinterpret_cast<const void*>(perf_nv::pingpong_kernel<PingOp::Signal>)
        : ping == PingOp::PutSignalThread
            ? reinterpret_cast<const void*>(perf_nv::pingpong_kernel<PingOp::PutSignalThread>)
            : reinterpret_cast<const void*>(perf_nv::pingpong_kernel<PingOp::PutSignalBlock>);
    c.run = [=](cudaStream_t s, int rep, long warmup, long iters, uint64_t base, uint64_t* stamps,
                int* error) {
      char* b = buf;
      char* sr = src;
      size_t n = bytes;
      uint64_t* f = ping_flag(flags, rep);
      uint64_t bs = base;
      long w = warmup, it = iters;
      int p = peer, ini = initiator;
      void* args[] = {&b, &sr, &n, &f, &bs, &w, &it, &p, &ini, &stamps, &error};
      collective_launch(kernel, 1, threads, args, s);
    };
    return c;
  };
  cases.push_back(make("signal", 8, 1, PingOp::Signal));
  cases.push_back(make("put_signal_thread", 8, 1, PingOp::PutSignalThread));
  for (size_t bytes : sizes)
    cases.push_back(make("put_signal", bytes, opt.threads, PingOp::PutSignalBlock));
  report.table_header(
      "pingpong: PE 0 <-> PE 1, one kernel each, time per round trip "
      "(signal: nvshmemx_signal_op; put_signal_thread: nvshmem_putmem_signal from one "
      "thread; put_signal: nvshmemx_putmem_signal_block; each + nvshmem_signal_wait_until)");
  uint64_t base = 0;
  const long iters = opt.iters ? opt.iters : 1000;
  const long warmup = opt.warmup ? opt.warmup : 100;
  const int failures = run_stamped(opt, report, "pingpong", cases, iters, warmup, &base);
  nvshmem_barrier_all();
  nvshmem_free(flags);
  nvshmem_free(src);
  nvshmem_free(buf);
  return failures;
}

int test_barrier(const Options& opt, Report& report) {
  const int n = nvshmem_n_pes();
  uint64_t* marks = reinterpret_cast<uint64_t*>(sym_alloc(sizeof(uint64_t) * size_t(n)));
  PERF_CUDA(cudaMemset(marks, 0, sizeof(uint64_t) * size_t(n)));
  PERF_CUDA(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  const int threads = 32;
  const long iters = opt.iters ? opt.iters : 1000;
  int* verify_error = nullptr;
  PERF_CUDA(cudaMalloc(&verify_error, sizeof(int)));
  uint64_t* verify_stamps = nullptr;
  PERF_CUDA(cudaMalloc(&verify_stamps, sizeof(uint64_t) * stamp_words(iters)));
  auto launch = [=](const void* kernel, cudaStream_t s, uint64_t base, long warmup, long n_iters,
                    uint64_t* stamps, int* error) {
    uint64_t* m = marks;
    uint64_t b = base;
    long w = warmup, it = n_iters;
    void* args[] = {&m, &b, &w, &it, &stamps, &error};
    collective_launch(kernel, 1, threads, args, s);
  };
  // NVSHMEM's device barriers are per thread group: one CTA per PE (block scope).
  std::vector<StampCase> cases;
  for (int sync_only = 0; sync_only < 2; ++sync_only) {
    StampCase c;
    c.op = sync_only ? "sync_all" : "barrier_all";
    c.ctas = 1;
    c.threads = threads;
    c.values = [](long warmup, long it) { return uint64_t(warmup + it); };
    const void* timed = sync_only
                            ? reinterpret_cast<const void*>(perf_nv::barrier_kernel<false, true>)
                            : reinterpret_cast<const void*>(perf_nv::barrier_kernel<false, false>);
    const void* checked = sync_only
                              ? reinterpret_cast<const void*>(perf_nv::barrier_kernel<true, true>)
                              : reinterpret_cast<const void*>(perf_nv::barrier_kernel<true, false>);
    c.run = [=](cudaStream_t s, int /*rep*/, long warmup, long it, uint64_t base, uint64_t* stamps,
                int* error) { launch(timed, s, base, warmup, it, stamps, error); };
    c.verify = [=, &opt](cudaStream_t s, uint64_t base) -> unsigned long long {
      PERF_CUDA(cudaMemsetAsync(verify_error, 0, sizeof(int), s));
      launch(checked, s, base, 0, iters, verify_stamps, verify_error);
      sync_stream(s, opt.timeout_s + 5, "barrier check");
      int e = 0;
      PERF_CUDA(cudaMemcpy(&e, verify_error, sizeof(int), cudaMemcpyDeviceToHost));
      if (e && mpi_rank() == 0) std::fprintf(stderr, "barrier check: error %d\n", e);
      return e ? 1 : 0;
    };
    cases.push_back(c);
  }
  report.table_header(
      "barrier: every PE, back-to-back nvshmemx_{barrier,sync}_all_block in one "
      "kernel, 1 CTA x " +
      std::to_string(threads) + " threads, time per barrier");
  uint64_t base = 0;
  const long warmup = opt.warmup ? opt.warmup : 100;
  const int failures = run_stamped(opt, report, "barrier", cases, iters, warmup, &base);
  PERF_CUDA(cudaFree(verify_error));
  PERF_CUDA(cudaFree(verify_stamps));
  nvshmem_barrier_all();
  nvshmem_free(marks);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options opt;
  if (!parse_options(argc, argv, &opt)) {
    MPI_Finalize();
    return 2;
  }
  if (opt.help) {
    if (mpi_rank() == 0) print_usage(argv[0]);
    MPI_Finalize();
    return 0;
  }
  select_device("nvshmem");
  const PlacementShift shift;  // before init: the heap's physical pages differ per launch
  const int rank = mpi_rank(), size = mpi_size();
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0 && nvshmemx_get_uniqueid(&id) != 0) die("nvshmemx_get_uniqueid failed");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr) != 0)
    die("nvshmemx_set_attr_uniqueid_args failed");
  if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) die("nvshmemx_init_attr failed");
  if (nvshmem_my_pe() != rank || nvshmem_n_pes() != size)
    die("NVSHMEM PE numbering differs from the MPI ranks");
  const int device_sms = device_sm_count();
  Report report("nvshmem", opt);
  const Ceilings ceil = measure_ceilings(size_t(256) << 20, opt.reps, opt.timeout_s);
  report.set_ceiling(ceil.d2d_gbps, ceil.peer_gbps);
  shift.print();

  int failures = 0;
  const bool all = opt.test == "all";
  const bool known = all || opt.test == "ceiling" || opt.test == "bw" || opt.test == "msg" ||
                     opt.test == "pingpong" || opt.test == "barrier";
  if (all || opt.test == "ceiling") failures += test_ceiling(opt, report);
  if (all || opt.test == "bw") failures += test_bw(opt, report, device_sms);
  if (all || opt.test == "msg") failures += test_msg(opt, report, device_sms);
  if (all || opt.test == "pingpong") failures += test_pingpong(opt, report);
  if (all || opt.test == "barrier") failures += test_barrier(opt, report);
  if (!known && rank == 0)
    std::fprintf(stderr, "perf_nvshmem: unknown test '%s' (see --help)\n", opt.test.c_str());

  nvshmem_finalize();
  int any = failures || !known;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("\n# perf_nvshmem %s: %s\n", opt.test.c_str(),
                any ? "FAILED (see FAIL rows or messages above)" : "all destinations checked OK");
  MPI_Finalize();
  return any ? 1 : 0;
}
