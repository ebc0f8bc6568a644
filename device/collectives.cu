// The on-stream collectives' kernels (tmashmem/collectives.h), made of the device
// building blocks (tmashmem/device/collectives/), registered with the runtime as its
// CollectiveKernels table (runtime/collectives_kernels.h) while libtmashmem loads.
//
// One CTA per signal slot: CTA b runs slot b of the signal pad's collective region, part b
// of gridDim.x of the data. The epochs live in the pad and are read when the kernel runs,
// so captured launches replay correctly. A failed wait has printed its message (PE, call,
// slot, peer, epoch); the kernel then traps, so the error surfaces at the stream's next
// synchronisation instead of leaving wrong data behind silently.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/collectives_kernels.h"
#include "tmashmem/device/collectives/all.cuh"

namespace tmashmem {
namespace {

constexpr int kThreads = 512;
// Bulk-copy staging per CTA (kCollBulkIssuers shares) plus slack for 16-byte alignment.
constexpr uint32_t kScratchBytes = 32u * 1024u;
constexpr uint32_t kSmemBytes = kScratchBytes + 16u;

__device__ __forceinline__ CollScratch scratch() {
  extern __shared__ uint8_t smem[];
  return CollScratch{align_smem<16>(smem), kScratchBytes};
}

__device__ __forceinline__ void finish(const CollArgs& a, Status s, const char* what) {
  if (s == Status::Ok) return;
  if (threadIdx.x == 0)
    printf("[tmashmem PE %d] %s: CTA %d ended with status %s; trapping\n", a.ctx.my_pe, what,
           static_cast<int>(blockIdx.x), status_name(s));
  __trap();
}

__device__ __forceinline__ CollCopy copy_of(const CollArgs& a) {
  return a.bulk ? CollCopy::Bulk : CollCopy::Sm;
}
__device__ __forceinline__ CollMode mode_of(const CollArgs& a) {
  return a.push ? CollMode::Push : CollMode::Pull;
}

__global__ void __launch_bounds__(kThreads) allgather_kernel(const __grid_constant__ CollArgs a) {
  const char* what = "tmashmem_allgather_on_stream";
  const int b = static_cast<int>(blockIdx.x);
  finish(a,
         allgather_block(a.ctx, coll_pad_state(a.ctx), b, a.dest, a.src, a.size, b, gridDim.x,
                         mode_of(a), copy_of(a), scratch(), a.timeout_ns, what),
         what);
}

__global__ void __launch_bounds__(kThreads) alltoall_kernel(const __grid_constant__ CollArgs a) {
  const char* what = "tmashmem_alltoall_on_stream";
  const int b = static_cast<int>(blockIdx.x);
  finish(a,
         alltoall_block(a.ctx, coll_pad_state(a.ctx), b, a.dest, a.src, a.size, b, gridDim.x,
                        mode_of(a), copy_of(a), scratch(), a.timeout_ns, what),
         what);
}

__global__ void __launch_bounds__(kThreads) alltoallv_kernel(const __grid_constant__ CollArgs a) {
  const char* what = "tmashmem_alltoallv_on_stream";
  const int b = static_cast<int>(blockIdx.x);
  finish(a,
         alltoallv_block(a.ctx, coll_pad_state(a.ctx), b, a.dest, a.dest_bytes, a.src, a.src_bytes,
                         a.send_counts, a.send_offsets, a.recv_offsets, b, gridDim.x, copy_of(a),
                         scratch(), a.timeout_ns, what),
         what);
}

__global__ void __launch_bounds__(kThreads) broadcast_kernel(const __grid_constant__ CollArgs a) {
  const char* what = "tmashmem_broadcast_on_stream";
  const int b = static_cast<int>(blockIdx.x);
  finish(a,
         broadcast_block(a.ctx, coll_pad_state(a.ctx), b, a.dest, a.src, a.size, a.root, b,
                         gridDim.x, copy_of(a), scratch(), a.timeout_ns, what),
         what);
}

template <tmashmem_dtype_t D, RedOp Op>
__global__ void __launch_bounds__(kThreads)
    reduce_scatter_kernel(const __grid_constant__ CollArgs a) {
  const char* what = "tmashmem_reduce_scatter_on_stream";
  const int b = static_cast<int>(blockIdx.x);
  finish(a,
         reduce_scatter_block<D, Op>(a.ctx, coll_pad_state(a.ctx), b, a.dest, a.src, a.size, b,
                                     gridDim.x, a.timeout_ns, what),
         what);
}

template <tmashmem_dtype_t D, RedOp Op>
__global__ void __launch_bounds__(kThreads) allreduce_kernel(const __grid_constant__ CollArgs a) {
  const char* what = "tmashmem_allreduce_on_stream";
  const int b = static_cast<int>(blockIdx.x);
  finish(a,
         allreduce_block<D, Op>(a.ctx, coll_pad_state(a.ctx), b, a.dest, a.src, a.size,
                                static_cast<AllreduceAlgo>(a.algo), b, gridDim.x, copy_of(a),
                                scratch(), a.timeout_ns, what),
         what);
}

CudaOutcome outcome(cudaError_t error) {
  CudaOutcome o;
  o.code = static_cast<int>(error);
  if (error != cudaSuccess) {
    o.name = cudaGetErrorName(error);
    o.text = cudaGetErrorString(error);
    o.out_of_memory = error == cudaErrorMemoryAllocation;
  }
  return o;
}

using Kernel = void (*)(CollArgs);

template <tmashmem_dtype_t D>
Kernel reduce_kernel(CollKind kind, int op) {
  const bool rs = kind == CollKind::ReduceScatter;
  switch (op) {
    case TMASHMEM_REDUCE_MIN:
      return rs ? reduce_scatter_kernel<D, RedOp::Min> : allreduce_kernel<D, RedOp::Min>;
    case TMASHMEM_REDUCE_MAX:
      return rs ? reduce_scatter_kernel<D, RedOp::Max> : allreduce_kernel<D, RedOp::Max>;
    default:
      return rs ? reduce_scatter_kernel<D, RedOp::Sum> : allreduce_kernel<D, RedOp::Sum>;
  }
}

// The host half checked kind, dtype and op; anything else here is an internal error.
Kernel kernel_for(const CollArgs& a) {
  switch (a.kind) {
    case CollKind::Allgather:
      return allgather_kernel;
    case CollKind::Alltoall:
      return alltoall_kernel;
    case CollKind::Alltoallv:
      return alltoallv_kernel;
    case CollKind::Broadcast:
      return broadcast_kernel;
    case CollKind::ReduceScatter:
    case CollKind::Allreduce:
      switch (a.dtype) {
        case TMASHMEM_DTYPE_F32:
          return reduce_kernel<TMASHMEM_DTYPE_F32>(a.kind, a.op);
        case TMASHMEM_DTYPE_F16:
          return reduce_kernel<TMASHMEM_DTYPE_F16>(a.kind, a.op);
        case TMASHMEM_DTYPE_BF16:
          return reduce_kernel<TMASHMEM_DTYPE_BF16>(a.kind, a.op);
        case TMASHMEM_DTYPE_I32:
          return reduce_kernel<TMASHMEM_DTYPE_I32>(a.kind, a.op);
        default:
          return nullptr;
      }
  }
  return nullptr;
}

CudaOutcome launch(const CollArgs& args, CUstream stream) {
  const Kernel k = kernel_for(args);
  if (k == nullptr) return outcome(cudaErrorInvalidValue);
  k<<<args.n_blocks, kThreads, kSmemBytes, stream>>>(args);
  return outcome(cudaGetLastError());
}

const CollectiveKernels kKernels = {launch};

struct Registration {
  Registration() { register_collective_kernels(&kKernels); }
} g_registration;

}  // namespace
}  // namespace tmashmem
