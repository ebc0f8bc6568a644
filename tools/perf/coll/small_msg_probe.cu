// tmashmem-small-msg-probe: SM-driven block put and TMA tile put beside a plain SM copy
// kernel, 64 KiB to 1 MiB, the same SM counts in the same run (2 PEs: PE 0 puts into PE 1's
// heap, PE 1 waits). Every variant runs `iters` back-to-back copies of the whole size in
// one kernel, as tools/perf's bandwidth rows do, and its destination is checked after the
// timed repetitions. Beside the library's block put: its copy loop with and without the
// barrier and the address computation, and a lean loop with explicit global-space
// accesses (what a block-scope put can reach); the tile put pipeline with one and with
// four issuing threads per CTA (docs/runs.md, "Small messages" and "Fifth session", has the
// findings).
//
//   mpirun -np 2 tmashmem-small-msg-probe [reps]
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tmashmem/device.cuh"
#include "tmashmem/tensor.h"
#include "tmashmem/tmashmem.h"
#include "tools/perf/kernels.cuh"

namespace {

// The block-put variants, in kBlockNames' order. The plain copy is tools/perf's own
// (sm_copy_kernel), the reference of the bandwidth rows.
enum class Block {
  Library,    // tmashmem::putmem_block
  Prologue,   // candidate: the address and the alignment test before the warp test, branch-free
  Shift,      // candidate: putmem_block with the reachability test as one clamped shift
  GlobalPtx,  // one unit per step, ld.global.v4 / st.global.v4 on a precomputed pointer, + barrier
};
const char* const kBlockNames[] = {"putmem_block", "prologue_first", "shift_reach",
                                   "ld/st.global+sync"};

__device__ __forceinline__ void global_ptx_copy(char* dst, const char* src, size_t n) {
  const size_t units = n / 16, stride = blockDim.x;
  const uint64_t d = __cvta_generic_to_global(dst), s = __cvta_generic_to_global(src);
  for (size_t i = threadIdx.x; i < units; i += stride) {
    uint32_t a, b, c, e;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(e)
                 : "l"(s + 16 * i));
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(d + 16 * i), "r"(a), "r"(b),
                 "r"(c), "r"(e)
                 : "memory");
  }
  __syncthreads();
}

// Candidate block put: everything that depends only on the arguments first, without branches
// (the compiler may hoist it out of a caller's loop), then the warp test. The peer address is
// congruent to dest mod 16 (peer_stride is a multiple of the heap granularity), so the
// alignment test does not wait for the address.
__device__ __forceinline__ void put_block_prologue(const tmashmem_ctx_t& ctx, void* dest,
                                                   const void* src, size_t bytes, int pe) {
  const unsigned rank = tmashmem::detail::block_thread_rank();
  const unsigned count = tmashmem::detail::block_thread_count();
  char* remote = tmashmem::ptr(ctx, static_cast<char*>(dest), pe);
  const size_t units = bytes >> 4;
  const bool short_aligned =
      ((reinterpret_cast<uintptr_t>(dest) | reinterpret_cast<uintptr_t>(src) | bytes) & 15u) == 0 &&
      units <= 4 * size_t(count);
  if (tmashmem::detail::warp_may_copy(rank, bytes)) {
    if (short_aligned) {
      uint4* d = reinterpret_cast<uint4*>(remote);
      const uint4* s = reinterpret_cast<const uint4*>(src);
      for (unsigned i = rank; i < static_cast<unsigned>(units); i += count) d[i] = s[i];
    } else {
      tmashmem::detail::copy_bytes(remote, static_cast<const char*>(src), bytes, rank, count);
    }
  }
  __syncthreads();
}

