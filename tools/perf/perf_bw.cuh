// The bandwidth and multicast tests of tmashmem-perf and perf_nvshmem. bw: PE 0
// putting into / getting from PE 1 (itself with one PE) beside the copy engine and a plain
// SM copy, over sizes and SM counts. mcast (tmashmem): multicast_store to every reachable
// PE beside one putmem_block per PE and a hand-written store fan-out, same sizes, same
// CTAs; GB/s counts every copy. Every destination is checked after every repetition.
// Included by perf.cu after the runtime's backend (`Runtime`).
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tools/perf/harness.cuh"
#include "tools/perf/kernels.cuh"

namespace perf {

using Run = std::function<void(cudaStream_t, int ctas, size_t bytes, long iters, size_t off)>;

// A case of the bandwidth tests: SM-driven with `threads` per CTA at every SM count, or
// (threads 0) the copy engine, timed with the stream held, at most 200 copies.
inline Case bw_case(const std::string& test, const std::string& op, const std::string& ref,
                    int threads, Run run) {
  Case c;
  c.test = test;
  c.op = op;
  c.ref = ref;
  c.threads = threads;
  c.grid = threads ? 0 : 1;
  c.hold = threads == 0;
  c.max_iters = threads ? 0 : 200;
  c.footprint = [](size_t bytes) { return bytes; };
  c.run = std::move(run);
  return c;
}

// The end of a bandwidth or message test: the GPU idle, the error word and the tile views
// (collective) gone, every PE past the test, then its symmetric buffers freed.
inline int end_test(int failures, int* error, TileViews& views,
                    std::initializer_list<void*> buffers) {
  PERF_CUDA(cudaDeviceSynchronize());
  PERF_CUDA(cudaFree(error));
  destroy(views);
  Runtime::barrier_all();
  for (void* b : buffers) Runtime::free(b);
  return failures;
}

inline int test_bw(const Options& opt, Report& report, int device_sms) {
  using Device = Runtime::Device;
  const std::vector<size_t> sizes = size_list(opt, 16 * 1024, size_t(256) << 20, 4, 16, "bw");
  const std::vector<int> sms = sm_list(opt, "16,all", device_sms);
  const int me = Runtime::my_pe(), pe = Runtime::n_pes() > 1 ? 1 : me, threads = opt.threads;
  // Tile tensors (whole tiles of every size the rows may use) cover the whole span.
#if PERF_TMASHMEM
  const size_t tile_max = size_t(kTileMaxRows) * kTileRowBytes;
#else
  const size_t tile_max = 1;
#endif
  const size_t span = (slot_span(sizes) + tile_max - 1) / tile_max * tile_max;
  char *src = Runtime::alloc(span + kGuard), *dst = Runtime::alloc(span + kGuard);
  char *peer_src = Runtime::peer(src, pe), *peer_dst = Runtime::peer(dst, pe);
  const Device rt = Runtime::device();
  const uint64_t seed0 = run_seed();
  uint64_t seed = seed0;
  // tmashmem's nbi rows: --nbi-threads issuers per CTA, --stage of staging each; NVSHMEM's:
  // the block-scope call from every thread.
  const uint32_t stage = PERF_TMASHMEM ? static_cast<uint32_t>(opt.stage_bytes) : 0;
  const int nbi_threads = PERF_TMASHMEM ? opt.nbi_threads : threads;
  const size_t nbi_smem = size_t(nbi_threads) * stage;
  set_smem(reinterpret_cast<const void*>(nbi_kernel<Device, true>), nbi_smem, "nbi_put");
  set_smem(reinterpret_cast<const void*>(nbi_kernel<Device, false>), nbi_smem, "nbi_get");

  std::vector<Case> cases;
  // op_put: local src -> PE pe's dst, then op_get: PE pe's src -> local dst; `run(put, to,
  // from)` makes the direction's launch; every buffer at the repetition's slot offset `o`.
  auto pair = [&](const std::string& op, int thr, auto run) {
    for (const bool put : {true, false}) {
      const std::string dir = put ? "_put" : "_get";
      cases.push_back(bw_case("bw", op + dir, op == "memcpy" ? "" : "memcpy" + dir, thr,
                              run(put, put ? peer_dst : dst, put ? src : peer_src)));
      use_destination(cases.back(), {put ? peer_dst : dst}, &seed);
    }
  };
  pair("memcpy", 0, [](bool, char* to, const char* from) -> Run {
    return [=](cudaStream_t s, int, size_t bytes, long iters, size_t o) {
      for (long i = 0; i < iters; ++i)
        PERF_CUDA(cudaMemcpyAsync(to + o, from + o, bytes, cudaMemcpyDeviceToDevice, s));
    };
  });
#if PERF_TMASHMEM
  pair("on_stream", 0, [=](bool put, char*, const char*) -> Run {
    return [=, f = put ? tmashmem_putmem_on_stream : tmashmem_getmem_on_stream](
               cudaStream_t s, int, size_t bytes, long iters, size_t o) {
      for (long i = 0; i < iters; ++i)
        tm_check(f(dst + o, src + o, bytes, pe, s), "tmashmem_*mem_on_stream");
    };
  });
#endif
  // The plain SM copy: what a hand-written kernel gets through the peer mapping.
  pair("smcopy", threads, [=](bool, char* to, const char* from) -> Run {
    return [=](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
      sm_copy_kernel<<<ctas, threads, 0, s>>>(to + o, from + o, bytes, iters);
      PERF_LAUNCHED("sm_copy_kernel");
    };
  });
  pair("block", threads, [=](bool put, char*, const char*) -> Run {
    return [=, k = put ? block_kernel<Device, true> : block_kernel<Device, false>](
               cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
      k<<<ctas, threads, 0, s>>>(rt, dst + o, src + o, bytes, pe, iters);
      PERF_LAUNCHED("block_kernel");
    };
  });
  pair("nbi", nbi_threads, [=](bool put, char*, const char*) -> Run {
    return [=, k = put ? nbi_kernel<Device, true> : nbi_kernel<Device, false>](
               cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
      k<<<ctas, nbi_threads, nbi_smem, s>>>(rt, dst + o, src + o, bytes, pe, iters, stage);
      PERF_LAUNCHED("nbi_kernel");
    };
  });
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&error, sizeof(int)));
  PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
  TileViews views;  // tmashmem: src, dst per entry of tile_sizes
