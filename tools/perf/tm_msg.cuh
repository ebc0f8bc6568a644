// tmashmem-perf's small-message test: p, put, put_signal and tile put inside one
// persistent kernel, as a rate (many threads) and as a latency (one thread, op + quiet).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "tools/perf/msg_kernels.cuh"
#include "tools/perf/perf_driver.cuh"
#include "tools/perf/tile_kernels.cuh"
#include "tools/perf/tm_common.cuh"

namespace perf_tm {

using namespace perf;

// ---- small messages ---------------------------------------------------------------------

inline int test_msg(const Options& opt, Report& report, int device_sms) {
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
  const int me = tmashmem_my_pe();
  const int pe = tmashmem_n_pes() > 1 ? 1 : me;
  char* src = sym_alloc(region + kGuard);
  char* dst = sym_alloc(region + kGuard);
  uint64_t* sig = reinterpret_cast<uint64_t*>(sym_alloc(max_threads * sizeof(uint64_t)));
  // One tile view per message size that TMA can move (16-byte rows at least).
  std::vector<size_t> tile_sizes;
  std::vector<TileView> src_views, dst_views;
  const int tile_grid_max = *std::max_element(sms.begin(), sms.end());
  if (opt.want("tile_put")) {
    for (size_t s : sizes) {
      const uint32_t inner = static_cast<uint32_t>(std::min<size_t>(s, kTileRowBytes));
      // A tile row must divide the slot offsets (multiples of kSlotAlign), so rows of a
      // size that is not a power of two below 1 KiB are left out.
      if (s < 16 || s % 16 || s % inner || s / inner > 256 || kSlotAlign % inner) continue;
      // Repetitions rotate over slots: the views cover every slot.
      const size_t span = slot_span(size_t(tile_grid_max) * s);
      if (span > region)
        die("tile_put: " + std::to_string(span) + " bytes of slots exceed the " +
            std::to_string(region) + "-byte message region");
      tile_sizes.push_back(s);
      src_views.push_back(make_view(src, span, inner, static_cast<uint32_t>(s / inner)));
      dst_views.push_back(make_view(dst, span, inner, static_cast<uint32_t>(s / inner)));
    }
  }
  const tmashmem_ctx_t ctx = device_ctx();
  char* peer_dst = peer_ptr(dst, pe);
  uint64_t* peer_sig = peer_ptr(sig, pe);
  const uint64_t seed = run_seed();
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&error, sizeof(int)));
  PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
  if (mpi_rank() == 0) {
    fill_pattern(src, region, seed, nullptr);
    PERF_CUDA(cudaDeviceSynchronize());
  }
  const size_t tile_smem = perf_tm::tile_smem_bytes(
      static_cast<uint32_t>(tile_sizes.empty() ? 16 : tile_sizes.back()), 1);
  set_smem(reinterpret_cast<const void*>(perf_tm::tile_msg_kernel<true>), tile_smem, "tile msg");
  set_smem(reinterpret_cast<const void*>(perf_tm::tile_msg_kernel<false>), tile_smem, "tile msg");
  const uint64_t timeout_ns = opt.timeout_ns();

  // Laps of the destination a rate kernel cycles through (see msg_kernel).
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
  using perf_tm::MsgOp;
  auto msg = [&](auto op_tag, auto quiet_tag) {
    constexpr MsgOp kOp = decltype(op_tag)::value;
    constexpr bool kQuiet = decltype(quiet_tag)::value;
    return [=](cudaStream_t s, int grid, int thr, size_t bytes, long laps, long iters) {
      perf_tm::msg_kernel<kOp, kQuiet>
          <<<grid, thr, 0, s>>>(ctx, dst, peer_dst, src, bytes, sig, laps, pe, iters);
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
  const size_t n_rate = cases.size();
  add("raw_st", "", false, msg(RawT{}, Lat{}), false);
  add("p", "", false, msg(PT{}, Lat{}), false);
  add("put", "", false, msg(PutT{}, Lat{}), false);
  add("put_signal", "", false, msg(PutSigT{}, Lat{}), true);

  // Tile put: one thread per CTA; its own tile (see tile_msg_kernel). The tiles of all
  // CTAs (at most tile_grid_max x bytes) move to another slot every repetition.
  auto tile_case = [&](bool rate) {
    Case c;
    c.op = "tile_put";
    c.uses_sms = rate;
    c.threads = 1;
    c.messages = [rate](int grid, size_t) { return rate ? double(grid) : 1.0; };
    c.applies = [&tile_sizes](size_t bytes) {
      return std::find(tile_sizes.begin(), tile_sizes.end(), bytes) != tile_sizes.end();
    };
    c.footprint = [tile_grid_max](size_t bytes) { return size_t(tile_grid_max) * bytes; };
    c.prepare = [=](cudaStream_t s, size_t bytes, size_t o) {
      PERF_CUDA(cudaMemsetAsync(peer_dst + o, kPoison, size_t(tile_grid_max) * bytes + kGuard, s));
    };
    c.run = [=, &tile_sizes, &src_views, &dst_views](cudaStream_t s, int grid, size_t bytes,
                                                     long iters, size_t o) {
      const size_t i = static_cast<size_t>(std::find(tile_sizes.begin(), tile_sizes.end(), bytes) -
                                           tile_sizes.begin());
      if (i == tile_sizes.size()) die("tile_put: no view for this size");
      const uint32_t row0 = static_cast<uint32_t>(o / (src_views[i].handle.box[0] * 4));
      if (rate)
        perf_tm::tile_msg_kernel<false><<<grid, 1, tile_smem, s>>>(
            src_views[i].handle, dst_views[i].handle, pe, row0, iters, timeout_ns, error);
      else
        perf_tm::tile_msg_kernel<true><<<grid, 1, tile_smem, s>>>(
            src_views[i].handle, dst_views[i].handle, pe, row0, iters, timeout_ns, error);
      PERF_LAUNCHED("tile_msg_kernel");
    };
    c.verify = [=, &opt](cudaStream_t s, int grid, size_t bytes, long, size_t o, Checker& ch) {
      // The source was filled once from its start: these words sit o / 4 words in.
      ch.pattern(peer_dst + o, size_t(grid) * bytes, seed, s, o / 4);
      ch.bytes_equal(peer_dst + o + size_t(grid) * bytes, kGuard, kPoison, s);
      int e = 0;
      sync_stream(s, opt.timeout_s, "tile_put");
      PERF_CUDA(cudaMemcpy(&e, error, sizeof(int), cudaMemcpyDeviceToHost));
      if (e) {
        ch.add_host(1);
        PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
      }
    };
    return c;
  };
  if (!tile_sizes.empty()) {
    cases.insert(cases.begin() + static_cast<long>(n_rate), tile_case(true));
    cases.push_back(tile_case(false));
  }

  const long rate_iters_max = opt.iters ? opt.iters : 200;
  const long lat_iters = opt.iters ? opt.iters : 1000;
  auto iters_for = [&](const Case& c, int grid, size_t bytes) -> long {
    if (!c.uses_sms) return lat_iters;
    const size_t per_iter = size_t(grid) * size_t(c.threads) * bytes;
    // One issuing thread per CTA (tile_put) sends fewer messages per iteration: more of them.
    const long cap = c.threads == 1 ? 10 * rate_iters_max : rate_iters_max;
    return std::max<long>(1, std::min<long>(cap, static_cast<long>(opt.target_bytes / per_iter)));
  };
  // Rate rows (test msg_rate) and latency rows (test msg_lat) come from one table.
  for (Case& c : cases) c.test = c.uses_sms ? "msg_rate" : "msg_lat";
  char title[160];
  std::snprintf(title, sizeof title,
                "msg: PE %d -> PE %d, one persistent kernel; rate: SMs x %d threads (tile_put: 1 "
                "thread/CTA); latency (msg_lat): 1 thread, op + quiet per message",
                me, pe, threads);
  const int failures = run_messages(opt, report, cases, sizes, sms, iters_for, title);

  PERF_CUDA(cudaDeviceSynchronize());
  PERF_CUDA(cudaFree(error));
  for (size_t i = 0; i < src_views.size(); ++i) {
    tm_check(tmashmem_tensor_destroy(src_views[i].tensor), "tmashmem_tensor_destroy");
    tm_check(tmashmem_tensor_destroy(dst_views[i].tensor), "tmashmem_tensor_destroy");
  }
  tm_check(tmashmem_free(sig), "tmashmem_free");
  tm_check(tmashmem_free(dst), "tmashmem_free");
  tm_check(tmashmem_free(src), "tmashmem_free");
  return failures;
}

}  // namespace perf_tm
