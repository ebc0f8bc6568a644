// Offset allocator for the symmetric heap.
//
// Purely deterministic: PEs that make the same calls in the same order get the
// same offsets, which is what makes every allocation symmetric. First fit at the
// lowest offset keeps the high-water mark (and so the memory that must be backed
// on every PE) low.
#pragma once

#include <cstddef>
#include <map>

namespace tmashmem {

class OffsetAllocator {
 public:
  explicit OffsetAllocator(size_t capacity = 0) { reset(capacity); }

  void reset(size_t capacity);

  // Reserves `size` bytes at an offset that is a multiple of `alignment` (a power of
  // two). False when no free range fits.
  bool allocate(size_t size, size_t alignment, size_t* offset);

  // Returns the block that starts at `offset`. False (and nothing changes) when no
  // live block starts there.
  bool release(size_t offset, size_t* size = nullptr);

  // Size of the live block starting exactly at `offset`, 0 if none.
  size_t block_size(size_t offset) const;

  size_t capacity() const { return capacity_; }
  size_t bytes_in_use() const { return in_use_; }
  size_t live_blocks() const { return used_.size(); }
  // One past the last byte of the highest live block (0 when empty).
  size_t high_water() const;
  // Largest free range, for "fragmented" diagnostics.
  size_t largest_free() const;

 private:
  size_t capacity_ = 0;
  size_t in_use_ = 0;
  std::map<size_t, size_t> free_;  // offset -> size, coalesced
  std::map<size_t, size_t> used_;  // offset -> size
};

}  // namespace tmashmem