#if PERF_TMASHMEM
  // Tile put / get: tile_copy_kernel's TMA pipeline, tiles of tile_rows_for(bytes, ctas) KiB
  // (or --tile-rows), at the sizes that are whole tiles. One view pair per tile size.
  const uint32_t fixed_rows = static_cast<uint32_t>(opt.tile_rows);
  std::vector<uint32_t> tile_sizes;  // rows per tile that the views cover
  if (opt.want("tile_put") || opt.want("tile_get") || opt.want("tile_resident_put")) {
    for (uint32_t r = 1; r <= kTileMaxRows; r *= 2)
      if (!fixed_rows || r == fixed_rows) tile_sizes.push_back(r);
    if (tile_sizes.empty())
      tile_sizes.push_back(fixed_rows);  // a fixed size that is no power of two
    size_t smem[9] = {};  // per group width 1, 2, 4, 8: the most shared memory it is launched with
    for (uint32_t r : tile_sizes) {
      for (char* p : {src, dst}) views.emplace_back(p, span, kTileRowBytes, r);
      const uint32_t w = tile_group_width(r * kTileRowBytes);
      if (w == 0)
        die("--tile-rows " + std::to_string(r) + ": four tiles do not fit in shared memory");
      smem[w] = std::max(smem[w], tile_smem_bytes(r * kTileRowBytes, kTileGroups * w));
    }
    set_smem(reinterpret_cast<const void*>(tile_copy_kernel<1>), smem[1], "tile copy");
    set_smem(reinterpret_cast<const void*>(tile_copy_kernel<2>), smem[2], "tile copy");
    set_smem(reinterpret_cast<const void*>(tile_copy_kernel<4>), smem[4], "tile copy");
    set_smem(reinterpret_cast<const void*>(tile_copy_kernel<8>), smem[8], "tile copy");
    const uint64_t timeout_ns = opt.timeout_ns();
    // The source view of tiles of `r` rows in `views` (the destination's follows it).
    auto view_of = [tile_sizes](uint32_t r) {
      return 2 * static_cast<size_t>(std::find(tile_sizes.begin(), tile_sizes.end(), r) -
                                     tile_sizes.begin());
    };
    pair("tile", 1, [&](bool put, char*, const char*) -> Run {
      return [=, from = put ? me : pe, to = put ? pe : me](cudaStream_t s, int ctas, size_t bytes,
                                                           long iters, size_t o) {
        const uint32_t r = tile_rows_for(bytes, ctas, fixed_rows);
        const size_t v = view_of(r);
        const uint32_t w = tile_group_width(r * kTileRowBytes);
        const size_t smem_bytes = tile_smem_bytes(r * kTileRowBytes, kTileGroups * w);
        const auto k = w == 8   ? tile_copy_kernel<8>
                       : w == 4 ? tile_copy_kernel<4>
                       : w == 2 ? tile_copy_kernel<2>
                                : tile_copy_kernel<1>;
        k<<<ctas, 1, smem_bytes, s>>>(views[v].handle, from, views[v + 1].handle, to,
                                      static_cast<uint32_t>(o / kTileRowBytes),
                                      static_cast<uint32_t>(bytes / kTileRowBytes), iters,
                                      timeout_ns, error);
        PERF_LAUNCHED("tile_copy_kernel");
      };
    });
    // The op alone, where the CTA's tiles fit in shared memory (kTileSmemBudget).
    auto resident_smem = [=](size_t bytes, int ctas) {
      const uint32_t r = tile_rows_for(bytes, ctas, fixed_rows);
      const size_t per_cta = (bytes / (r * kTileRowBytes) + ctas - 1) / size_t(ctas);
      return tile_smem_bytes(r * kTileRowBytes, static_cast<uint32_t>(per_cta));
    };
    set_smem(reinterpret_cast<const void*>(tile_resident_put_kernel), kTileSmemBudget + 256,
             "tile resident put");
    cases.push_back(bw_case(
        "bw", "tile_resident_put", "memcpy_put", 1,
        [=, &views](cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
          const size_t v = view_of(tile_rows_for(bytes, ctas, fixed_rows));
          tile_resident_put_kernel<<<ctas, 1, resident_smem(bytes, ctas), s>>>(
              views[v].handle, views[v + 1].handle, pe, static_cast<uint32_t>(o / kTileRowBytes),
              static_cast<uint32_t>(bytes / kTileRowBytes), iters, timeout_ns, error);
          PERF_LAUNCHED("tile_resident_put_kernel");
        }));
    use_destination(cases.back(), {peer_dst}, &seed);
    const int fewest_ctas = *std::min_element(sms.begin(), sms.end());
    const size_t tile_min = size_t(fixed_rows ? fixed_rows : 1) * kTileRowBytes;
    for (Case& c : cases)
      if (c.op.rfind("tile_", 0) == 0) {
        check_error_word(c, error, opt.timeout_s);
        const bool resident = c.op == "tile_resident_put";
        c.applies = [=](size_t bytes) {
          return bytes % tile_min == 0 &&
                 (!resident || resident_smem(bytes, fewest_ctas) <= kTileSmemBudget);
        };
      }
    for (size_t s : sizes)
      if (s % tile_min && mpi_rank() == 0)
        std::printf("# note: %zu B is not a multiple of the %zu B tile: no tile rows there\n", s,
                    tile_min);
  }
