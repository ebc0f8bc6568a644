// Symmetric allocation: malloc, calloc, align, free, ptr.
#include <cstring>

#include "runtime/agreement.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

namespace tmashmem {
namespace {

constexpr uint64_t kForeignPointer = ~uint64_t(0);

}  // namespace

int local_slot(int pe) {
  Runtime& rt = runtime();
  int slot = pe - rt.first_local_pe;
  return slot >= 0 && slot < rt.n_local_pes ? slot : -1;
}

tmashmem_status_t symmetric_alloc(const char* call, size_t size, size_t alignment, bool zero,
                                  const std::vector<NamedArg>& call_args, void** out) {
  *out = nullptr;
  Runtime& rt = runtime();
  TMASHMEM_TRY(require_initialized(call));
  std::vector<NamedArg> args = call_args;
  if (args.empty()) args.emplace_back("size", size);
  args.emplace_back("alignment", alignment);
  tmashmem_status_t st = check_symmetric(call, args);
  TMASHMEM_TRY(st);
  if (size == 0) {
    clear_error();
    return TMASHMEM_SUCCESS;
  }
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s: alignment %zu is not a power of two", call,
                     alignment);
  if (alignment > rt.heap.granularity())
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: alignment %zu exceeds the heap's allocation granularity %zu", call,
                     alignment, rt.heap.granularity());
  if (alignment < kHeapAlignment) alignment = kHeapAlignment;
  size_t offset = 0;
  if (!rt.allocator.allocate(size, alignment, &offset))
    return set_error(TMASHMEM_ERROR_OUT_OF_MEMORY,
                     "%s(%zu bytes) does not fit in the symmetric heap: %zu bytes are in use of "
                     "TMASHMEM_HEAP_MAX=%s (largest free range %zu bytes); raise TMASHMEM_HEAP_MAX "
                     "(or tmashmem_init_attr_t.heap_max)",
                     call, size, rt.allocator.bytes_in_use(),
                     format_size(rt.allocator.capacity()).c_str(), rt.allocator.largest_free());
  st = rt.heap.grow(offset + size);
  if (st != TMASHMEM_SUCCESS) {
    rt.allocator.release(offset);
    return st;
  }
  CUdeviceptr address = rt.heap.my_base() + offset;
  if (zero) {
    // Agreed (and so a barrier): no PE writes into a block another PE is still
    // zeroing, and a failure anywhere frees the block everywhere.
    tmashmem_status_t zeroed = TMASHMEM_SUCCESS;
    CUresult r = driver().cuMemsetD8(address, 0, size);
    if (r == CUDA_SUCCESS) r = driver().cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
      zeroed = cuda_error(r, "cuMemsetD8 + cuCtxSynchronize", __FILE__, __LINE__);
    zeroed = agree(*rt.bootstrap, zeroed, call, "zeroing the new block");
    if (zeroed != TMASHMEM_SUCCESS) {
      rt.allocator.release(offset);
      return zeroed;
    }
  }
  *out = reinterpret_cast<void*>(address);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t symmetric_free(const char* call, void* ptr) {
  Runtime& rt = runtime();
  TMASHMEM_TRY(require_initialized(call));
  size_t offset = 0;
  bool in_heap = ptr != nullptr && rt.heap.offset_of(ptr, &offset);
  uint64_t key = ptr == nullptr ? kForeignPointer - 1 : (in_heap ? offset : kForeignPointer);
  TMASHMEM_TRY(check_symmetric(call, {{"offset of ptr in the heap", key}}));
  if (ptr == nullptr) return TMASHMEM_SUCCESS;
  if (rt.signal_pad != nullptr && ptr == rt.signal_pad)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s(%p): that is the library's signal pad (tmashmem_signal_pad()), which "
                     "lives until tmashmem_finalize; free only what tmashmem_malloc/calloc/align "
                     "returned",
                     call, ptr);
  if (!in_heap || rt.allocator.block_size(offset) == 0)
    return set_error(
        TMASHMEM_ERROR_INVALID_VALUE,
        "%s(%p): not a live pointer returned by tmashmem_malloc/calloc/align (this PE's "
        "heap is [%p, %p)); pass the exact pointer the allocation returned, once",
        call, ptr, reinterpret_cast<void*>(rt.heap.my_base()),
        reinterpret_cast<void*>(rt.heap.my_base() + rt.heap.max_bytes()));
  rt.allocator.release(offset);
  return TMASHMEM_SUCCESS;
}

namespace {

// The public allocation calls: the runtime's lock, then symmetric_alloc; NULL on error.
void* locked_alloc(const char* call, size_t size, size_t alignment) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  void* out = nullptr;
  symmetric_alloc(call, size, alignment, false, {}, &out);
  return out;
}

}  // namespace
}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

void* tmashmem_malloc(size_t size) { return locked_alloc("tmashmem_malloc", size, kHeapAlignment); }

void* tmashmem_align(size_t alignment, size_t size) {
  return locked_alloc("tmashmem_align", size, alignment);
}

void* tmashmem_calloc(size_t count, size_t size) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  size_t bytes = count * size;
  if (size != 0 && bytes / size != count) {
    // Still collective: the other PEs may have passed something else.
    if (require_initialized("tmashmem_calloc") == TMASHMEM_SUCCESS &&
        check_symmetric("tmashmem_calloc",
                        {{"count", count}, {"size", size}, {"alignment", kHeapAlignment}}) ==
            TMASHMEM_SUCCESS)
      set_error(TMASHMEM_ERROR_INVALID_VALUE,
                "tmashmem_calloc(%zu, %zu): count * size overflows size_t", count, size);
    return nullptr;
  }
  void* out = nullptr;
  symmetric_alloc("tmashmem_calloc", bytes, kHeapAlignment, true,
                  {{"count", count}, {"size", size}}, &out);
  return out;
}

tmashmem_status_t tmashmem_free(void* ptr) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  return symmetric_free("tmashmem_free", ptr);
}

void* tmashmem_ptr(const void* ptr, int pe) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (check_initialized("tmashmem_ptr") != TMASHMEM_SUCCESS) return nullptr;
  if (pe < 0 || pe >= rt.bootstrap->size()) return nullptr;
  return rt.heap.translate(ptr, pe);
}

}  // extern "C"
#pragma GCC visibility pop
