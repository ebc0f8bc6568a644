// Kernels of the tile tests. One thread per CTA issues the TMA operations; the others help
// with dumps and ordinary stores. Every wait is bounded; a timeout is recorded in the
// KernelStatus and the CTA stops (the test then fails instead of hanging).
#include <cuda_runtime.h>

#include "common/constant_dispatch.h"
#include "tile_kernels.h"
#include "tmashmem/device/tile.cuh"

namespace tile_test {
namespace {

using tmashmem::Mbarrier;
using tmashmem::TensorHandle;
using tmashmem::TileCoord;
using tmashmem::TileReduceOp;

constexpr uint32_t kAlign = 1024;

__device__ uint8_t* aligned_smem(uint8_t* raw) { return tmashmem::align_smem<kAlign>(raw); }

__device__ TileCoord coord_of(const int32_t* c, uint32_t rank) {
  switch (rank) {
    case 1:
      return TileCoord(c[0]);
    case 2:
      return TileCoord(c[0], c[1]);
    case 3:
      return TileCoord(c[0], c[1], c[2]);
    case 4:
      return TileCoord(c[0], c[1], c[2], c[3]);
    default:
      return TileCoord(c[0], c[1], c[2], c[3], c[4]);
  }
}

__device__ void record_failure(KernelStatus* status, int32_t code, int32_t job) {
  if (atomicAdd(&status->failures, 1) == 0) {
    status->first_code = code;
    status->first_job = job;
  }
}

// Copies `bytes` (a multiple of 16) of shared memory to global memory with all threads.
__device__ void dump_tile(const uint8_t* smem, uint8_t* out, uint32_t bytes) {
  const uint4* s = reinterpret_cast<const uint4*>(smem);
  uint4* o = reinterpret_cast<uint4*>(out);
  for (uint32_t i = threadIdx.x; i < bytes / 16; i += blockDim.x) o[i] = s[i];
}

template <int Mode>  // 0: put, 1 + op: reduce
__device__ void issue_store(const TensorHandle& dst, int pe, const TileCoord& c,
                            const uint8_t* tile) {
  if constexpr (Mode == 0) tmashmem::tma_put_tile(dst, pe, c, tile);
  if constexpr (Mode == 1 + kAdd) tmashmem::tma_reduce_tile<TileReduceOp::add>(dst, pe, c, tile);
  if constexpr (Mode == 1 + kMin) tmashmem::tma_reduce_tile<TileReduceOp::min>(dst, pe, c, tile);
  if constexpr (Mode == 1 + kMax) tmashmem::tma_reduce_tile<TileReduceOp::max>(dst, pe, c, tile);
  if constexpr (Mode == 1 + kInc) tmashmem::tma_reduce_tile<TileReduceOp::inc>(dst, pe, c, tile);
  if constexpr (Mode == 1 + kDec) tmashmem::tma_reduce_tile<TileReduceOp::dec>(dst, pe, c, tile);
  if constexpr (Mode == 1 + kAnd)
    tmashmem::tma_reduce_tile<TileReduceOp::bit_and>(dst, pe, c, tile);
  if constexpr (Mode == 1 + kOr) tmashmem::tma_reduce_tile<TileReduceOp::bit_or>(dst, pe, c, tile);
  if constexpr (Mode == 1 + kXor)
    tmashmem::tma_reduce_tile<TileReduceOp::bit_xor>(dst, pe, c, tile);
}

template <int Mode>
__global__ void get_store_kernel(const __grid_constant__ TensorHandle src,
                                 const __grid_constant__ TensorHandle dst, const TileJob* jobs,
                                 int n_jobs, uint8_t* dump, uint64_t dump_stride,
                                 KernelStatus* status, uint64_t timeout_ns) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* tile = aligned_smem(smem_raw);
  __shared__ Mbarrier bar;
  __shared__ int failed;
  if (threadIdx.x == 0) {
    tmashmem::tma_acquire_tensor_maps(src);
    tmashmem::tma_acquire_tensor_maps(dst);
    bar.init(1);
    failed = 0;
  }
  __syncthreads();
  tmashmem::MbarrierPhase phase;
  for (int j = blockIdx.x; j < n_jobs; j += gridDim.x) {
    const TileJob& job = jobs[j];
    const TileCoord c = coord_of(job.coords, src.rank);
    if (threadIdx.x == 0) {
      tmashmem::tma_prefetch_tile(src, job.get_pe, c);  // a hint: exercised, not observable
      bar.arrive_expect_tx(src.box_bytes);
      tmashmem::tma_get_tile(tile, src, job.get_pe, c, bar);
      if (bar.wait(phase.parity, timeout_ns) != tmashmem::Status::Ok) {
        record_failure(status, kGetTimeout, j);
        failed = 1;
      }
    }
    phase.advance();
    __syncthreads();
    if (failed) break;
    if (job.out_index >= 0)
      dump_tile(tile, dump + static_cast<uint64_t>(job.out_index) * dump_stride, src.smem_bytes);
    __syncthreads();
    if (threadIdx.x == 0 && job.put_pe >= 0) {
      issue_store<Mode>(dst, job.put_pe, c, tile);
      tmashmem::bulk_wait_group_read<0>();  // the next get overwrites the tile
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) tmashmem::bulk_wait_group<0>();
}

__device__ uint64_t element_offset(const LayoutParams& l, const int64_t* e) {
  uint64_t off = static_cast<uint64_t>(e[0]) * l.elem_bytes;
  for (uint32_t i = 1; i < l.rank; ++i) off += static_cast<uint64_t>(e[i]) * l.strides[i - 1];
  return off;
}

__device__ uint64_t element_linear(const LayoutParams& l, const int64_t* e) {
  uint64_t lin = 0;
  for (int i = static_cast<int>(l.rank) - 1; i >= 0; --i)
    lin = lin * l.dims[i] + static_cast<uint64_t>(e[i]);
  return lin;
}

// Decomposes tile-local element index `k` (box order, innermost first) into the element
// coordinates; false when outside the tensor.
__device__ bool tile_element(const TensorHandle& t, const LayoutParams& l, const int32_t* coords,
                             uint32_t k, int64_t* e) {
  bool inside = true;
  for (uint32_t i = 0; i < t.rank; ++i) {
    e[i] = coords[i] + static_cast<int64_t>(k % t.box[i]);
    k /= t.box[i];
    if (e[i] < 0 || e[i] >= static_cast<int64_t>(l.dims[i])) inside = false;
  }
  return inside;
}

__global__ void put_signal_kernel(const __grid_constant__ tmashmem_ctx_t ctx,
                                  const __grid_constant__ TensorHandle dst, LayoutParams layout,
                                  const TileJob* jobs, int n_jobs, uint64_t* signal,
                                  uint32_t round) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* tile = aligned_smem(smem_raw);
  if (threadIdx.x == 0) tmashmem::tma_acquire_tensor_maps(dst);
  const uint32_t elements = dst.box_bytes / dst.elem_bytes;
  for (int j = blockIdx.x; j < n_jobs; j += gridDim.x) {
    const TileJob& job = jobs[j];
    // Ordinary stores into the tile, then each writer fences for the async proxy.
    for (uint32_t k = threadIdx.x; k < elements; k += blockDim.x) {
      int64_t e[5] = {0, 0, 0, 0, 0};
      tile_element(dst, layout, job.coords, k, e);
      const uint64_t lin = element_linear(layout, e);
      for (uint32_t b = 0; b < dst.elem_bytes; ++b)
        tile[k * dst.elem_bytes + b] = pattern_byte(dst.my_pe, lin, b, round);
    }
    tmashmem::fence_proxy_async_shared();
    __syncthreads();
    if (threadIdx.x == 0)
      tmashmem::tma_put_tile_signal(ctx, dst, job.put_pe, coord_of(job.coords, dst.rank), tile,
                                    signal + dst.my_pe, 1, tmashmem::SignalOp::Add);
    __syncthreads();  // the tile is free again: tma_put_tile_signal waited for completion
  }
}

__device__ uint64_t load_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__global__ void consume_kernel(const uint8_t* slots, uint64_t slot_bytes, LayoutParams layout,
                               const TileJob* tiles, int n_tiles, const uint64_t* signal,
                               const uint64_t* expected, int n_pes, uint32_t round,
                               KernelStatus* status, uint64_t timeout_ns) {
  __shared__ int timed_out;
  if (threadIdx.x == 0) {
    timed_out = 0;
    const uint64_t start = tmashmem::detail::global_timer_ns();
    for (int p = 0; p < n_pes && !timed_out; ++p)
      while (load_acquire_sys(signal + p) < expected[p])
        if (tmashmem::detail::global_timer_ns() - start > timeout_ns) {
          record_failure(status, kSignalTimeout, p);
          timed_out = 1;
          break;
        }
  }
  __syncthreads();  // the acquiring thread's view extends to the block through the barrier
  if (timed_out) return;
  uint32_t box_elements = 1;
  for (uint32_t i = 0; i < layout.rank; ++i) box_elements *= layout.box[i];
  for (int p = 0; p < n_pes; ++p) {
    const uint8_t* base = slots + static_cast<uint64_t>(p) * slot_bytes;
    for (int j = 0; j < n_tiles; ++j) {
      for (uint32_t k = threadIdx.x; k < box_elements; k += blockDim.x) {
        int64_t e[5] = {0, 0, 0, 0, 0};
        uint32_t rest = k;
        bool inside = true;
        for (uint32_t i = 0; i < layout.rank; ++i) {
          e[i] = tiles[j].coords[i] + static_cast<int64_t>(rest % layout.box[i]);
          rest /= layout.box[i];
          if (e[i] < 0 || e[i] >= static_cast<int64_t>(layout.dims[i])) inside = false;
        }
        if (!inside) continue;
        const uint64_t off = element_offset(layout, e), lin = element_linear(layout, e);
        for (uint32_t b = 0; b < layout.elem_bytes; ++b)
          if (base[off + b] != pattern_byte(p, lin, b, round)) {
            atomicAdd(&status->mismatches, 1);
            record_failure(status, kDataMismatch, j);
          }
      }
    }
  }
}

__global__ void multicast_kernel(const __grid_constant__ TensorHandle src, const TileJob* jobs,
                                 uint8_t* dump, uint64_t dump_stride, KernelStatus* status,
                                 uint64_t timeout_ns) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* slots = aligned_smem(smem_raw);
  __shared__ Mbarrier bar;
  __shared__ int failed;
  const uint32_t rank = tmashmem::cluster_cta_rank(), n = tmashmem::cluster_num_ctas();
  const uint32_t slot_bytes = (src.smem_bytes + kAlign - 1) / kAlign * kAlign;
  const uint32_t cluster_id = blockIdx.x / n;
  if (threadIdx.x == 0) {
    tmashmem::tma_acquire_tensor_maps(src);
    bar.init(1);
    failed = 0;
  }
  tmashmem::cluster_sync();  // every receiver's barrier exists before any multicast
  if (threadIdx.x == 0) {
    bar.arrive_expect_tx(n * src.box_bytes);
    const TileJob& job = jobs[cluster_id * n + rank];
    tmashmem::tma_get_tile_multicast(slots + rank * slot_bytes, src, job.get_pe,
                                     coord_of(job.coords, src.rank), bar,
                                     static_cast<uint16_t>((1u << n) - 1));
    if (bar.wait(0, timeout_ns) != tmashmem::Status::Ok) {
      record_failure(status, kMulticastTimeout, static_cast<int32_t>(blockIdx.x));
      failed = 1;
    }
  }
  __syncthreads();
  if (!failed)
    for (uint32_t s = 0; s < n; ++s)
      dump_tile(slots + s * slot_bytes,
                dump + (static_cast<uint64_t>(cluster_id * n + rank) * n + s) * dump_stride,
                src.smem_bytes);
  tmashmem::cluster_sync();  // no CTA exits while another's multicast may still target it
}

