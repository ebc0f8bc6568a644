// The ceiling and bandwidth tests of tmashmem-perf and perf_nvshmem: PE 0 putting into /
// getting from PE 1 (itself with one PE) beside the copy engine and a plain SM copy, over
// sizes and SM counts; every destination checked after every repetition. Included by
// perf.cu after the runtime's backend (`Runtime`); PERF_TMASHMEM adds tmashmem's own rows.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tools/perf/kernels.cuh"
#include "tools/perf/perf_driver.cuh"

namespace perf {

constexpr size_t kGuard = 4096;  // poisoned bytes after every destination

inline int test_ceiling(const Options& opt, Report& report) {
  report.table_header("ceiling (256 MiB copies, rank 0)");
  for (int peer = 0; peer < 2; ++peer) {
    const double gbps = peer ? report.ceiling_peer() : report.ceiling_d2d();
    if (gbps <= 0) continue;
    Row r;
    r.test = "ceiling";
    r.op = peer ? "memcpy_peer" : "memcpy_d2d";
    r.bytes = size_t(256) << 20;
    r.iters = 4;
    r.reps = opt.reps;
    const double us = static_cast<double>(r.bytes) / (gbps * 1e3);
    r.time_us = {us, us, us};
    r.check = "ok";
    report.add(r);
  }
  return 0;
}

inline int test_bw(const Options& opt, Report& report, int device_sms) {
  using Device = Runtime::Device;
  const std::vector<size_t> sizes = size_list(opt, 16 * 1024, size_t(256) << 20, 4, 16, "bw");
  const std::vector<int> sms = sm_list(opt, "16,all", device_sms);
  const int me = Runtime::my_pe(), pe = Runtime::n_pes() > 1 ? 1 : me;
  const uint32_t tile_rows = static_cast<uint32_t>(opt.tile_rows);
  const size_t tile_bytes = size_t(tile_rows) * 1024;
  // Every size's every slot fits; tile tensors (whole tiles) cover the whole span.
  const size_t span = PERF_TMASHMEM ? (slot_span(sizes) + tile_bytes - 1) / tile_bytes * tile_bytes
                                    : slot_span(sizes);
  char* src = Runtime::alloc(span + kGuard);
  char* dst = Runtime::alloc(span + kGuard);
  char* peer_src = Runtime::peer(src, pe);
  char* peer_dst = Runtime::peer(dst, pe);
  const Device rt = Runtime::device();
  const uint64_t seed0 = run_seed();
  uint64_t seed = seed0;
  const int threads = opt.threads;
  // tmashmem's nbi rows: --nbi-threads issuers per CTA, --stage of staging each; NVSHMEM's:
  // the block-scope call from every thread.
  const uint32_t stage = PERF_TMASHMEM ? static_cast<uint32_t>(opt.stage_bytes) : 0;
  const int nbi_threads = PERF_TMASHMEM ? opt.nbi_threads : threads;
  const size_t nbi_smem = PERF_TMASHMEM ? size_t(nbi_threads) * stage : 0;
  set_smem(reinterpret_cast<const void*>(nbi_kernel<Device, true>), nbi_smem, "nbi_put");
  set_smem(reinterpret_cast<const void*>(nbi_kernel<Device, false>), nbi_smem, "nbi_get");

  using Run = std::function<void(cudaStream_t, int, size_t, long, size_t)>;
  std::vector<Case> cases;
  // Put: local src -> PE pe's dst; get: PE pe's src -> local dst; every buffer at the
  // repetition's slot offset `o`. thr == 0: the copy engine.
  auto add = [&](const std::string& op, const std::string& ref, int thr, bool is_put, Run run) {
    Case c;
    c.op = op;
    c.ref = ref;
    c.threads = thr;
    c.grid = thr ? 0 : 1;
    c.hold = thr == 0;
    c.max_iters = thr ? 0 : 200;
    c.footprint = [](size_t bytes) { return bytes; };
    c.run = std::move(run);
    use_destination(c, is_put ? peer_dst : dst, &seed, kGuard);
    cases.push_back(std::move(c));
  };
  auto copies = [](char* to, const char* from) -> Run {
    return [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
      for (long i = 0; i < iters; ++i)
        PERF_CUDA(cudaMemcpyAsync(to + o, from + o, bytes, cudaMemcpyDeviceToDevice, s));
    };
  };
  add("memcpy_put", "", 0, true, copies(peer_dst, src));
  add("memcpy_get", "", 0, false, copies(dst, peer_src));
#if PERF_TMASHMEM
  add("on_stream_put", "memcpy_put", 0, true,
      [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
        for (long i = 0; i < iters; ++i)
          tm_check(tmashmem_putmem_on_stream(dst + o, src + o, bytes, pe, s),
                   "tmashmem_putmem_on_stream");
      });
  add("on_stream_get", "memcpy_get", 0, false,
      [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
        for (long i = 0; i < iters; ++i)
          tm_check(tmashmem_getmem_on_stream(dst + o, src + o, bytes, pe, s),
                   "tmashmem_getmem_on_stream");
      });
#endif
  // The plain SM copy: what a hand-written kernel gets through the peer mapping.
  auto sm_copy = [=](char* to, const char* from) -> Run {
    return [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
      sm_copy_kernel<<<ctas, threads, 0, s>>>(to + o, from + o, bytes, iters);
      PERF_LAUNCHED("sm_copy_kernel");
    };
  };
  add("smcopy_put", "memcpy_put", threads, true, sm_copy(peer_dst, src));
  add("smcopy_get", "memcpy_get", threads, false, sm_copy(dst, peer_src));
  auto kernel = [=](auto k, int thr, size_t smem) -> Run {
    return [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
      k(s, ctas, thr, smem, dst + o, src + o, bytes, iters);
    };
  };
  auto block = [=](auto put) {
    return [=](cudaStream_t s, int ctas, int thr, size_t, char* d, char* sr, size_t n, long it) {
      block_kernel<Device, decltype(put)::value><<<ctas, thr, 0, s>>>(rt, d, sr, n, pe, it);
      PERF_LAUNCHED("block_kernel");
    };
  };
  auto nbi = [=](auto put) {
    return [=](cudaStream_t s, int ctas, int thr, size_t smem, char* d, char* sr, size_t n,
               long it) {
      nbi_kernel<Device, decltype(put)::value><<<ctas, thr, smem, s>>>(rt, d, sr, n, pe, it, stage);
      PERF_LAUNCHED("nbi_kernel");
    };
  };
  add("block_put", "memcpy_put", threads, true, kernel(block(std::true_type{}), threads, 0));
  add("block_get", "memcpy_get", threads, false, kernel(block(std::false_type{}), threads, 0));
  add("nbi_put", "memcpy_put", nbi_threads, true,
      kernel(nbi(std::true_type{}), nbi_threads, nbi_smem));
  add("nbi_get", "memcpy_get", nbi_threads, false,
      kernel(nbi(std::false_type{}), nbi_threads, nbi_smem));
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&error, sizeof(int)));
  PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
