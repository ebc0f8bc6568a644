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
  CopyLoop,   // the library's copy loop (detail::copy_bytes) without the barrier
  CopySync,   // copy_bytes on the precomputed peer pointer + barrier (old putmem_block less ptr)
  UnitsSync,  // the aligned loop alone (detail::copy_units) + barrier
  GlobalPtx,  // one unit per step, ld.global.v4 / st.global.v4, + barrier
};
const char* const kBlockNames[] = {"putmem_block", "copy_bytes", "copy_bytes+sync",
                                   "copy_units+sync", "ld/st.global+sync"};

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

template <Block V>
__global__ void __launch_bounds__(1024)
    block_kernel(const __grid_constant__ tmashmem_ctx_t ctx, char* dst_sym, char* dst_peer,
                 const char* src, size_t bytes, int pe, long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  char* dp = dst_peer + r.begin;
  const char* sp = src + r.begin;
  const size_t n = r.end - r.begin;
  for (long it = 0; it < iters; ++it) {
    if constexpr (V == Block::Library) tmashmem::putmem_block(ctx, dst_sym + r.begin, sp, n, pe);
    if constexpr (V == Block::CopyLoop)
      tmashmem::detail::copy_bytes(dp, sp, n, threadIdx.x, blockDim.x);
    if constexpr (V == Block::CopySync) {
      tmashmem::detail::copy_bytes(dp, sp, n, tmashmem::detail::block_thread_rank(),
                                   tmashmem::detail::block_thread_count());
      __syncthreads();
    }
    if constexpr (V == Block::UnitsSync) {
      tmashmem::detail::copy_units(reinterpret_cast<uint4*>(dp), reinterpret_cast<const uint4*>(sp),
                                   n >> 4, threadIdx.x, blockDim.x);
      __syncthreads();
    }
    if constexpr (V == Block::GlobalPtx) global_ptx_copy(dp, sp, n);
  }
}