#endif
  auto fill = [&](cudaStream_t s, size_t bytes, size_t o) {
    seed = seed0 ^ (bytes * 0x9E3779B97F4A7C15ull);
    fill_pattern(src + o, bytes, seed, s);
    if (peer_src != src) fill_pattern(peer_src + o, bytes, seed, s);
  };
  char title[192];
#if PERF_TMASHMEM
  const std::string tile_kib = opt.tile_rows ? std::to_string(opt.tile_rows) : "1-32 by size";
#else
  const std::string tile_kib = "-";
#endif
  std::snprintf(title, sizeof title,
                "bw: PE %d %s PE %d's heap, %d threads/CTA (nbi: %d threads x %u B stage; tile: "
                "%s KiB, one issuing thread, 6 groups)",
                me, pe == me ? "<->" : "->", pe, threads, nbi_threads, stage, tile_kib.c_str());
  return end_test(run_cases(opt, report, cases, sizes, sms, fill, title), error, views, {dst, src});
}

#if PERF_TMASHMEM
// How fanout_kernel reaches every PE: one putmem_block per PE, a hand-written fan-out (each
// 16-byte word loaded once and stored to every peer mapping), or one multicast_store (its
// unicast fan-out where the runtime made no multicast object).
enum class Fanout { PutPerPe, StorePerPe, Multicast };

