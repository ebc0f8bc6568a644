// A global -> global copy by one thread through the bulk copy engine (cp.async.bulk), with
// several pieces in flight: the communication role of the fused kernels. Pieces are loaded
// into a ring of shared-memory slots (each completing on its own mbarrier) and stored from
// there; a slot is refilled once its store has read it.
//
// Contract: one thread owns a CopyRing for the kernel's life (init once, then copy any
// number of ranges). Source, destination and byte count 16-byte aligned. On return from
// copy() every store has been issued and has read its slot; the writes are complete after
// bulk_wait_group<0>() of the same thread. A source that other threads or PEs wrote and
// published with a signal needs fence_proxy_async_global() after the acquire, before copy().
#pragma once

#include <cstddef>
#include <cstdint>

#include "tmashmem/device/bulk.cuh"
#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/bulk.cuh"
#include "tmashmem/device/detail/mbarrier.cuh"
#include "tmashmem/device/mbarrier.cuh"
#include "tmashmem/device/status.cuh"

namespace tmashmem::fused {

template <int Slots, uint32_t SlotBytes>
struct CopyRing {
  static_assert(Slots >= 2 && Slots <= 32, "CopyRing: 2..32 slots");
  static_assert(SlotBytes % 16 == 0 && SlotBytes <= (1u << 19), "CopyRing: slot size");
  static constexpr uint32_t kSmemBytes = Slots * SlotBytes + Slots * 8 + 128;

  uint8_t* slots;   // Slots * SlotBytes of shared memory, 128-byte aligned
  Mbarrier* bars;   // Slots barriers
  uint32_t parity;  // bit s: the parity slot s's next load completes
  uint64_t timeout_ns;

  /// `smem`: kSmemBytes of shared memory that nothing else uses.
  __device__ __forceinline__ void init(void* smem, uint64_t timeout) {
    const uintptr_t base = (reinterpret_cast<uintptr_t>(smem) + 127) & ~uintptr_t(127);
    slots = reinterpret_cast<uint8_t*>(base);
    bars = reinterpret_cast<Mbarrier*>(base + Slots * SlotBytes);
    for (int s = 0; s < Slots; ++s) bars[s].init(1);
    parity = 0;
    timeout_ns = timeout;
    // The barriers' initialisation and earlier generic use of the slots, before the copies.
    detail::fence_proxy_async();
  }

  __device__ __forceinline__ void load(int slot, const char* src, uint32_t bytes) {
    bars[slot].arrive_expect_tx(bytes);
    detail::bulk_load(detail::smem_address(slots + slot * SlotBytes), src, bytes,
                      bars[slot].smem_address());
  }

  __device__ __forceinline__ void wait_loaded(int slot) {
    if (bars[slot].wait((parity >> slot) & 1u, timeout_ns) != Status::Ok) __trap();
    parity ^= 1u << slot;
  }

  /// Copies `bytes` from `src` to `dst` (both generic addresses of global memory, this GPU's
  /// or a peer's through its mapping).
  __device__ __forceinline__ void copy(char* dst, const char* src, size_t bytes) {
    const size_t pieces = (bytes + SlotBytes - 1) / SlotBytes;
    auto length = [&](size_t i) {
      const size_t left = bytes - i * SlotBytes;
      return static_cast<uint32_t>(left < SlotBytes ? left : SlotBytes);
    };
    for (size_t i = 0; i < pieces && i < static_cast<size_t>(Slots); ++i)
      load(static_cast<int>(i), src + i * SlotBytes, length(i));
    for (size_t i = 0; i < pieces; ++i) {
      const int slot = static_cast<int>(i % Slots);
      wait_loaded(slot);
      detail::bulk_store(dst + i * SlotBytes, detail::smem_address(slots + slot * SlotBytes),
                         length(i));
      detail::bulk_commit();
      // Refill the slot piece i - 1 used, once its store has read it (piece i's may still).
      if (i >= 1 && i - 1 + Slots < pieces) {
        detail::bulk_wait_read<1>();
        const size_t next = i - 1 + Slots;
        load(static_cast<int>((i - 1) % Slots), src + next * SlotBytes, length(next));
      }
    }
    detail::bulk_wait_read<0>();
  }
};

}  // namespace tmashmem::fused
