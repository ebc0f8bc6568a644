// The heap's multicast object (docs/design.md, decision 7; docs/multicast.md): one
// NVLink multicast object per node, as large as one PE's heap window, whose mapping
// mirrors the heap: tmashmem_mc_ptr(p) = base() + (p - heap base). Every chunk the
// heap grows by is bound at its heap offset on every PE.
//
// Setup order (all collective, each step agreed, so a failure anywhere unwinds
// everywhere): gate decision -> granularity check -> local PE 0 creates -> export /
// import (POSIX fd over the fd channel, or fabric bytes through the bootstrap) ->
// every PE adds its GPU -> barrier -> map the whole window once. Teardown order:
// unmap, unbind each chunk with exactly its bind's offset and size, free the VA,
// release the handle; the heap then releases the unicast memory.
//
// Who may call: the runtime, under its lock. setup() is collective; bind() runs inside
// heap growth, which is collective and agrees on the outcome.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "runtime/non_copyable.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

struct Runtime;

class HeapMulticast : NonCopyable {
 public:
  HeapMulticast() = default;
  ~HeapMulticast() { destroy(); }

  // COLLECTIVE, at init after the heap window is reserved and before it first grows.
  // Asks the gate; when it allows, builds the object. Under TMASHMEM_MULTICAST=auto any
  // refusal or failure leaves multicast unused (status() says why) and returns success;
  // under `on` it is an init error naming the condition. Nothing is left behind on failure.
  tmashmem_status_t setup(Runtime& rt);

  bool active() const { return mapped_ != 0; }
  // The multicast address of heap offset 0, or 0 when multicast is not used.
  CUdeviceptr base() const { return mapped_; }
  // "used", or the condition or failure that kept multicast off.
  const std::string& status() const { return status_; }

  // Binds this PE's new heap chunk `memory` ([offset, offset + bytes) of the heap).
  tmashmem_status_t bind(CUmemGenericAllocationHandle memory, size_t offset, size_t bytes);
  // Undoes the bind at `offset`, if there is one (a growth step that failed elsewhere).
  void unbind(size_t offset);
  // Unmaps, unbinds every chunk, frees the VA, releases the handle. Call after the GPU is
  // quiet and before the heap's memory is released. Safe to call twice.
  void destroy();
  // COLLECTIVE, only for init's first heap growth (no device context exists yet) after
  // it failed on every PE: under `auto` with multicast active, tears multicast down,
  // detaches it from the heap, logs why and returns true (retry the growth unicast);
  // otherwise returns false and changes nothing.
  bool fall_back_after_first_growth(Runtime& rt);

 private:
  tmashmem_status_t build(Runtime& rt);
  tmashmem_status_t check_granularity(Runtime& rt, CUmulticastObjectProp* prop);
  tmashmem_status_t share(Runtime& rt);
  tmashmem_status_t share_posix_fd(Runtime& rt);
  tmashmem_status_t share_fabric(Runtime& rt);
  tmashmem_status_t map(Runtime& rt);

  CUmemGenericAllocationHandle handle_ = 0;  // created or imported; 0 = none
  CUdevice device_ = 0;
  size_t size_ = 0;           // bytes of the object = bytes mapped
  size_t granularity_ = 0;    // CU_MULTICAST_GRANULARITY_MINIMUM: binds are multiples of it
  CUdeviceptr reserved_ = 0;  // VA reservation for the mapping
  bool va_mapped_ = false;    // cuMemMap of the object into reserved_ succeeded
  CUdeviceptr mapped_ = 0;    // == reserved_ once mapped and accessible
  std::vector<std::pair<size_t, size_t>> binds_;  // (offset, bytes), in bind order
  bool required_ = false;                         // TMASHMEM_MULTICAST=on
  std::string status_ = "off: tmashmem is not initialised";
};

}  // namespace tmashmem
