// The launch interface between the collectives' host half (runtime/collectives.cpp) and
// their kernels (device/collectives.cu), in the pattern of runtime/stream_kernels.h: the
// device library registers the table while libtmashmem loads; a build without device/
// has none, and the calls then return TMASHMEM_ERROR_NOT_SUPPORTED after their argument
// checks (the CPU tests assert both).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "runtime/driver.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

enum class CollKind : int { Allgather, ReduceScatter, Allreduce, Alltoall, Alltoallv, Broadcast };

// Where a collective's kernel lets the next overlapped collective on its stream be scheduled
// (griddepcontrol.launch_dependents; runtime/collectives.cpp, next_trigger): nowhere (the next
// starts when this one ends), right after its grid dependency wait, or after its step.
enum class CollTrigger : int { None, AtStart, AfterStep };

// Everything one collective kernel needs, by value (a __grid_constant__ parameter): no
// state on the host, so a captured launch replays correctly.
struct CollArgs {
  tmashmem_ctx_t ctx;
  CollKind kind;
  uint32_t dtype;  // tmashmem_dtype_t (reducing kinds)
  int op;          // tmashmem_reduce_op_t
  int algo;        // tmashmem_allreduce_algo_t, resolved (never AUTO)
  int push;        // 1: push (CollMode::Push), 0: pull
  int staged;      // 1: the one-handshake form through `staging` (staged.cuh)
  int root;
  int n_blocks;
  void* dest;
  const void* src;
  uint64_t size;  // bytes (allgather, alltoall, broadcast) or elements (reductions)
  uint64_t dest_bytes, src_bytes;  // alltoallv
  const uint64_t* send_counts;
  const uint64_t* send_offsets;
  const uint64_t* recv_offsets;
  uint64_t timeout_ns;
  void* staging;  // this PE's staging region (symmetric), when staged
  uint64_t staging_slot_bytes;
  int low_latency;           // 1: the LL form through `ll_state` (low_latency.cuh)
  CollTrigger next_trigger;  // where the kernel lets the next overlapped collective on its
                             // stream be scheduled (runtime/collectives.cpp, next_trigger)
  void* ll_state;            // this PE's LL state (symmetric, zeroed at allocation), when LL
  uint64_t ll_bytes;         // its bytes (coll_ll_state)
};

struct CollectiveKernels {
  // Launches the collective kernel on `stream` (the runtime's device is current); overlap:
  // with programmatic stream serialization (device/driver_launch.h), which the host half asks
  // for only where twice this call's CTAs fit (runtime/collectives.cpp, overlap_launch).
  CudaOutcome (*launch)(const CollArgs& args, CUstream stream, bool overlap);
};

// Called once by device/collectives.cu; `kernels` must outlive the process.
void register_collective_kernels(const CollectiveKernels* kernels);

// The registered table, or nullptr in a build without the device library.
const CollectiveKernels* collective_kernels();

}  // namespace tmashmem
