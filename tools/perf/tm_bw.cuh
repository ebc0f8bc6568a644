// tmashmem-perf's ceiling and bandwidth tests: PE 0 putting into / getting from PE 1
// (itself with one PE) with every tmashmem path beside the copy engine and a plain SM
// copy, over sizes and SM counts; every destination checked after every repetition.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "tools/perf/bw_kernels.cuh"
#include "tools/perf/perf_driver.cuh"
#include "tools/perf/tile_kernels.cuh"
#include "tools/perf/tm_common.cuh"

namespace perf_tm {

using namespace perf;

// ---- ceiling ----------------------------------------------------------------------------

inline int test_ceiling(const Options& opt, Report& report) {
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

// ---- bandwidth ------------------------------------------------------------------------

inline int test_bw(const Options& opt, Report& report, int device_sms) {
  const std::vector<size_t> sizes = size_list(opt.min_bytes ? opt.min_bytes : 16 * 1024,
                                              opt.max_bytes ? opt.max_bytes : size_t(256) << 20,
                                              opt.step_factor ? opt.step_factor : 4);
  for (size_t s : sizes)
    if (s == 0 || s % 16) die("bw sizes must be multiples of 16 bytes; got " + std::to_string(s));
  if (sizes.empty()) die("bw: no sizes between -b and -e");
  std::vector<int> sms;
  if (!sm_list(opt.sms.empty() ? "16,all" : opt.sms, device_sms, &sms))
    die("bad SM list '" + opt.sms + "' (1.." + std::to_string(device_sms) + " or all)");
  const int me = tmashmem_my_pe();
  const int pe = tmashmem_n_pes() > 1 ? 1 : me;
  // Tile tensors need whole rows; round the buffers up to the tile tensors' extent.
  const uint32_t tile_rows = static_cast<uint32_t>(opt.tile_rows);
  const size_t tile_bytes = size_t(tile_rows) * kTileRowBytes;
  // Every size's every slot (perf_driver.cuh) fits; tile tensors cover the whole span.
  const size_t span = (slot_span(sizes) + tile_bytes - 1) / tile_bytes * tile_bytes;
  char* src = sym_alloc(span + kGuard);
  char* dst = sym_alloc(span + kGuard);
  const tmashmem_ctx_t ctx = device_ctx();
  const bool tiles = opt.want("tile_put") || opt.want("tile_get");
  TileView src_view, dst_view;
  if (tiles) {
    src_view = make_view(src, span, kTileRowBytes, tile_rows);
    dst_view = make_view(dst, span, kTileRowBytes, tile_rows);
  }
  char* peer_src = peer_ptr(src, pe);
  char* peer_dst = peer_ptr(dst, pe);
  const uint64_t seed0 = run_seed();
  uint64_t seed = seed0;
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&error, sizeof(int)));
  PERF_CUDA(cudaMemset(error, 0, sizeof(int)));

  const int threads = opt.threads;
  const uint32_t stage = static_cast<uint32_t>(opt.stage_bytes);
  const int issuers = opt.nbi_threads;
  const size_t nbi_smem = size_t(issuers) * stage;
  set_smem(reinterpret_cast<const void*>(perf_tm::nbi_put_kernel), nbi_smem, "nbi_put");
  set_smem(reinterpret_cast<const void*>(perf_tm::nbi_get_kernel), nbi_smem, "nbi_get");
  const uint32_t tile_stages = static_cast<uint32_t>(opt.tile_stages);
  const size_t tile_smem = perf_tm::tile_smem_bytes(static_cast<uint32_t>(tile_bytes), tile_stages);
  set_smem(reinterpret_cast<const void*>(perf_tm::tile_copy_kernel), tile_smem, "tile copy");
  const uint64_t timeout_ns = opt.timeout_ns();

  auto with_error_check = [&](Case c) {
    auto inner = c.verify;
    c.verify = [inner, error, &opt, name = c.op](cudaStream_t s, int ctas, size_t bytes, long iters,
                                                 size_t o, Checker& ch) {
      inner(s, ctas, bytes, iters, o, ch);
      int e = 0;
      sync_stream(s, opt.timeout_s, name);
      PERF_CUDA(cudaMemcpy(&e, error, sizeof(int), cudaMemcpyDeviceToHost));
      if (e) {
        ch.add_host(1);
        PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
      }
    };
    return c;
  };