__global__ void dsmem_kernel(uint32_t bytes, uint8_t* out, KernelStatus* status,
                             uint64_t timeout_ns) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* src = aligned_smem(smem_raw);
  uint8_t* dst = src + (bytes + kAlign - 1) / kAlign * kAlign;
  __shared__ Mbarrier bar;
  __shared__ int failed;
  const uint32_t rank = tmashmem::cluster_cta_rank(), n = tmashmem::cluster_num_ctas();
  const uint32_t cluster_id = blockIdx.x / n;
  const int me = static_cast<int>(cluster_id * n + rank);
  for (uint32_t i = threadIdx.x; i < bytes; i += blockDim.x) {
    src[i] = pattern_byte(me, i, 0, 0);
    dst[i] = 0;
  }
  tmashmem::fence_proxy_async_shared();  // every writer, for the async-proxy read of src
  if (threadIdx.x == 0) {
    bar.init(1);
    failed = 0;
  }
  tmashmem::cluster_sync();  // barriers initialised and sources written everywhere
  if (threadIdx.x == 0) {
    bar.arrive_expect_tx(bytes);
    tmashmem::dsmem_copy_to_cta(dst, src, bytes, (rank + 1) % n, bar);
    if (bar.wait(0, timeout_ns) != tmashmem::Status::Ok) {
      record_failure(status, kDsmemTimeout, me);
      failed = 1;
    }
  }
  __syncthreads();
  if (!failed)
    for (uint32_t i = threadIdx.x; i < bytes; i += blockDim.x)
      out[static_cast<uint64_t>(me) * bytes + i] = dst[i];
  tmashmem::cluster_sync();  // the sender's source stays alive until every copy landed
}

