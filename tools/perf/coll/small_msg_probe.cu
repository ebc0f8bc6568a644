// tmashmem-small-msg-probe: SM-driven block put and TMA tile put beside a plain SM copy
// kernel, 64 KiB to 1 MiB, the same SM counts in the same run (2 PEs: PE 0 puts into PE 1's
// heap, PE 1 waits). Every variant runs `iters` back-to-back copies of the whole size in
// one kernel, as tools/perf's bandwidth rows do, and its destination is checked after the
// timed repetitions. Beside the library's calls: the plain copy with a barrier per copy and
// with explicit global-space accesses (what a block-scope put can reach), and the tile
// pipeline of tools/perf/tile_kernels.cuh in two loops: its own (tile, stage and parity by
// 64-bit division and modulo every tile) and one that counts them instead, with and
// without tma_put_tile's proxy fence, over tile sizes (docs/performance.md, "Small
// messages", has the findings).
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
#include "tools/perf/perf_cuda.cuh"

namespace {

void die(const std::string& what) {
  std::fprintf(stderr, "small-msg-probe: %s\n", what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}
void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}
void check_tm(tmashmem_status_t s, const char* what) {
  if (s != TMASHMEM_SUCCESS) die(std::string(what) + ": " + tmashmem_last_error());
}

// The block-put variants, in kBlockNames' order. The plain copy is tools/perf's own
// (sm_copy_kernel), the reference of the bandwidth rows.
enum class Block {
  Library,    // tmashmem::putmem_block
  CopyLoop,   // the library's copy loop (detail::copy_bytes) without the barrier
  GlobalPtx,  // one unit per step, ld.global.v4 / st.global.v4, + barrier
};
const char* const kBlockNames[] = {"putmem_block", "copy_bytes", "ld/st.global+sync"};

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
    if constexpr (V == Block::GlobalPtx) global_ptx_copy(dp, sp, n);
  }
}

// The tile pipeline of tools/perf/tile_kernels.cuh: tile get of this PE's tile into shared
// memory, tile put of it into the peer's tensor, `stages` deep. kCounted false: its own
// loop (tile, stage and parity from k by 64-bit division and modulo, every tile); true:
// the same sequence counted. kLibPut: tma_put_tile (which fences the generic proxy first)
// or the bare tensor store. kWindow: how many puts may still read shared memory when a
// stage is refilled (1 in the benchmark).
template <bool kCounted, bool kLibPut, int kWindow>
__global__ void tile_kernel(const __grid_constant__ tmashmem_tensor_handle_t src, int src_pe,
                            const __grid_constant__ tmashmem_tensor_handle_t dst, int dst_pe,
                            uint32_t tiles, uint32_t stages, long iters, uint64_t timeout_ns,
                            int* error) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* base = tmashmem::align_smem<128>(smem_raw);
  const uint32_t box_bytes = src.box_bytes;
  auto* bars = reinterpret_cast<tmashmem::Mbarrier*>(base + size_t(box_bytes) * stages);
  const uint32_t box_rows = src.box[1];
  const uint32_t each = (tiles + gridDim.x - 1) / gridDim.x;
  const uint32_t first = min(tiles, blockIdx.x * each);
  const uint32_t n = min(tiles, first + each) - first;
  if (threadIdx.x != 0 || n == 0) return;
  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  for (uint32_t s = 0; s < stages; ++s) bars[s].init(1);
  const long total = long(n) * iters;
  auto put = [&](const unsigned char* tile, tmashmem::TileCoord c) {
    if constexpr (kLibPut) {
      tmashmem::tma_put_tile(dst, dst_pe, c, tile);
    } else {
      tmashmem::detail::tensor_store<2>(tmashmem::detail::tensor_map_operand(dst, dst_pe),
                                        tmashmem::detail::smem_address(tile), c.c);
      tmashmem::detail::bulk_commit();
    }
  };
  auto at = [&](uint32_t t) {
    return tmashmem::TileCoord(0, static_cast<int32_t>((first + t) * box_rows));
  };
  if constexpr (kCounted) {
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
      put(base + size_t(stage) * box_bytes, at(put_tile));
      if (k >= kWindow && issued < total) {
        tmashmem::bulk_wait_group_read<kWindow>();
        get_next();
      }
      if (++put_tile == n) put_tile = 0;
      if (++stage == stages) stage = 0, parity ^= 1u;
    }
  } else {
    auto row = [&](long k) { return at(static_cast<uint32_t>(k % long(n))); };
    auto get = [&](long k) {
      const uint32_t s = static_cast<uint32_t>(k % stages);
      bars[s].arrive_expect_tx(box_bytes);
      tmashmem::tma_get_tile(base + size_t(s) * box_bytes, src, src_pe, row(k), bars[s]);
    };
    for (long k = 0; k < total && k < static_cast<long>(stages); ++k) get(k);
    for (long k = 0; k < total; ++k) {
      const uint32_t s = static_cast<uint32_t>(k % stages);
      if (bars[s].wait(static_cast<uint32_t>((k / stages) & 1), timeout_ns) !=
          tmashmem::Status::Ok) {
        *error = 1;
        tmashmem::quiet();
        return;
      }
      put(base + size_t(s) * box_bytes, row(k));
      const long freed = k - kWindow;
      if (freed >= 0 && freed + static_cast<long>(stages) < total) {
        tmashmem::bulk_wait_group_read<kWindow>();
        get(freed + stages);
      }
    }
  }
  tmashmem::quiet();
  for (uint32_t s = 0; s < stages; ++s) bars[s].inval();
}

