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
#include "device/driver_launch.h"
#include "runtime/collectives_kernels.h"
#include "tmashmem/device/collectives/all.cuh"
#include "tmashmem/device/detail/grid_dependency.cuh"

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

// Reads one word of every 64 bytes of the kernel's parameters (lane l of every warp the
// l-th) and waits for them. A fresh launch's parameters are in no constant cache of its SM,
// and the kernel reads them behind branches on earlier ones: without this the first reads
// miss one after another. Called before griddepcontrol_wait, so that in an overlapped launch
// the misses overlap the grid before (the parameters are this launch's own; no global memory
// is touched). Measured on one H100 (docs/runs.md, "Twenty-fourth session"): in a graph at 2
// PEs, 4 KiB - 256 KiB, a median of 1.05x as fast (0.95-1.14 over the rows of two starts).
__device__ __forceinline__ void warm_arguments(const CollArgs& a) {
  constexpr unsigned kLines = (sizeof(CollArgs) + 63) / 64;
  static_assert(kLines <= 32 && sizeof(CollArgs) % 4 == 0, "one line per lane");
  const unsigned lane = threadIdx.x & 31u;
  // Stored to a volatile sink, so that neither compiler drops the read or moves it later.
  __shared__ volatile uint32_t sink[kLines];
  if (lane < kLines) sink[lane] = reinterpret_cast<const uint32_t*>(&a)[lane * 16u];
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
  // An overlapped launch (device/driver_launch.h) may start this grid while the previous one
  // on the stream is still running: no memory but the parameters is touched before that grid
  // has finished. Then, where the host half found room for two (fits_twice), the next
  // collective may be scheduled, here or after the step (runtime/collectives.cpp,
  // next_trigger); it waits at its own first line in turn, so at most two collectives of one
  // stream are resident at once, both within the room. Without the trigger the next one
  // starts when this ends.
  warm_arguments(a);
  detail::griddepcontrol_wait();
  if (a.next_trigger == CollTrigger::AtStart) detail::griddepcontrol_launch_dependents();
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
  if (a.next_trigger == CollTrigger::AfterStep) detail::griddepcontrol_launch_dependents();
  finish(a, s, what);
}

// Launches kernel <K, D, Op> (device/driver_launch.h).
using Launch = CudaOutcome (*)(const CollArgs& args, CUstream stream, bool overlap);

template <CollKind K, tmashmem_dtype_t D = TMASHMEM_DTYPE_F32, RedOp Op = RedOp::Sum>
CudaOutcome launch_one(const CollArgs& args, CUstream stream, bool overlap) {
  return launch_kernel<coll_kernel<K, D, Op>>(
      {static_cast<unsigned>(args.n_blocks), kThreads, stream, overlap}, args);
}

// The reducing kinds' dispatch: dtype, then op (the host half checked both).
template <CollKind K, tmashmem_dtype_t D>
Launch reducing_kernel(int op) {
  if (op == TMASHMEM_REDUCE_MIN) return launch_one<K, D, RedOp::Min>;
  if (op == TMASHMEM_REDUCE_MAX) return launch_one<K, D, RedOp::Max>;
  return launch_one<K, D, RedOp::Sum>;
}

template <CollKind K>
Launch reducing_kernel(uint32_t dtype, int op) {
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
Launch kernel_for(const CollArgs& a) {
  switch (a.kind) {
    case CollKind::Allgather:
      return launch_one<CollKind::Allgather>;
    case CollKind::Alltoall:
      return launch_one<CollKind::Alltoall>;
    case CollKind::Alltoallv:
      return launch_one<CollKind::Alltoallv>;
    case CollKind::Broadcast:
      return launch_one<CollKind::Broadcast>;
    case CollKind::ReduceScatter:
      return reducing_kernel<CollKind::ReduceScatter>(a.dtype, a.op);
    case CollKind::Allreduce:
      return reducing_kernel<CollKind::Allreduce>(a.dtype, a.op);
  }
  return nullptr;
}

CudaOutcome launch(const CollArgs& args, CUstream stream, bool overlap) {
  const Launch k = kernel_for(args);
  return k == nullptr ? cuda_outcome(cudaErrorInvalidValue) : k(args, stream, overlap);
}

const CollectiveKernels kKernels = {launch};

struct Registration {
  Registration() { register_collective_kernels(&kKernels); }
} g_registration;

}  // namespace
}  // namespace tmashmem
