// The small-message test of tmashmem-perf and perf_nvshmem: raw stores, p, put and
// put_signal (and tmashmem's tile put) inside one persistent kernel, as a rate (many threads)
// and as a latency (one thread, op + quiet per message). Included by perf.cu.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/perf/harness.cuh"
#include "tools/perf/kernels.cuh"

namespace perf {

constexpr size_t kMsgRegion = size_t(64) << 20;  // rate destinations wrap within this

inline int test_msg(const Options& opt, Report& report, int device_sms) {
  using Device = Runtime::Device;
  const std::vector<size_t> sizes = size_list(opt, 8, 4096, 8, 8, "msg");
  const std::vector<int> sms = sm_list(opt, "all", device_sms);
  const int threads = opt.threads, grid_max = *std::max_element(sms.begin(), sms.end());
  const size_t max_threads = size_t(grid_max) * threads;
  const size_t region = std::max(kMsgRegion, max_threads * sizes.back());
  const int me = Runtime::my_pe(), pe = Runtime::n_pes() > 1 ? 1 : me;
  char *src = Runtime::alloc(region + kGuard), *dst = Runtime::alloc(region + kGuard);
  uint64_t* sig = reinterpret_cast<uint64_t*>(Runtime::alloc(max_threads * sizeof(uint64_t)));
  char* peer_dst = Runtime::peer(dst, pe);
  uint64_t* peer_sig = Runtime::peer(sig, pe);
  const Device rt = Runtime::device();
  const uint64_t seed = run_seed();
  if (mpi_rank() == 0) {
    fill_pattern(src, region, seed, nullptr);
    PERF_CUDA(cudaDeviceSynchronize());
  }
  // Laps of the destination a rate kernel cycles through (msg_kernel).
  auto laps_for = [=](int grid, int thr, size_t bytes) {
    return static_cast<long>(std::max<size_t>(1, kMsgRegion / (size_t(grid) * thr * bytes)));
  };
  const long rate_iters_max = opt.iters ? opt.iters : 200, lat_iters = opt.iters ? opt.iters : 1000;
  // Rate (many threads, one quiet at the end) or latency (one thread, op + quiet each).
  // Rate iterations grow until --target bytes move; one issuing thread per CTA (tile_put)
  // sends fewer messages per iteration, so up to 10 x more.
  auto base_case = [&](const std::string& op, bool rate, int thr) {
    Case c;
    c.test = rate ? "msg_rate" : "msg_lat";
    c.op = op;
    c.threads = thr;
    c.grid = rate ? 0 : 1;
    c.hold = !rate;
    c.iters = [=, &opt](int grid, size_t bytes) -> long {
      if (!rate) return lat_iters;
      const long cap = thr == 1 ? 10 * rate_iters_max : rate_iters_max;
      return std::max<long>(
          1, std::min<long>(cap, long(opt.target_bytes / (size_t(grid) * thr * bytes))));
    };
    c.messages = [rate, thr](int grid, size_t) { return rate ? double(grid) * thr : 1.0; };
    return c;
  };
  std::vector<Case> cases[2];  // [0] latency, [1] rate: every rate row comes first
  auto add = [&](const std::string& op, const std::string& ref, bool rate, auto kernel,
                 bool signals) {
    const int thr = rate ? threads : 1;
    Case c = base_case(op, rate, thr);
    c.ref = ref;
    c.applies = [op](size_t bytes) { return (op != "p" && op != "raw_st") || bytes == 8; };
    // Rate kernels cycle through the whole region (no slots).
    c.prepare = [=](cudaStream_t s, size_t, size_t) {
      PERF_CUDA(cudaMemsetAsync(peer_dst, kPoison, region + kGuard, s));
      if (signals) PERF_CUDA(cudaMemsetAsync(peer_sig, 0, max_threads * sizeof(uint64_t), s));
    };
    c.run = [=](cudaStream_t s, int grid, size_t bytes, long iters, size_t) {
      kernel<<<grid, thr, 0, s>>>(rt, dst, peer_dst, src, bytes, sig, laps_for(grid, thr, bytes),
                                  pe, iters);
      PERF_LAUNCHED(op.c_str());
    };
    c.verify = [=](cudaStream_t s, int grid, size_t bytes, long iters, size_t, Checker& ch) {
      const size_t n =
          size_t(grid) * thr * bytes * size_t(std::min(iters, laps_for(grid, thr, bytes)));
      ch.pattern(peer_dst, n, seed, s);
      ch.equal(reinterpret_cast<const unsigned char*>(peer_dst + n), kGuard, kPoison, s);
      if (signals) ch.equal<uint64_t>(peer_sig, size_t(grid) * thr, uint64_t(iters), s);
    };
    cases[rate].push_back(std::move(c));
  };
  for (int rate = 1; rate >= 0; --rate) {
    add("raw_st", "", rate,
        rate ? msg_kernel<Device, MsgOp::RawStore, false>
             : msg_kernel<Device, MsgOp::RawStore, true>,
        false);
    add("p", rate ? "raw_st" : "", rate,
        rate ? msg_kernel<Device, MsgOp::P, false> : msg_kernel<Device, MsgOp::P, true>, false);
    add("put", "", rate,
        rate ? msg_kernel<Device, MsgOp::Put, false> : msg_kernel<Device, MsgOp::Put, true>, false);
    add("put_signal", "", rate,
        rate ? msg_kernel<Device, MsgOp::PutSignal, false>
             : msg_kernel<Device, MsgOp::PutSignal, true>,
        true);
  }
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&error, sizeof(int)));
  PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
  TileViews views;  // tmashmem: source and destination view per tile size