struct View {
  tmashmem_tensor_t t = nullptr;
  tmashmem_tensor_handle_t h{};
  View(void* p, size_t bytes, uint32_t row_bytes, uint32_t box_rows) {
    tmashmem_tensor_desc_t d;
    const uint64_t dims[2] = {row_bytes / 4, bytes / row_bytes};
    const uint32_t box[2] = {row_bytes / 4, box_rows};
    check_tm(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U32, 2, dims, box), "desc_init");
    d.l2_promotion = TMASHMEM_L2_PROMOTION_256B;
    check_tm(tmashmem_tensor_view(p, &d, &t), "tensor_view");
    check_tm(tmashmem_tensor_handle(t, &h), "tensor_handle");
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  check_tm(tmashmem_init(), "tmashmem_init");
  const int me = tmashmem_my_pe(), npes = tmashmem_n_pes();
  const int pe = npes > 1 ? 1 : 0;
  cuda(cudaSetDevice(tmashmem_device()), "cudaSetDevice");
  int sms_all = 0;
  cuda(cudaDeviceGetAttribute(&sms_all, cudaDevAttrMultiProcessorCount, tmashmem_device()), "sms");
  const size_t max_bytes = size_t(1) << 20, guard = 4096;
  char* src = static_cast<char*>(tmashmem_malloc(max_bytes + guard));
  char* dst = static_cast<char*>(tmashmem_malloc(max_bytes + guard));
  if (!src || !dst) die("tmashmem_malloc");
  // Tile views: rows of 512 B (512 B tiles) and of 1 KiB (1, 4, 8, 32 KiB tiles).
  struct Shape {
    uint32_t row, rows;
  };
  const std::vector<Shape> shapes = {{512, 1}, {1024, 1}, {1024, 4}, {1024, 8}, {1024, 32}};
  std::vector<View> sv, dv;
  for (const Shape& s : shapes) {
    sv.emplace_back(src, max_bytes, s.row, s.rows);
    dv.emplace_back(dst, max_bytes, s.row, s.rows);
  }
  tmashmem_ctx_t ctx;
  check_tm(tmashmem_device_ctx(&ctx), "device_ctx");
  char* peer_dst = static_cast<char*>(tmashmem_ptr(dst, pe));
  check_tm(tmashmem_barrier_all(), "barrier");
  int failures = 0;
  if (me == 0) {
    std::vector<unsigned char> host(max_bytes), back(max_bytes + guard);
    for (size_t i = 0; i < max_bytes; ++i) host[i] = static_cast<unsigned char>(i * 131 + (i >> 9));
    cuda(cudaMemcpy(src, host.data(), max_bytes, cudaMemcpyHostToDevice), "fill");
    int* error = nullptr;
    cuda(cudaMalloc(&error, sizeof(int)), "malloc");
    cuda(cudaMemset(error, 0, sizeof(int)), "memset");
    cudaStream_t st;
    cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    cudaEvent_t a, b;
    cuda(cudaEventCreate(&a), "event");
    cuda(cudaEventCreate(&b), "event");
    const int max_smem = 200 * 1024;
    auto allow_smem = [&](auto k) {
      cuda(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem), "attr");
    };
    allow_smem(tile_kernel<false, true, 1>);
    allow_smem(tile_kernel<true, true, 1>);
    allow_smem(tile_kernel<true, false, 1>);
    allow_smem(tile_kernel<true, true, 4>);
    allow_smem(tile_kernel<true, false, 4>);
    std::printf(
        "# small-msg-probe: %d PEs, PE 0 -> PE %d, 1024 threads (block) / 1 thread (tile) per CTA, "
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
          cuda(cudaMemsetAsync(peer_dst, 0xA5, bytes + guard, st), "poison");
          launch(iters / 10);  // warm-up
          std::vector<double> us;
          for (int r = 0; r < reps; ++r) {
            cuda(cudaEventRecord(a, st), "record");
            launch(iters);
            cuda(cudaEventRecord(b, st), "record");
            cuda(cudaEventSynchronize(b), what.c_str());
            float ms = 0;
            cuda(cudaEventElapsedTime(&ms, a, b), "elapsed");
            us.push_back(1000.0 * ms / iters);
          }
          std::sort(us.begin(), us.end());
          const double t = us[us.size() / 2];
          const double gbps = bytes / (t * 1e3);
          if (plain_gbps == 0) plain_gbps = gbps;
          int err = 0;
          cuda(cudaMemcpy(&err, error, sizeof(int), cudaMemcpyDeviceToHost), "error");
          cuda(cudaMemset(error, 0, sizeof(int)), "error reset");
          cuda(cudaMemcpy(back.data(), peer_dst, bytes + guard, cudaMemcpyDeviceToHost), "back");
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
            cuda(cudaGetLastError(), name);
          });
        };
        run("plain", [&](long it) {
          perf::sm_copy_kernel<<<sms, 1024, 0, st>>>(peer_dst, src, bytes, it);
          cuda(cudaGetLastError(), "sm_copy_kernel");
        });
        block(std::integral_constant<Block, Block::Library>{});
        block(std::integral_constant<Block, Block::CopyLoop>{});
        block(std::integral_constant<Block, Block::GlobalPtx>{});
        for (size_t v = 0; v < shapes.size(); ++v) {
          const uint32_t tile = shapes[v].row * shapes[v].rows;
          const uint32_t tiles = static_cast<uint32_t>(bytes / tile);
          const uint32_t stages = std::min<uint32_t>(32, std::max<uint32_t>(6, 196608 / tile));
          const size_t smem = 128 + size_t(tile) * stages + 8 * stages;
          auto tile_run = [&](auto counted, auto lib, auto window) {
            constexpr bool C = decltype(counted)::value, P = decltype(lib)::value;
            constexpr int W = decltype(window)::value;
            char label[64];
            std::snprintf(label, sizeof label, "tile%s%s_%uB_w%d", C ? "_counted" : "",
                          P ? "" : "_nofence", tile, W);
            run(label, [&](long it) {
              tile_kernel<C, P, W><<<sms, 1, smem, st>>>(sv[v].h, me, dv[v].h, pe, tiles, stages,
                                                         it, 2000000000ull, error);
              cuda(cudaGetLastError(), label);
            });
          };
          using F = std::false_type;
          using T = std::true_type;
          using W1 = std::integral_constant<int, 1>;
          using W4 = std::integral_constant<int, 4>;
          tile_run(F{}, T{}, W1{});
          tile_run(T{}, T{}, W1{});
          tile_run(T{}, F{}, W1{});
          tile_run(T{}, T{}, W4{});
          tile_run(T{}, F{}, W4{});
        }
      }
    }
    std::printf("# %d failed checks\n", failures);
  }
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  check_tm(tmashmem_barrier_all(), "barrier");
  for (size_t v = 0; v < shapes.size(); ++v) {
    check_tm(tmashmem_tensor_destroy(sv[v].t), "destroy");
    check_tm(tmashmem_tensor_destroy(dv[v].t), "destroy");
  }
  tmashmem_free(dst);
  tmashmem_free(src);
  tmashmem_finalize();
  MPI_Finalize();
  return failures ? 1 : 0;
}
