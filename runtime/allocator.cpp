#include "runtime/allocator.h"

#include <iterator>

namespace tmashmem {

void OffsetAllocator::reset(size_t capacity) {
  capacity_ = capacity;
  in_use_ = 0;
  free_.clear();
  used_.clear();
  if (capacity) free_[0] = capacity;
}

bool OffsetAllocator::allocate(size_t size, size_t alignment, size_t* offset) {
  if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return false;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    size_t start = it->first, length = it->second;
    size_t aligned = (start + alignment - 1) & ~(alignment - 1);
    if (aligned < start || aligned - start > length) continue;  // overflow or past the range
    if (length - (aligned - start) < size) continue;
    size_t tail_start = aligned + size;
    size_t tail_length = start + length - tail_start;
    free_.erase(it);
    if (aligned > start) free_[start] = aligned - start;
    if (tail_length) free_[tail_start] = tail_length;
    used_[aligned] = size;
    in_use_ += size;
    *offset = aligned;
    return true;
  }
  return false;
}

bool OffsetAllocator::release(size_t offset, size_t* size) {
  auto it = used_.find(offset);
  if (it == used_.end()) return false;
  size_t length = it->second;
  used_.erase(it);
  in_use_ -= length;
  if (size) *size = length;
  // Insert and coalesce with both neighbours.
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + length == next->first) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += length;
      return true;
    }
  }
  free_[offset] = length;
  return true;
}

size_t OffsetAllocator::block_size(size_t offset) const {
  auto it = used_.find(offset);
  return it == used_.end() ? 0 : it->second;
}

size_t OffsetAllocator::high_water() const {
  if (used_.empty()) return 0;
  auto last = std::prev(used_.end());
  return last->first + last->second;
}

size_t OffsetAllocator::largest_free() const {
  size_t best = 0;
  for (const auto& range : free_) best = range.second > best ? range.second : best;
  return best;
}

}  // namespace tmashmem