// The tile pipeline: tile get of this PE's tile into shared memory, tile put of it into
// the peer's tensor, `stages` deep, tile, stage and parity counted (the 64-bit division
// and modulo that tools/perf/kernels.cuh's tile_copy_kernel still uses cost 0.42 us per
// tile, docs/runs.md "Small messages"). One thread per issuer: lane 0 of warps
// 0..issuers-1, each with its own stages and mbarriers and its own share of the CTA's
// tiles, so that the SM issues from several threads as the plain copy's 1024 threads do.
// Each issuer may refill a stage once its put has read it (one put in flight behind; more
// in flight, 4 or 16, measured the same: docs/runs.md, "Sixth session").
// kMode: 0 tma_put_tile; 1 the bare tensor store and commit (no proxy fence); 2 gets alone
// (each stage refilled as soon as it has landed; only the last lap is put, for the check).
template <int kMode>
__global__ void tile_kernel(const __grid_constant__ tmashmem_tensor_handle_t src, int src_pe,
                            const __grid_constant__ tmashmem_tensor_handle_t dst, int dst_pe,
                            uint32_t tiles, uint32_t stages, long iters, uint64_t timeout_ns,
                            int* error) {
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
  while (issued < total && issued < static_cast<long>(stages)) get_next();
  uint32_t put_tile = 0, stage = 0, parity = 0;
  for (long k = 0; k < total; ++k) {
    if (bars[stage].wait(parity, timeout_ns) != tmashmem::Status::Ok) {
      *error = 1;
      tmashmem::quiet();
      return;
    }
    unsigned char* tile = base + size_t(stage) * box_bytes;
    if constexpr (kMode == 0) tmashmem::tma_put_tile(dst, dst_pe, at(put_tile), tile);
    if constexpr (kMode == 1) {
      tmashmem::detail::tensor_store<2>(tmashmem::detail::tensor_map_operand(dst, dst_pe),
                                        tmashmem::detail::smem_address(tile), at(put_tile).c);
      tmashmem::detail::bulk_commit();
    }
    if constexpr (kMode == 2) {
      if (k + n >= total) {
        tmashmem::tma_put_tile(dst, dst_pe, at(put_tile), tile);
        tmashmem::bulk_wait_group_read<0>();
      } else if (issued < total) {
        get_next();
      }
    } else if (k >= 1 && issued < total) {
      tmashmem::bulk_wait_group_read<1>();
      get_next();
    }
    if (++put_tile == n) put_tile = 0;
    if (++stage == stages) stage = 0, parity ^= 1u;
  }
  tmashmem::quiet();
  for (uint32_t s = 0; s < stages; ++s) bars[s].inval();
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
  // Tile views: rows of 1 KiB, 4 and 8 KiB tiles (the sizes that came closest to the plain
  // copy with one issuer; 0.5-2 KiB tiles and 32 KiB tiles stayed below 0.75).
  struct Shape {
    uint32_t row, rows;
  };
  const std::vector<Shape> shapes = {{1024, 4}, {1024, 8}};
  std::vector<perf::TileView> sv, dv;
  for (const Shape& s : shapes) {
    sv.emplace_back(src, max_bytes, s.row, s.rows);
    dv.emplace_back(dst, max_bytes, s.row, s.rows);
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
    allow_smem(tile_kernel<0>);
    allow_smem(tile_kernel<1>);
    allow_smem(tile_kernel<2>);
    std::printf(
        "# small-msg-probe: %d PEs, PE 0 -> PE %d, 1024 threads (block) / 1 or 4 issuing threads "
        "(tile) per CTA, "
        "median of %d repetitions, GB/s and ratio to plain at the same SMs\n",
        npes, pe, reps);
    std::printf("%-8s %4s %-26s %9s %9s %7s %s\n", "bytes", "sms", "variant", "us/iter", "GB/s",
                "ratio", "check");
    const std::vector<int> sm_list = {16, 32, 66, sms_all};
    for (size_t bytes = size_t(64) << 10; bytes <= max_bytes; bytes *= 2) {
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
        block(std::integral_constant<Block, Block::CopyLoop>{});
        block(std::integral_constant<Block, Block::CopySync>{});
        block(std::integral_constant<Block, Block::UnitsSync>{});
        block(std::integral_constant<Block, Block::GlobalPtx>{});
        for (size_t v = 0; v < shapes.size(); ++v) {
          const uint32_t tile = shapes[v].row * shapes[v].rows;
          const uint32_t tiles = static_cast<uint32_t>(bytes / tile);
          for (uint32_t issuers : {1u, 4u}) {
            const uint32_t stages =
                std::min<uint32_t>(32, std::max<uint32_t>(4, 196608 / (tile * issuers)));
            const size_t smem = 128 + (size_t(tile) + 8) * stages * issuers;
            auto tile_row = [&](auto mode, const char* what) {
              constexpr int M = decltype(mode)::value;
              char label[64];
              std::snprintf(label, sizeof label, "tile_%uB_x%u%s", tile, issuers, what);
              run(label, [&](long it) {
                tile_kernel<M><<<sms, 32 * issuers, smem, st>>>(
                    sv[v].handle, me, dv[v].handle, pe, tiles, stages, it, 2000000000ull, error);
                PERF_LAUNCHED(label);
              });
            };
            tile_row(std::integral_constant<int, 0>{}, "");
            if (issuers == 1) {
              tile_row(std::integral_constant<int, 1>{}, "_bare");
              tile_row(std::integral_constant<int, 2>{}, "_getonly");
            }
          }
        }
      }
    }
    std::printf("# %d failed checks\n", failures);
  }
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  perf::tm_check(tmashmem_barrier_all(), "barrier");
  for (size_t v = 0; v < shapes.size(); ++v) {
    sv[v].destroy();
    dv[v].destroy();
  }
  tmashmem_free(dst);
  tmashmem_free(src);
  tmashmem_finalize();
  MPI_Finalize();
  return failures ? 1 : 0;
}