#if PERF_TMASHMEM
  // Tile put: one thread per CTA, CTA c always writing its own tile c (tile_msg_kernel); the
  // tiles of all CTAs move to another slot every repetition. One view per size TMA can move
  // whose rows divide the slot offsets.
  std::vector<size_t> tile_sizes;
  for (size_t s : sizes) {
    const uint32_t inner = static_cast<uint32_t>(std::min<size_t>(s, kTileRowBytes));
    if (!opt.want("tile_put") || s < 16 || s % 16 || s % inner || s / inner > 256 ||
        kSlotAlign % inner)
      continue;
    const size_t span = slot_span({size_t(grid_max) * s});
    if (span > region)
      die("tile_put: " + std::to_string(span) + " bytes of slots exceed the message region");
    tile_sizes.push_back(s);
    for (char* p : {src, dst}) views.emplace_back(p, span, inner, static_cast<uint32_t>(s / inner));
  }
  const size_t tile_smem =
      tile_smem_bytes(static_cast<uint32_t>(tile_sizes.empty() ? 16 : tile_sizes.back()), 1);
  set_smem(reinterpret_cast<const void*>(tile_msg_kernel<true>), tile_smem, "tile msg");
  set_smem(reinterpret_cast<const void*>(tile_msg_kernel<false>), tile_smem, "tile msg");
  const uint64_t timeout_ns = opt.timeout_ns();
  for (int rate = 1; rate >= 0 && !tile_sizes.empty(); --rate) {
    Case c = base_case("tile_put", rate, 1);
    c.messages = [rate](int grid, size_t) { return rate ? double(grid) : 1.0; };
    c.applies = [tile_sizes](size_t b) {
      return std::find(tile_sizes.begin(), tile_sizes.end(), b) != tile_sizes.end();
    };
    c.footprint = [grid_max](size_t bytes) { return size_t(grid_max) * bytes; };
    c.prepare = [=](cudaStream_t s, size_t bytes, size_t o) {
      PERF_CUDA(cudaMemsetAsync(peer_dst + o, kPoison, size_t(grid_max) * bytes + kGuard, s));
    };
    c.run = [=, &views](cudaStream_t s, int grid, size_t bytes, long iters, size_t o) {
      const size_t i =
          2 * size_t(std::find(tile_sizes.begin(), tile_sizes.end(), bytes) - tile_sizes.begin());
      const uint32_t row0 = static_cast<uint32_t>(o / (views[i].handle.box[0] * 4));
      auto kernel = rate ? tile_msg_kernel<false> : tile_msg_kernel<true>;
      kernel<<<grid, 1, tile_smem, s>>>(views[i].handle, views[i + 1].handle, pe, row0, iters,
                                        timeout_ns, error);
      PERF_LAUNCHED("tile_msg_kernel");
    };
    c.verify = [=](cudaStream_t s, int grid, size_t bytes, long, size_t o, Checker& ch) {
      // The source was filled once from its start: these words sit o / 4 words in.
      ch.pattern(peer_dst + o, size_t(grid) * bytes, seed, s, o / 4);
      ch.equal(reinterpret_cast<const unsigned char*>(peer_dst + o + size_t(grid) * bytes), kGuard,
               kPoison, s);
    };
    check_error_word(c, error, opt.timeout_s);
    cases[rate].push_back(std::move(c));
  }
#endif
  cases[1].insert(cases[1].end(), cases[0].begin(), cases[0].end());
  char title[192];
  std::snprintf(title, sizeof title,
                "msg: PE %d -> PE %d, one persistent kernel; rate: SMs x %d threads (tile_put: 1 "
                "thread/CTA); latency (msg_lat): 1 thread, op + quiet per message",
                me, pe, threads);
  return end_test(run_cases(opt, report, cases[1], sizes, sms, nullptr, title), error, views,
                  {sig, dst, src});
}

}  // namespace perf