// Candidate: the reachability bit as one shift. PTX clamps a shift amount of 64 or more to
// 64 (the result is 0), so a slot past the 64 local PEs, or a PE below first_local_pe (a
// huge unsigned slot), reads as unreachable; bits at or above n_local_pes are 0 (host).
__device__ __forceinline__ void put_block_shift(const tmashmem_ctx_t& ctx, void* dest,
                                                const void* src, size_t bytes, int pe) {
  const unsigned rank = tmashmem::detail::block_thread_rank();
  if (tmashmem::detail::warp_may_copy(rank, bytes)) {
    uint64_t bit;
    asm("shr.b64 %0, %1, %2;"
        : "=l"(bit)
        : "l"(ctx.reachable), "r"(static_cast<unsigned>(pe - ctx.first_local_pe)));
    char* remote = (bit & 1u) ? static_cast<char*>(dest) + static_cast<int64_t>(pe - ctx.my_pe) *
                                                               static_cast<int64_t>(ctx.peer_stride)
                              : nullptr;
    tmashmem::detail::block_copy_bytes(remote, static_cast<const char*>(src), bytes, rank,
                                       tmashmem::detail::block_thread_count());
  }
  __syncthreads();
}

template <Block V>
__global__ void __launch_bounds__(1024)
    block_kernel(const __grid_constant__ tmashmem_ctx_t ctx, char* dst_sym, char* dst_peer,
                 const char* src, size_t bytes, int pe, long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  const char* sp = src + r.begin;
  const size_t n = r.end - r.begin;
  for (long it = 0; it < iters; ++it) {
    if constexpr (V == Block::Library) tmashmem::putmem_block(ctx, dst_sym + r.begin, sp, n, pe);
    if constexpr (V == Block::Prologue) put_block_prologue(ctx, dst_sym + r.begin, sp, n, pe);
    if constexpr (V == Block::Shift) put_block_shift(ctx, dst_sym + r.begin, sp, n, pe);
    if constexpr (V == Block::GlobalPtx) global_ptx_copy(dst_peer + r.begin, sp, n);
  }
}

// The tile pipeline: tile get of this PE's tile into shared memory, tile put of it into the
// peer's tensor, tile, stage and parity counted. One thread per issuer: lane 0 of warps
// 0..issuers-1, each with its own `stages` stages and mbarriers and its own share of the
// CTA's tiles.
//   Pipe<D>: stage s is refilled once the put D behind has read it (bulk_wait_group_read<D>).
//   Window:  `stages` gets, then each stage put as it lands, then every put's read waited
//            for, then the next window.
// kProf: issuer 0 of CTA 0 adds clock64 cycles per segment into prof[0..3] (mbarrier wait,
// put issue, read wait, get issue) and the number of tiles into prof[4].
//   Group/GroupRaw: the stages in 4 groups with one mbarrier each; a group's gets announce
//            their bytes at once, its puts follow one wait; the group put 1 behind is
//            waited for (read) before its stages are refilled with the group 3 ahead.
//            Group: tma_put_tile per tile (proxy fence + commit each); GroupRaw: the bare
//            tensor stores and one commit per group (the tiles came from the async proxy,
//            so no generic-to-async fence is needed).
enum class TileMode { Pipe1, Pipe4, Window, Group, GroupRaw };
const char* const kTileModeNames[] = {"pipe1", "pipe4", "window", "group", "groupraw"};

