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

#include "device/cuda_outcome.h"
#include "runtime/collectives_kernels.h"
#include "tmashmem/device/collectives/all.cuh"

#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "device/collectives.cu launches through the legacy-stream cuLaunchKernel (see Launchable)"
#endif

namespace tmashmem {
namespace {

constexpr int kThreads = 512;
// Every copy moves with the SMs' 16-byte loads and stores (CollCopy::Sm), at every size:
// against the bulk copies through 32 KiB of shared staging per CTA that slices of 64 KiB
// and more used before, all-gather, all-to-all and broadcast took 0.51-0.71 of the time from
// 4 MiB to 256 MiB, and all-reduce 0.74-0.82 from 16 MiB, at 2 and 4 PEs (docs/runs.md,
// "Eighth session"). So the kernels need no dynamic shared memory.
constexpr CollCopy kHow = CollCopy::Sm;
constexpr CollScratch kNoScratch{nullptr, 0};

__device__ __forceinline__ void finish(const CollArgs& a, Status s, const char* what) {
  if (s == Status::Ok) return;
  if (threadIdx.x == 0)
    printf("[tmashmem PE %d] %s: CTA %d ended with status %s; trapping\n", a.ctx.my_pe, what,
           static_cast<int>(blockIdx.x), status_name(s));
  __trap();
}

// The public call of each CollKind, in CollKind's order (the kernels' messages name it).
__device__ constexpr const char* kCallNames[] = {
    "tmashmem_allgather_on_stream", "tmashmem_reduce_scatter_on_stream",
    "tmashmem_allreduce_on_stream", "tmashmem_alltoall_on_stream",
    "tmashmem_alltoallv_on_stream", "tmashmem_broadcast_on_stream"};

// The LL form of kind K (never alltoallv; all-reduce: one-shot only, as the host chose).
template <CollKind K, tmashmem_dtype_t D, RedOp Op>
__device__ __forceinline__ Status low_latency_step(const CollArgs& a, const CollLl& ll, int b,
                                                   int parts, const char* what) {
  if constexpr (K == CollKind::Allgather)
    return allgather_ll_block(a.ctx, ll, b, a.dest, a.src, a.size, b, parts, a.timeout_ns, what);
  else if constexpr (K == CollKind::Alltoall)
    return alltoall_ll_block(a.ctx, ll, b, a.dest, a.src, a.size, b, parts, a.timeout_ns, what);
  else if constexpr (K == CollKind::Broadcast)
    return broadcast_ll_block(a.ctx, ll, b, a.dest, a.src, a.size, a.root, b, parts, a.timeout_ns,
                              what);
  else if constexpr (K == CollKind::ReduceScatter)
    return coll_reduce_ll_block<D, Op>(a.ctx, ll, b, a.dest, a.src, a.size, a.size, b, parts,
                                       a.timeout_ns, what);
  else if constexpr (K == CollKind::Allreduce)
    return coll_reduce_ll_block<D, Op>(a.ctx, ll, b, a.dest, a.src, a.size, 0, b, parts,
                                       a.timeout_ns, what);
  return Status::Unreachable;
}

// The one kernel of every collective: CTA b runs slot b on part b of gridDim.x. D and Op
// matter to the reducing kinds only.
template <CollKind K, tmashmem_dtype_t D = TMASHMEM_DTYPE_F32, RedOp Op = RedOp::Sum>
__global__ void __launch_bounds__(kThreads) coll_kernel(const __grid_constant__ CollArgs a) {
  const char* what = kCallNames[static_cast<int>(K)];
  const int b = static_cast<int>(blockIdx.x), parts = static_cast<int>(gridDim.x);
  const CollState st = coll_pad_state(a.ctx);
  const CollMode mode = a.push ? CollMode::Push : CollMode::Pull;
  const CollStaging stg{static_cast<char*>(a.staging), a.staging_slot_bytes};
  const CollLl ll = coll_ll_state(a.ll_state, a.ll_bytes, kCollPadSlots, a.ctx.n_pes);
  Status s = Status::Ok;
  if (K != CollKind::Alltoallv && a.low_latency)
    s = low_latency_step<K, D, Op>(a, ll, b, parts, what);
  else if constexpr (K == CollKind::Allgather)
    s = a.staged ? allgather_staged_block(a.ctx, st, b, stg, a.dest, a.src, a.size, b, parts,
                                          a.timeout_ns, what)
                 : allgather_block(a.ctx, st, b, a.dest, a.src, a.size, b, parts, mode, kHow,
                                   kNoScratch, a.timeout_ns, what);
  else if constexpr (K == CollKind::Alltoall)
    s = a.staged ? alltoall_staged_block(a.ctx, st, b, stg, a.dest, a.src, a.size, b, parts,
                                         a.timeout_ns, what)
                 : alltoall_block(a.ctx, st, b, a.dest, a.src, a.size, b, parts, mode, kHow,
                                  kNoScratch, a.timeout_ns, what);
  else if constexpr (K == CollKind::Alltoallv)
    s = alltoallv_block(a.ctx, st, b, a.dest, a.dest_bytes, a.src, a.src_bytes, a.send_counts,
                        a.send_offsets, a.recv_offsets, b, parts, kHow, kNoScratch, a.timeout_ns,
                        what);
  else if constexpr (K == CollKind::Broadcast)
    s = a.staged ? broadcast_staged_block(a.ctx, st, b, stg, a.dest, a.src, a.size, a.root, b,
                                          parts, a.timeout_ns, what)
                 : broadcast_block(a.ctx, st, b, a.dest, a.src, a.size, a.root, b, parts, kHow,
                                   kNoScratch, a.timeout_ns, what);
  else if constexpr (K == CollKind::ReduceScatter)
    s = a.staged ? coll_reduce_staged_block<D, Op>(a.ctx, st, b, stg, a.dest, a.src, a.size, a.size,
                                                   b, parts, a.timeout_ns, what)
                 : reduce_scatter_block<D, Op>(a.ctx, st, b, a.dest, a.src, a.size, b, parts,
                                               a.timeout_ns, what);
  else if (a.staged)  // all-reduce, one-shot
    s = coll_reduce_staged_block<D, Op>(a.ctx, st, b, stg, a.dest, a.src, a.size, 0, b, parts,
                                        a.timeout_ns, what);
  else
    s = allreduce_block<D, Op>(a.ctx, st, b, a.dest, a.src, a.size,
                               static_cast<AllreduceAlgo>(a.algo), b, parts, kHow, kNoScratch,
                               a.timeout_ns, what);
  finish(a, s, what);
}

using Kernel = void (*)(CollArgs);

// A kernel and its context-independent handle (cudaGetKernel), which the driver's
// cuLaunchKernel takes as it is. Where an enqueued small collective waits for the host's
// launch, the driver's entry point skips the runtime's own per-launch work: 0.04-0.38 us less
// host time per launch than <<<>>> (docs/runs.md, "Nineteenth session"). handle nullptr:
// launched with <<<>>>, for the rest of the process.
//
// Stream 0 means the legacy default stream on both paths: the driver table's cuLaunchKernel
// is resolved without CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (runtime/driver.cpp), and
// this file must not be built with per-thread default streams, or the launches and the
// runtime's copies on stream 0 would no longer be ordered.
struct Launchable {
  Kernel stub;
  cudaKernel_t handle;
};

template <CollKind K, tmashmem_dtype_t D = TMASHMEM_DTYPE_F32, RedOp Op = RedOp::Sum>
const Launchable* launchable() {
  static const Launchable entry = [] {
    Launchable l{coll_kernel<K, D, Op>, nullptr};
    if (cudaGetKernel(&l.handle, reinterpret_cast<const void*>(l.stub)) != cudaSuccess) {
      l.handle = nullptr;
      (void)cudaGetLastError();
    }
    return l;
  }();
  return &entry;
}

// The reducing kinds' dispatch: dtype, then op (the host half checked both).
template <CollKind K, tmashmem_dtype_t D>
const Launchable* reducing_kernel(int op) {
  if (op == TMASHMEM_REDUCE_MIN) return launchable<K, D, RedOp::Min>();
  if (op == TMASHMEM_REDUCE_MAX) return launchable<K, D, RedOp::Max>();
  return launchable<K, D, RedOp::Sum>();
}

template <CollKind K>
const Launchable* reducing_kernel(uint32_t dtype, int op) {
  switch (dtype) {
    case TMASHMEM_DTYPE_F32:
      return reducing_kernel<K, TMASHMEM_DTYPE_F32>(op);
    case TMASHMEM_DTYPE_F16:
      return reducing_kernel<K, TMASHMEM_DTYPE_F16>(op);
    case TMASHMEM_DTYPE_BF16:
      return reducing_kernel<K, TMASHMEM_DTYPE_BF16>(op);
    case TMASHMEM_DTYPE_I32:
      return reducing_kernel<K, TMASHMEM_DTYPE_I32>(op);
  }
  return nullptr;
}

// Anything the host half did not check is an internal error: nullptr.
const Launchable* kernel_for(const CollArgs& a) {
  switch (a.kind) {
    case CollKind::Allgather:
      return launchable<CollKind::Allgather>();
    case CollKind::Alltoall:
      return launchable<CollKind::Alltoall>();
    case CollKind::Alltoallv:
      return launchable<CollKind::Alltoallv>();
    case CollKind::Broadcast:
      return launchable<CollKind::Broadcast>();
    case CollKind::ReduceScatter:
      return reducing_kernel<CollKind::ReduceScatter>(a.dtype, a.op);
    case CollKind::Allreduce:
      return reducing_kernel<CollKind::Allreduce>(a.dtype, a.op);
  }
  return nullptr;
}

CudaOutcome launch(const CollArgs& args, CUstream stream) {
  const Launchable* k = kernel_for(args);
  if (k == nullptr) return cuda_outcome(cudaErrorInvalidValue);
  if (k->handle == nullptr) {
    k->stub<<<args.n_blocks, kThreads, 0, stream>>>(args);
    return cuda_outcome(cudaGetLastError());
  }
  void* params[] = {const_cast<CollArgs*>(&args)};
  return cuda_outcome(driver().cuLaunchKernel(reinterpret_cast<CUfunction>(k->handle),
                                              static_cast<unsigned>(args.n_blocks), 1, 1, kThreads,
                                              1, 1, 0, stream, params, nullptr));
}

const CollectiveKernels kKernels = {launch};

struct Registration {
  Registration() { register_collective_kernels(&kKernels); }
} g_registration;

}  // namespace
}  // namespace tmashmem