  std::vector<Case> cases;
  auto add = [&](const std::string& op, const std::string& ref, bool uses_sms, int thr, bool is_put,
                 std::function<void(cudaStream_t, int, size_t, long, size_t)> run) {
    Case c;
    c.op = op;
    c.ref = ref;
    c.uses_sms = uses_sms;
    c.threads = thr;
    c.footprint = [](size_t bytes) { return bytes; };
    c.run = std::move(run);
    // Put: local src -> PE pe's dst; get: PE pe's src -> local dst. Every buffer is used
    // at the repetition's slot offset (the runs' `o`).
    use_destination(c, is_put ? peer_dst : dst, &seed, kGuard);
    cases.push_back(std::move(c));
  };
  // References: the copy engine through the peer mapping, and tmashmem's on-stream copy.
  add("memcpy_put", "", false, 0, true,
      [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
        for (long i = 0; i < iters; ++i)
          PERF_CUDA(cudaMemcpyAsync(peer_dst + o, src + o, bytes, cudaMemcpyDeviceToDevice, s));
      });
  cases.back().max_iters = 200;
  add("memcpy_get", "", false, 0, false,
      [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
        for (long i = 0; i < iters; ++i)
          PERF_CUDA(cudaMemcpyAsync(dst + o, peer_src + o, bytes, cudaMemcpyDeviceToDevice, s));
      });
  cases.back().max_iters = 200;
  add("on_stream_put", "memcpy_put", false, 0, true,
      [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
        for (long i = 0; i < iters; ++i)
          tm_check(tmashmem_putmem_on_stream(dst + o, src + o, bytes, pe, s),
                   "tmashmem_putmem_on_stream");
      });
  cases.back().max_iters = 200;
  add("on_stream_get", "memcpy_get", false, 0, false,
      [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
        for (long i = 0; i < iters; ++i)
          tm_check(tmashmem_getmem_on_stream(dst + o, src + o, bytes, pe, s),
                   "tmashmem_getmem_on_stream");
      });
  cases.back().max_iters = 200;
  // The plain SM copy: what a hand-written kernel gets through the peer mapping.
  add("smcopy_put", "memcpy_put", true, threads, true,
      [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
        sm_copy_kernel<<<ctas, threads, 0, s>>>(peer_dst + o, src + o, bytes, iters);
        PERF_LAUNCHED("sm_copy_kernel");
      });
  add("smcopy_get", "memcpy_get", true, threads, false,
      [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
        sm_copy_kernel<<<ctas, threads, 0, s>>>(dst + o, peer_src + o, bytes, iters);
        PERF_LAUNCHED("sm_copy_kernel");
      });
  add("block_put", "memcpy_put", true, threads, true,
      [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
        perf_tm::block_put_kernel<<<ctas, threads, 0, s>>>(ctx, dst + o, src + o, bytes, pe, iters);
        PERF_LAUNCHED("block_put_kernel");
      });
  add("block_get", "memcpy_get", true, threads, false,
      [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
        perf_tm::block_get_kernel<<<ctas, threads, 0, s>>>(ctx, dst + o, src + o, bytes, pe, iters);
        PERF_LAUNCHED("block_get_kernel");
      });
  add("nbi_put", "memcpy_put", true, issuers, true,
      [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
        perf_tm::nbi_put_kernel<<<ctas, issuers, nbi_smem, s>>>(ctx, dst + o, src + o, bytes, pe,
                                                                iters, stage);
        PERF_LAUNCHED("nbi_put_kernel");
      });
  add("nbi_get", "memcpy_get", true, issuers, false,
      [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
        perf_tm::nbi_get_kernel<<<ctas, issuers, nbi_smem, s>>>(ctx, dst + o, src + o, bytes, pe,
                                                                iters, stage);
        PERF_LAUNCHED("nbi_get_kernel");
      });
  if (tiles) {
    const tmashmem_tensor_handle_t sv = src_view.handle, dv = dst_view.handle;
    add("tile_put", "memcpy_put", true, 1, true,
        [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
          perf_tm::tile_copy_kernel<<<ctas, 1, tile_smem, s>>>(
              sv, me, dv, pe, static_cast<uint32_t>(o / kTileRowBytes),
              static_cast<uint32_t>(bytes / kTileRowBytes), tile_stages, iters, timeout_ns, error);
          PERF_LAUNCHED("tile_copy_kernel (put)");
        });
    cases.back() = with_error_check(cases.back());
    add("tile_get", "memcpy_get", true, 1, false,
        [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
          perf_tm::tile_copy_kernel<<<ctas, 1, tile_smem, s>>>(
              sv, pe, dv, me, static_cast<uint32_t>(o / kTileRowBytes),
              static_cast<uint32_t>(bytes / kTileRowBytes), tile_stages, iters, timeout_ns, error);
          PERF_LAUNCHED("tile_copy_kernel (get)");
        });
    cases.back() = with_error_check(cases.back());
  }
  // Tile ops move whole tiles: they run at the sizes that are a multiple of the tile.
  for (Case& c : cases)
    if (c.op.rfind("tile_", 0) == 0)
      c.applies = [tile_bytes](size_t bytes) { return bytes % tile_bytes == 0; };
  for (size_t s : sizes)
    if (tiles && s % tile_bytes && mpi_rank() == 0)
      std::printf("# note: %zu B is not a multiple of the %zu B tile: no tile rows at that size\n",
                  s, tile_bytes);

  auto fill = [&](cudaStream_t s, size_t bytes, size_t o) {
    seed = seed0 ^ (bytes * 0x9E3779B97F4A7C15ull);
    fill_pattern(src + o, bytes, seed, s);
    if (peer_src != src) fill_pattern(peer_src + o, bytes, seed, s);
  };
  char title[160];
  std::snprintf(title, sizeof title,
                "bw: PE %d %s PE %d's heap, %d threads/CTA (nbi: %d issuers x %u B stage; tile: "
                "%zu B x %u stages)",
                me, pe == me ? "<->" : "->", pe, threads, issuers, stage, tile_bytes, tile_stages);
  const int failures = run_bandwidth(opt, report, cases, sizes, sms, fill, title);

  PERF_CUDA(cudaDeviceSynchronize());
  PERF_CUDA(cudaFree(error));
  if (tiles) {
    tm_check(tmashmem_tensor_destroy(src_view.tensor), "tmashmem_tensor_destroy");
    tm_check(tmashmem_tensor_destroy(dst_view.tensor), "tmashmem_tensor_destroy");
  }
  tm_check(tmashmem_free(dst), "tmashmem_free");
  tm_check(tmashmem_free(src), "tmashmem_free");
  return failures;
}

}  // namespace perf_tm