template <TileMode kMode, bool kProf, uint32_t kW = 8>
__global__ void tile_kernel(const __grid_constant__ tmashmem_tensor_handle_t src, int src_pe,
                            const __grid_constant__ tmashmem_tensor_handle_t dst, int dst_pe,
                            uint32_t tiles, uint32_t stages, long iters, uint64_t timeout_ns,
                            int* error, unsigned long long* prof) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const uint32_t box_bytes = src.box_bytes, box_rows = src.box[1];
  const uint32_t issuers = blockDim.x / 32, w = threadIdx.x / 32;
  unsigned char* base = tmashmem::align_smem<128>(smem_raw) + size_t(box_bytes) * stages * w;
  auto* bars = reinterpret_cast<tmashmem::Mbarrier*>(tmashmem::align_smem<128>(smem_raw) +
                                                     size_t(box_bytes) * stages * issuers) +
               size_t(stages) * w;
  const uint32_t each = (tiles + gridDim.x - 1) / gridDim.x;
  const uint32_t cta_first = min(tiles, blockIdx.x * each);
  const uint32_t cta_n = min(tiles, cta_first + each) - cta_first;
  const uint32_t mine = (cta_n + issuers - 1) / issuers;
  const uint32_t first = cta_first + min(cta_n, w * mine);
  const uint32_t n = min(cta_n, (w + 1) * mine) - min(cta_n, w * mine);
  if (threadIdx.x % 32 != 0 || n == 0) return;
  const bool profiled = kProf && blockIdx.x == 0 && w == 0;
  unsigned long long seg[4] = {0, 0, 0, 0};
  long long t0 = 0;
  auto mark = [&](int i) {
    if constexpr (kProf) {
      const long long t = clock64();
      if (i >= 0) seg[i] += static_cast<unsigned long long>(t - t0);
      t0 = t;
    }
  };
  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  for (uint32_t s = 0; s < stages; ++s) bars[s].init(1);
  const long total = long(n) * iters;
  auto at = [&](uint32_t t) {
    return tmashmem::TileCoord(0, static_cast<int32_t>((first + t) * box_rows));
  };
  uint32_t get_tile = 0, get_stage = 0;
  long issued = 0;
  auto get_next = [&] {
    bars[get_stage].arrive_expect_tx(box_bytes);
    tmashmem::tma_get_tile(base + size_t(get_stage) * box_bytes, src, src_pe, at(get_tile),
                           bars[get_stage]);
    if (++get_tile == n) get_tile = 0;
    if (++get_stage == stages) get_stage = 0;
    ++issued;
  };
  uint32_t put_tile = 0, stage = 0, parity = 0;
  auto wait_put = [&]() -> bool {
    mark(-1);
    if (bars[stage].wait(parity, timeout_ns) != tmashmem::Status::Ok) {
      *error = 1;
      tmashmem::quiet();
      return false;
    }
    mark(0);
    tmashmem::tma_put_tile(dst, dst_pe, at(put_tile), base + size_t(stage) * box_bytes);
    mark(1);
    if (++put_tile == n) put_tile = 0;
    if (++stage == stages) stage = 0, parity ^= 1u;
    return true;
  };
  if constexpr (kMode == TileMode::Group || kMode == TileMode::GroupRaw) {
    constexpr uint32_t G = 4, W = kW;  // stages == G * W
    const long groups = (total + W - 1) / W;
    auto group_items = [&](long g) { return static_cast<uint32_t>(min(long(W), total - g * W)); };
    uint32_t gtile = 0, ptile = 0;  // next tile to get / to put
    auto get_group = [&](long g) {
      const uint32_t slot = static_cast<uint32_t>(g % G), m = group_items(g);
      bars[slot].arrive_expect_tx(m * box_bytes);
      for (uint32_t j = 0; j < m; ++j) {
        tmashmem::tma_get_tile(base + size_t(slot * W + j) * box_bytes, src, src_pe, at(gtile),
                               bars[slot]);
        if (++gtile == n) gtile = 0;
      }
    };
    mark(-1);
    for (long g = 0; g < groups && g < G; ++g) get_group(g);
    mark(3);
    uint32_t gparity = 0;
    for (long g = 0; g < groups; ++g) {
      const uint32_t slot = static_cast<uint32_t>(g % G), m = group_items(g);
      mark(-1);
      if (bars[slot].wait(gparity >> slot & 1u, timeout_ns) != tmashmem::Status::Ok) {
        *error = 1;
        tmashmem::quiet();
        return;
      }
      gparity ^= 1u << slot;
      mark(0);
      for (uint32_t j = 0; j < m; ++j) {
        unsigned char* tile = base + size_t(slot * W + j) * box_bytes;
        if constexpr (kMode == TileMode::Group) {
          tmashmem::tma_put_tile(dst, dst_pe, at(ptile), tile);
        } else {
          tmashmem::detail::tensor_store<2>(tmashmem::detail::tensor_map_operand(dst, dst_pe),
                                            tmashmem::detail::smem_address(tile), at(ptile).c);
        }
        if (++ptile == n) ptile = 0;
      }
      if constexpr (kMode == TileMode::GroupRaw) tmashmem::detail::bulk_commit();
      mark(1);
      if (g >= 1 && g + G - 1 < groups) {
        if constexpr (kMode == TileMode::GroupRaw) {
          tmashmem::bulk_wait_group_read<1>();
        } else {
          tmashmem::bulk_wait_group_read<kW>();  // group g's kW puts may still read
        }
        mark(2);
        get_group(g + G - 1);
        mark(3);
      }
    }
  } else if constexpr (kMode == TileMode::Window) {
    for (long k = 0; k < total;) {
      const long m = min(static_cast<long>(stages), total - k);
      mark(-1);
      for (long j = 0; j < m; ++j) get_next();
      mark(3);
      for (long j = 0; j < m; ++j)
        if (!wait_put()) return;
      mark(-1);
      tmashmem::bulk_wait_group_read<0>();
      mark(2);
      k += m;
      // a short last window leaves stage/parity where the next window's gets start
      get_stage = stage;
    }
  } else {
    constexpr int D = kMode == TileMode::Pipe1 ? 1 : 4;
    while (issued < total && issued < static_cast<long>(stages)) get_next();
    for (long k = 0; k < total; ++k) {
      if (!wait_put()) return;
      if (k >= D && issued < total) {
        mark(-1);
        tmashmem::bulk_wait_group_read<D>();
        mark(2);
        get_next();
        mark(3);
      }
    }
  }
  tmashmem::quiet();
  for (uint32_t s = 0; s < stages; ++s) bars[s].inval();
  if (profiled) {
    for (int i = 0; i < 4; ++i) prof[i] = seg[i];
    prof[4] = static_cast<unsigned long long>(total);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  perf::tm_check(tmashmem_init(), "tmashmem_init");
  const int me = tmashmem_my_pe(), npes = tmashmem_n_pes();
  const int pe = npes > 1 ? 1 : 0;
  PERF_CUDA(cudaSetDevice(tmashmem_device()));
  int sms_all = 0;
  PERF_CUDA(cudaDeviceGetAttribute(&sms_all, cudaDevAttrMultiProcessorCount, tmashmem_device()));
  const size_t max_bytes = size_t(1) << 20, guard = 4096;
  char* src = static_cast<char*>(tmashmem_malloc(max_bytes + guard));
  char* dst = static_cast<char*>(tmashmem_malloc(max_bytes + guard));
  if (!src || !dst) perf::die("tmashmem_malloc");
  // Tile views: rows of 1 KiB, tiles of 1, 2, 4 and 8 KiB.
  const std::vector<uint32_t> tile_rows = {1, 2, 4, 8};
  std::vector<perf::TileView> sv, dv;
  for (uint32_t rows : tile_rows) {
    sv.emplace_back(src, max_bytes, 1024, rows);
    dv.emplace_back(dst, max_bytes, 1024, rows);
  }
  tmashmem_ctx_t ctx;
  perf::tm_check(tmashmem_device_ctx(&ctx), "device_ctx");
  char* peer_dst = static_cast<char*>(tmashmem_ptr(dst, pe));
  perf::tm_check(tmashmem_barrier_all(), "barrier");
  int failures = 0;
  if (me == 0) {
    std::vector<unsigned char> host(max_bytes), back(max_bytes + guard);
    for (size_t i = 0; i < max_bytes; ++i) host[i] = static_cast<unsigned char>(i * 131 + (i >> 9));
    PERF_CUDA(cudaMemcpy(src, host.data(), max_bytes, cudaMemcpyHostToDevice));
    int* error = nullptr;
    PERF_CUDA(cudaMalloc(&error, sizeof(int)));
    PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
    cudaStream_t st;
    PERF_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    PERF_CUDA(cudaEventCreate(&a));
    PERF_CUDA(cudaEventCreate(&b));
    const int max_smem = 200 * 1024;
    auto allow_smem = [&](auto k) {
      PERF_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem));
    };
    unsigned long long* prof = nullptr;
    PERF_CUDA(cudaMalloc(&prof, 8 * sizeof(unsigned long long)));
    allow_smem(tile_kernel<TileMode::Pipe1, false>);
    allow_smem(tile_kernel<TileMode::Window, false>);
    allow_smem(tile_kernel<TileMode::Pipe1, true>);
    auto allow_groups = [&](auto w) {
      constexpr uint32_t Wd = decltype(w)::value;
      allow_smem(tile_kernel<TileMode::Group, false, Wd>);
      allow_smem(tile_kernel<TileMode::GroupRaw, false, Wd>);
      allow_smem(tile_kernel<TileMode::Group, true, Wd>);
      allow_smem(tile_kernel<TileMode::GroupRaw, true, Wd>);
    };
    allow_groups(std::integral_constant<uint32_t, 8>{});
    allow_groups(std::integral_constant<uint32_t, 4>{});
    allow_groups(std::integral_constant<uint32_t, 2>{});
    std::printf(
        "# small-msg-probe: %d PEs, PE 0 -> PE %d, 1024 threads (block) / 1, 4 or 16 issuing "
        "threads "
        "(tile) per CTA, "
        "median of %d repetitions, GB/s and ratio to plain at the same SMs\n",
        npes, pe, reps);
    std::printf("%-8s %4s %-26s %9s %9s %7s %s\n", "bytes", "sms", "variant", "us/iter", "GB/s",
                "ratio", "check");
    const std::vector<int> sm_list = {16, 66, sms_all};
    for (size_t bytes = size_t(64) << 10; bytes <= max_bytes; bytes *= 4) {
      const long iters = 1000;
      for (int sms : sm_list) {
        double plain_gbps = 0;
        auto run = [&](const std::string& what, auto&& launch) {
          PERF_CUDA(cudaMemsetAsync(peer_dst, 0xA5, bytes + guard, st));
          launch(iters / 10);  // warm-up
          std::vector<double> us;
          for (int r = 0; r < reps; ++r) {
            PERF_CUDA(cudaEventRecord(a, st));
            launch(iters);
            PERF_CUDA(cudaEventRecord(b, st));
            perf::cuda_check(cudaEventSynchronize(b), what.c_str(), __FILE__, __LINE__);
            float ms = 0;
            PERF_CUDA(cudaEventElapsedTime(&ms, a, b));
            us.push_back(1000.0 * ms / iters);
          }
          std::sort(us.begin(), us.end());
          const double t = us[us.size() / 2];
          const double gbps = bytes / (t * 1e3);
          if (plain_gbps == 0) plain_gbps = gbps;
          int err = 0;
          PERF_CUDA(cudaMemcpy(&err, error, sizeof(int), cudaMemcpyDeviceToHost));
          PERF_CUDA(cudaMemset(error, 0, sizeof(int)));
          PERF_CUDA(cudaMemcpy(back.data(), peer_dst, bytes + guard, cudaMemcpyDeviceToHost));
          bool ok = err == 0 && std::memcmp(back.data(), host.data(), bytes) == 0;
          for (size_t i = bytes; i < bytes + guard; ++i) ok = ok && back[i] == 0xA5;
          if (!ok) ++failures;
          std::printf("%-8zu %4d %-26s %9.3f %9.1f %7.3f %s\n", bytes, sms, what.c_str(), t, gbps,
                      gbps / plain_gbps, ok ? "ok" : "FAIL");
        };
        auto block = [&](auto v) {
          constexpr Block V = decltype(v)::value;
          const char* name = kBlockNames[static_cast<int>(V)];
          run(name, [&](long it) {
            block_kernel<V><<<sms, 1024, 0, st>>>(ctx, dst, peer_dst, src, bytes, pe, it);
            PERF_LAUNCHED(name);
          });
        };
        run("plain", [&](long it) {
          perf::sm_copy_kernel<<<sms, 1024, 0, st>>>(peer_dst, src, bytes, it);
          PERF_LAUNCHED("sm_copy_kernel");
        });
        block(std::integral_constant<Block, Block::Library>{});
        block(std::integral_constant<Block, Block::Shift>{});
        block(std::integral_constant<Block, Block::GlobalPtx>{});
        for (size_t v = 0; v < tile_rows.size(); ++v) {
          const uint32_t tile = 1024 * tile_rows[v];
          const uint32_t tiles = static_cast<uint32_t>(bytes / tile);
          for (uint32_t issuers : {1u, 4u, 16u}) {
            const uint32_t budget = 196608 / (tile * issuers);  // tile slots per issuer
            // Group width: 8, 4 or 2 tiles per group, 4 groups.
            const uint32_t width = budget >= 32 ? 8 : budget >= 16 ? 4 : budget >= 8 ? 2 : 0;
            if (width == 0) continue;
            auto tile_row = [&](auto mode, auto profiled, auto w, uint32_t stages) {
              constexpr TileMode M = decltype(mode)::value;
              constexpr bool P = decltype(profiled)::value;
              constexpr uint32_t Wd = decltype(w)::value;
              char label[64];
              std::snprintf(label, sizeof label, "tile_%uK_x%u_s%u_%s%s", tile / 1024, issuers,
                            stages, kTileModeNames[static_cast<int>(M)], P ? "_prof" : "");
              const size_t smem = 128 + (size_t(tile) + 8) * stages * issuers;
              run(label, [&](long it) {
                tile_kernel<M, P, Wd>
                    <<<sms, 32 * issuers, smem, st>>>(sv[v].handle, me, dv[v].handle, pe, tiles,
                                                      stages, it, 2000000000ull, error, prof);
                PERF_LAUNCHED(label);
              });
              if (P) {
                unsigned long long h[5];
                PERF_CUDA(cudaMemcpy(h, prof, sizeof h, cudaMemcpyDeviceToHost));
                const double k = h[4] ? double(h[4]) : 1.0;
                std::printf(
                    "#   cycles per tile (CTA 0, issuer 0): wait %.0f put %.0f read-wait "
                    "%.0f get %.0f\n",
                    h[0] / k, h[1] / k, h[2] / k, h[3] / k);
              }
            };
            using Pipe1 = std::integral_constant<TileMode, TileMode::Pipe1>;
            using Window = std::integral_constant<TileMode, TileMode::Window>;
            using Group = std::integral_constant<TileMode, TileMode::Group>;
            using GroupRaw = std::integral_constant<TileMode, TileMode::GroupRaw>;
            using W8 = std::integral_constant<uint32_t, 8>;
            const uint32_t stages = std::min<uint32_t>(32, budget);
            const bool prof_row = issuers == 1 && tile == 4096 && sms == 16;
            tile_row(Pipe1{}, std::false_type{}, W8{}, stages);
            tile_row(Window{}, std::false_type{}, W8{}, stages);
            auto groups = [&](auto w) {
              constexpr uint32_t Wd = decltype(w)::value;
              tile_row(Group{}, std::false_type{}, w, 4 * Wd);
              tile_row(GroupRaw{}, std::false_type{}, w, 4 * Wd);
              if (prof_row) {
                tile_row(Group{}, std::true_type{}, w, 4 * Wd);
                tile_row(GroupRaw{}, std::true_type{}, w, 4 * Wd);
              }
            };
            if (width == 8) groups(W8{});
            if (width == 4) groups(std::integral_constant<uint32_t, 4>{});
            if (width == 2) groups(std::integral_constant<uint32_t, 2>{});
            if (prof_row) tile_row(Pipe1{}, std::true_type{}, W8{}, stages);
          }
        }
      }
    }
    std::printf("# %d failed checks\n", failures);
  }
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  perf::tm_check(tmashmem_barrier_all(), "barrier");
  for (size_t v = 0; v < sv.size(); ++v) {
    sv[v].destroy();
    dv[v].destroy();
  }
  tmashmem_free(dst);
  tmashmem_free(src);
  tmashmem_finalize();
  MPI_Finalize();
  return failures ? 1 : 0;
}