#if PERF_TMASHMEM
  // Tile put / get: the TMA pipeline of tile_kernels.cuh, at the sizes that are whole tiles.
  const bool tiles = opt.want("tile_put") || opt.want("tile_get");
  TileView src_view, dst_view;
  const uint32_t tile_stages = static_cast<uint32_t>(opt.tile_stages);
  const size_t tile_smem = tile_smem_bytes(static_cast<uint32_t>(tile_bytes), tile_stages);
  if (tiles) {
    src_view = TileView(src, span, kTileRowBytes, tile_rows);
    dst_view = TileView(dst, span, kTileRowBytes, tile_rows);
    set_smem(reinterpret_cast<const void*>(tile_copy_kernel), tile_smem, "tile copy");
    const uint64_t timeout_ns = opt.timeout_ns();
    for (int put = 1; put >= 0; --put) {
      const int from = put ? me : pe, to = put ? pe : me;
      add(put ? "tile_put" : "tile_get", put ? "memcpy_put" : "memcpy_get", 1, put,
          [=, sv = src_view.handle, dv = dst_view.handle](cudaStream_t s, int ctas, size_t bytes,
                                                          long iters, size_t o) {
            tile_copy_kernel<<<ctas, 1, tile_smem, s>>>(
                sv, from, dv, to, static_cast<uint32_t>(o / kTileRowBytes),
                static_cast<uint32_t>(bytes / kTileRowBytes), tile_stages, iters, timeout_ns,
                error);
            PERF_LAUNCHED("tile_copy_kernel");
          });
      check_error_word(cases.back(), error, opt.timeout_s);
      cases.back().applies = [tile_bytes](size_t bytes) { return bytes % tile_bytes == 0; };
    }
    for (size_t s : sizes)
      if (s % tile_bytes && mpi_rank() == 0)
        std::printf("# note: %zu B is not a multiple of the %zu B tile: no tile rows there\n", s,
                    tile_bytes);
  }
#endif

  auto fill = [&](cudaStream_t s, size_t bytes, size_t o) {
    seed = seed0 ^ (bytes * 0x9E3779B97F4A7C15ull);
    fill_pattern(src + o, bytes, seed, s);
    if (peer_src != src) fill_pattern(peer_src + o, bytes, seed, s);
  };
  char title[192];
  std::snprintf(title, sizeof title,
                "bw: PE %d %s PE %d's heap, %d threads/CTA (nbi: %d threads x %u B stage; tile: "
                "%zu B x %d stages)",
                me, pe == me ? "<->" : "->", pe, threads, nbi_threads, stage, tile_bytes,
                opt.tile_stages);
  const int failures = run_cases(opt, report, cases, sizes, sms, fill, title);
  PERF_CUDA(cudaDeviceSynchronize());
  PERF_CUDA(cudaFree(error));
#if PERF_TMASHMEM
  src_view.destroy();
  dst_view.destroy();
#endif
  Runtime::barrier_all();
  Runtime::free(dst);
  Runtime::free(src);
  return failures;
}

}  // namespace perf