// Each CTA sends its share of the source to every reachable local PE's copy of symmetric
// `dst`, `iters` times over; call `it` reads copy it % sources of it, at sources_base +
// copy * stride.
template <Fanout kHow>
__global__ void fanout_kernel(const __grid_constant__ tmashmem_ctx_t ctx, char* dst,
                              const char* sources_base, size_t bytes, long iters, int sources,
                              size_t stride) {
  const Range r = share(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  const int first = ctx.first_local_pe, last = ctx.first_local_pe + ctx.n_local_pes;
  auto send = [&](const char* src) {
    if constexpr (kHow == Fanout::Multicast) {
      tmashmem::multicast_store<uint32_t, tmashmem::Coop::Block>(
          ctx, reinterpret_cast<uint32_t*>(dst + r.begin),
          reinterpret_cast<const uint32_t*>(src + r.begin), (r.end - r.begin) / 4);
    } else if constexpr (kHow == Fanout::PutPerPe) {
      for (int pe = first; pe < last; ++pe)
        if (tmashmem::is_reachable(ctx, pe))
          tmashmem::putmem_block(ctx, dst + r.begin, src + r.begin, r.end - r.begin, pe);
    } else {
      for (size_t i = r.begin + 16 * threadIdx.x; i < r.end; i += 16 * size_t(blockDim.x)) {
        const uint4 v = *reinterpret_cast<const uint4*>(src + i);
        for (int pe = first; pe < last; ++pe)
          if (tmashmem::is_reachable(ctx, pe))
            *reinterpret_cast<uint4*>(tmashmem::ptr(ctx, dst + i, pe)) = v;
      }
      __syncthreads();
    }
  };
  // One source: a loop-invariant one, as in the runs before --sources (the compiler may move
  // the calls' set-up that depends on the source alone out of the loop).
  if (sources == 1) {
    for (long it = 0; it < iters; ++it) send(sources_base);
    return;
  }
  // The next copy by a wrapping step, not it % sources: a 64-bit division per call would
  // be the benchmark's cost, paid inside every op's timed loop.
  const char* src = sources_base;
  for (long it = 0, copy = 0; it < iters; ++it) {
    send(src);
    const bool wrap = ++copy == sources;
    copy = wrap ? 0 : copy;
    src = wrap ? sources_base : src + stride;
  }
}

inline int test_mcast(const Options& opt, Report& report, int device_sms) {
  const std::vector<size_t> sizes = size_list(opt, 16 * 1024, size_t(256) << 20, 4, 16, "mcast");
  const std::vector<int> sms = sm_list(opt, "16,all", device_sms);
  // --sources N: N copies of the source, one after another, so that a call's source has not
  // been read by the N - 1 calls before it (with one, every call reads what the last read).
  const size_t span = slot_span(sizes) + kGuard;
  const int sources = opt.sources;
  char *src = Runtime::alloc(span * size_t(sources)), *dst = Runtime::alloc(span);
  const tmashmem_ctx_t ctx = Runtime::device().ctx;
  std::vector<char*> copies;  // every reachable PE's dst: what each call must write
  for (int q = ctx.first_local_pe; q < ctx.first_local_pe + ctx.n_local_pes; ++q)
    if (tmashmem_ptr(dst, q)) copies.push_back(Runtime::peer(dst, q));
  const uint64_t seed0 = run_seed();
  uint64_t seed = seed0;
  std::vector<Case> cases;
  using Kernel = void (*)(tmashmem_ctx_t, char*, const char*, size_t, long, int, size_t);
  const std::pair<const char*, Kernel> ops[] = {
      {"put_per_pe", fanout_kernel<Fanout::PutPerPe>},
      {"store_per_pe", fanout_kernel<Fanout::StorePerPe>},
      {"multicast_store", fanout_kernel<Fanout::Multicast>}};
  for (const auto& entry : ops) {
    cases.push_back(bw_case(sources == 1 ? "mcast" : "mcast_src" + std::to_string(sources),
                            entry.first, &entry == ops ? "" : "put_per_pe", opt.threads,
                            [=, kernel = entry.second, thr = opt.threads](
                                cudaStream_t s, int ctas, size_t bytes, long iters, size_t o) {
                              kernel<<<ctas, thr, 0, s>>>(ctx, dst + o, src + o, bytes, iters,
                                                          sources, span);
                              PERF_LAUNCHED("fanout_kernel");
                            }));
    cases.back().messages = [n = copies.size()](int, size_t) { return double(n); };
    use_destination(cases.back(), copies, &seed);
  }
  auto fill = [&](cudaStream_t s, size_t bytes, size_t o) {
    seed = seed0 ^ (bytes * 0x9E3779B97F4A7C15ull);
    for (int c = 0; c < sources; ++c) fill_pattern(src + size_t(c) * span + o, bytes, seed, s);
  };
  const std::string title = "mcast: PE 0 -> each of " + std::to_string(copies.size()) + " PEs, " +
                            std::to_string(opt.threads) + " threads/CTA, " +
                            std::to_string(sources) +
                            " source copies; GB/s counts every copy (multicast " +
                            (ctx.mc_base ? "objects" : "fallback: unicast fan-out") + ")";
  const int failures = run_cases(opt, report, cases, sizes, sms, fill, title);
  Runtime::barrier_all();
  Runtime::free(dst);
  Runtime::free(src);
  return failures;
}
#endif

}  // namespace perf