size_t tile_smem(uint32_t box_bytes, uint32_t tiles) {
  return kAlign + static_cast<size_t>(tiles) * ((box_bytes + kAlign - 1) / kAlign * kAlign);
}

template <typename Kernel>
cudaError_t allow_smem(Kernel kernel, size_t bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

template <int Mode>
cudaError_t launch_store(const TensorHandle& src, const TensorHandle& dst, const TileJob* jobs,
                         int n_jobs, uint8_t* dump, uint64_t dump_stride, KernelStatus* status,
                         int blocks, uint64_t timeout_ns) {
  const size_t smem = tile_smem(src.smem_bytes, 1);
  cudaError_t e = allow_smem(get_store_kernel<Mode>, smem);
  if (e != cudaSuccess) return e;
  get_store_kernel<Mode>
      <<<blocks, 128, smem>>>(src, dst, jobs, n_jobs, dump, dump_stride, status, timeout_ns);
  return cudaGetLastError();
}

template <typename Kernel, typename... Args>
cudaError_t launch_clusters(Kernel kernel, int cluster, int n_clusters, size_t smem, Args... args) {
  cudaError_t e = allow_smem(kernel, smem);
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(cluster * n_clusters));
  config.blockDim = dim3(128);
  config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace

cudaError_t launch_get_put(const tmashmem_tensor_handle_t& src, const tmashmem_tensor_handle_t& dst,
                           const TileJob* jobs, int n_jobs, uint8_t* dump, uint64_t dump_stride,
                           KernelStatus* status, int blocks, uint64_t timeout_ns) {
  return launch_store<0>(src, dst, jobs, n_jobs, dump, dump_stride, status, blocks, timeout_ns);
}

cudaError_t launch_get_reduce(ReduceOpId op, const tmashmem_tensor_handle_t& src,
                              const tmashmem_tensor_handle_t& dst, const TileJob* jobs, int n_jobs,
                              KernelStatus* status, int blocks, uint64_t timeout_ns) {
  return tmashmem_test::dispatch_constant<kXor + 1>(op, cudaErrorInvalidValue, [&](auto k) {
    return launch_store<1 + decltype(k)::value>(src, dst, jobs, n_jobs, nullptr, 0, status, blocks,
                                                timeout_ns);
  });
}

cudaError_t launch_put_signal(const tmashmem_ctx_t& ctx, const tmashmem_tensor_handle_t& dst,
                              LayoutParams layout, const TileJob* jobs, int n_jobs,
                              uint64_t* signal, uint32_t round, int blocks) {
  const size_t smem = tile_smem(dst.smem_bytes, 1);
  cudaError_t e = allow_smem(put_signal_kernel, smem);
  if (e != cudaSuccess) return e;
  put_signal_kernel<<<blocks, 128, smem>>>(ctx, dst, layout, jobs, n_jobs, signal, round);
  return cudaGetLastError();
}

cudaError_t launch_consume(const uint8_t* slots, uint64_t slot_bytes, LayoutParams layout,
                           const TileJob* tiles, int n_tiles, const uint64_t* signal,
                           const uint64_t* expected, int n_pes, uint32_t round,
                           KernelStatus* status, uint64_t timeout_ns) {
  consume_kernel<<<1, 256>>>(slots, slot_bytes, layout, tiles, n_tiles, signal, expected, n_pes,
                             round, status, timeout_ns);
  return cudaGetLastError();
}

cudaError_t launch_multicast(const tmashmem_tensor_handle_t& src, const TileJob* jobs, int cluster,
                             int n_clusters, uint8_t* dump, uint64_t dump_stride,
                             KernelStatus* status, uint64_t timeout_ns) {
  const size_t smem = tile_smem(src.smem_bytes, static_cast<uint32_t>(cluster));
  return launch_clusters(multicast_kernel, cluster, n_clusters, smem, src, jobs, dump, dump_stride,
                         status, timeout_ns);
}

cudaError_t launch_dsmem(int cluster, int n_clusters, uint32_t bytes, uint8_t* out,
                         KernelStatus* status, uint64_t timeout_ns) {
  const size_t smem = tile_smem(bytes, 2);
  return launch_clusters(dsmem_kernel, cluster, n_clusters, smem, bytes, out, status, timeout_ns);
}

}  // namespace tile_test
