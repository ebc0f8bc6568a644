// The symmetric heap: one virtual-address window holding every local PE's heap at
// a uniform stride (docs/design.md, decision 2), backed by physical chunks created on demand
// (docs/design.md, decision 3) and shared between the PEs of a node (docs/design.md, decision 4).
//
//   reservation: [ slot 0 | slot 1 | ... | slot n_local-1 ]   each slot = stride bytes
//   slot s holds local PE (first_local_pe + s)'s heap; bytes [0, backed) of every
//   reachable slot are mapped, the rest is reserved only.
//
// Who may call: the runtime, under its lock; grow() is collective.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/fd_channel.h"
#include "runtime/non_copyable.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

class Bootstrap;
class HeapMulticast;

struct HeapSetup {
  Bootstrap* bootstrap = nullptr;
  FdChannel* channel = nullptr;  // needed for POSIX fd handles
  uint64_t job_id = 0;
  int device_ordinal = 0;
  CUmemAllocationHandleType handle_type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t heap_max = 0;    // per PE, rounded up to the granularity here
  size_t chunk_size = 0;  // rounded up to the granularity here
  int timeout_ms = 120000;
  int debug = 0;
  // Local PEs: slot s is PE first_local_pe + s; reachable[s] says whether this PE's
  // GPU can load/store slot s's memory (true for the own slot).
  int first_local_pe = 0;
  int my_slot = 0;
  std::vector<bool> reachable;
};

// Properties of heap memory: pinned device memory of `device_ordinal`, exportable as
// `handle_type`. The heap's chunks and init's fabric-export probe both use it.
CUmemAllocationProp device_allocation_prop(int device_ordinal,
                                           CUmemAllocationHandleType handle_type);

class SymmetricHeap : NonCopyable {
 public:
  SymmetricHeap() = default;
  ~SymmetricHeap() { destroy(); }

  // Reserves the window (no physical memory yet). Not collective.
  tmashmem_status_t create(const HeapSetup& setup);
  // COLLECTIVE (same `bytes` on every PE): make [0, bytes) of every slot backed.
  // All-or-nothing: on any PE's failure every PE returns the error and nothing new
  // stays mapped.
  tmashmem_status_t grow(size_t bytes);
  // Unmaps and releases everything (the attached multicast object first). Safe to call twice.
  void destroy();
  // Growth binds every new chunk to `multicast` too (docs/multicast.md); null: none.
  void attach_multicast(HeapMulticast* multicast) { multicast_ = multicast; }

  size_t granularity() const { return granularity_; }
  size_t max_bytes() const { return max_bytes_; }
  size_t backed_bytes() const { return backed_; }
  size_t stride() const { return stride_; }
  size_t chunk_count() const { return chunks_.size(); }
  size_t chunk_bytes() const { return chunk_bytes_; }
  CUdeviceptr my_base() const { return slot_base(setup_.my_slot); }
  CUdeviceptr slot_base(int slot) const { return base_ + static_cast<CUdeviceptr>(slot) * stride_; }

  // Offset of `ptr` in this PE's heap, or false when it is outside [base, base+max).
  bool offset_of(const void* ptr, size_t* offset) const;
  // `ptr`'s counterpart on `pe`; nullptr when unreachable, off-node, or outside the backed heap.
  void* translate(const void* ptr, int pe) const;
  bool slot_reachable(int slot) const;

 private:
  struct Mapping {
    CUmemGenericAllocationHandle handle = 0;
    CUdeviceptr address = 0;
  };
  struct Chunk {
    size_t offset = 0;
    size_t bytes = 0;
    std::vector<Mapping> slots;  // by slot; address 0 = not mapped
  };

  tmashmem_status_t create_own(Chunk* chunk);
  tmashmem_status_t share_posix_fd(Chunk* chunk, uint32_t sequence);
  tmashmem_status_t share_fabric(Chunk* chunk);
  tmashmem_status_t map_slot(Chunk* chunk, int slot, CUmemGenericAllocationHandle handle);
  void release_chunk(Chunk* chunk);
  tmashmem_status_t agree(tmashmem_status_t mine, const char* what);

  HeapSetup setup_;
  CUdeviceptr base_ = 0;
  size_t reserved_ = 0;
  size_t stride_ = 0;
  size_t granularity_ = 0;
  size_t max_bytes_ = 0;
  size_t chunk_bytes_ = 0;
  size_t backed_ = 0;
  uint32_t growth_sequence_ = 0;
  std::vector<Chunk> chunks_;
  HeapMulticast* multicast_ = nullptr;
};

}  // namespace tmashmem
