// Argument checks of the on-stream collectives (runtime/collectives_check.h).
#include "runtime/collectives_check.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/tensor_desc.h"
#include "tmashmem/collectives.h"

namespace tmashmem {
namespace {

// An argument set as the cache keys it: the call's name by its address (the caller passes a
// string literal, one per public call, so the address names the call) and the values.
struct CheckedKey {
  size_t n = 0;  // words used
  uint64_t words[1 + kMaxCollArgs] = {};
  bool operator<(const CheckedKey& o) const {
    return std::lexicographical_compare(words, words + n, o.words, o.words + o.n);
  }
};

// Argument sets found symmetric, with the session they belong to (a new init starts over).
// A lookup allocates nothing.
struct CheckedCache {
  uint64_t job_id = 0;
  uint64_t heap_base = 0;
  std::set<CheckedKey> checked;
};
CheckedCache g_checked;

}  // namespace

size_t coll_dtype_bytes(uint32_t dtype) {
  const bool reducible = dtype == TMASHMEM_DTYPE_F32 || dtype == TMASHMEM_DTYPE_I32 ||
                         dtype == TMASHMEM_DTYPE_F16 || dtype == TMASHMEM_DTYPE_BF16;
  return reducible ? dtype_bytes(dtype) : 0;
}

std::string coll_dtype_name(uint32_t dtype) {
  if (dtype >= TMASHMEM_DTYPE_COUNT) return "an unknown dtype";
  std::string name = "TMASHMEM_DTYPE_";
  for (const char* c = dtype_name(dtype); *c; ++c)
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  return name;
}

uint64_t coll_heap_offset(const Runtime& rt, const void* ptr) {
  size_t offset = 0;
  if (ptr == nullptr || !rt.heap.offset_of(ptr, &offset)) return ~uint64_t(0);
  return offset;
}

tmashmem_status_t coll_check_buffer(const Runtime& rt, const char* call, const CollBuffer& b,
                                    size_t align) {
  if (b.ptr == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s is NULL; pass a symmetric buffer of at least %zu bytes (from "
                     "tmashmem_malloc)",
                     call, b.name, b.bytes);
  const int me = rt.bootstrap->rank();
  const char* first = static_cast<const char*>(b.ptr);
  const char* last = first + (b.bytes - 1);
  if (rt.heap.translate(first, me) == nullptr || rt.heap.translate(last, me) == nullptr)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s [%p, +%zu bytes) is not inside this PE's symmetric heap; allocate "
                     "it with tmashmem_malloc (at least %zu bytes from %p)",
                     call, b.name, b.ptr, b.bytes, b.bytes, b.ptr);
  if (align > 1 && reinterpret_cast<uintptr_t>(b.ptr) % align != 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s %p is not %zu-byte aligned; its elements must be naturally aligned "
                     "(offset the buffer by a multiple of %zu)",
                     call, b.name, b.ptr, align, align);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t coll_check_disjoint(const char* call, const CollBuffer& a, const CollBuffer& b) {
  const auto a0 = reinterpret_cast<uintptr_t>(a.ptr), b0 = reinterpret_cast<uintptr_t>(b.ptr);
  if (a0 < b0 + b.bytes && b0 < a0 + a.bytes)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s [%p, +%zu bytes) overlaps %s [%p, +%zu bytes); the collective reads "
                     "one while peers write the other: pass separate buffers",
                     call, a.name, a.ptr, a.bytes, b.name, b.ptr, b.bytes);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t coll_check_reduction(const char* call, uint32_t dtype, int op) {
  if (coll_dtype_bytes(dtype) == 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: dtype %u (%s) cannot be reduced; pass TMASHMEM_DTYPE_F32, _F16, _BF16 "
                     "or _I32",
                     call, dtype, coll_dtype_name(dtype).c_str());
  if (op != TMASHMEM_REDUCE_SUM && op != TMASHMEM_REDUCE_MIN && op != TMASHMEM_REDUCE_MAX)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: op %d (an unknown op) with dtype %s is not supported; pass "
                     "TMASHMEM_REDUCE_SUM (%d), _MIN (%d) or _MAX (%d)",
                     call, op, coll_dtype_name(dtype).c_str(), TMASHMEM_REDUCE_SUM,
                     TMASHMEM_REDUCE_MIN, TMASHMEM_REDUCE_MAX);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t coll_check_symmetric(const Runtime& rt, const char* call, const CollArg* args,
                                       size_t n) {
  if (n > kMaxCollArgs)
    return set_error(TMASHMEM_ERROR_INTERNAL, "%s: %zu arguments to check, more than %zu", call, n,
                     kMaxCollArgs);
  const uint64_t base = rt.heap.my_base();
  if (g_checked.job_id != rt.job_id || g_checked.heap_base != base) {
    g_checked = CheckedCache{};
    g_checked.job_id = rt.job_id;
    g_checked.heap_base = base;
  }
  CheckedKey key;
  key.words[key.n++] = reinterpret_cast<uintptr_t>(call);
  for (size_t i = 0; i < n; ++i) key.words[key.n++] = args[i].value;
  if (!rt.coll_check_every_call && g_checked.checked.count(key) != 0) return TMASHMEM_SUCCESS;
  std::vector<NamedArg> named;
  for (size_t i = 0; i < n; ++i) named.emplace_back(args[i].name, args[i].value);
  TMASHMEM_TRY(check_symmetric(call, named,
                               "every PE must make the same collective call with the same "
                               "buffers, sizes, dtype, op, root, algorithm and n_sms"));
  g_checked.checked.insert(key);
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
