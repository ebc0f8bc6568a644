// The argument checks of the on-stream collectives (runtime/collectives.cpp): buffers in
// the symmetric heap and disjoint, dtype/op pairs, and the cross-PE symmetry check with
// its cache of argument sets already found symmetric. The caller holds runtime().mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/runtime.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

// A buffer a collective touches on this PE: [ptr, ptr + bytes).
struct CollBuffer {
  const char* name;  // "dest", "src", "send_counts", ...
  const void* ptr;
  size_t bytes;
};

// `b` lies in this PE's symmetric heap (within the backed part) and is aligned to `align`.
tmashmem_status_t coll_check_buffer(const Runtime& rt, const char* call, const CollBuffer& b,
                                    size_t align);
// `a` and `b` do not share a byte.
tmashmem_status_t coll_check_disjoint(const char* call, const CollBuffer& a, const CollBuffer& b);
// The reducing collectives take f32, f16, bf16, i32 with sum, min, max; the message names
// the dtype and op and lists what is supported.
tmashmem_status_t coll_check_reduction(const char* call, uint32_t dtype, int op);
// Bytes of one element of a dtype the reductions take (0 for others).
size_t coll_dtype_bytes(uint32_t dtype);
std::string coll_dtype_name(uint32_t dtype);  // "TMASHMEM_DTYPE_F32", ...

// One argument of the symmetry check: its name (for the message) and its value.
struct CollArg {
  const char* name;
  uint64_t value;
};
constexpr size_t kMaxCollArgs = 16;  // the most a collective checks (alltoallv: 13)

// COLLECTIVE when it checks: the runtime's symmetry check (check_symmetric) of args[0, n),
// on the first call with these exact values on this PE, or on every call when any PE has
// TMASHMEM_DEBUG >= 1 (Runtime::coll_check_every_call, agreed at init). Values found
// symmetric are remembered until finalize; a call checked before costs a lookup without
// allocation (it is on the path of every small collective: docs/runs.md, "Seventh
// session"). `call` must be a string literal, one per public call: the cache keys its
// address.
tmashmem_status_t coll_check_symmetric(const Runtime& rt, const char* call, const CollArg* args,
                                       size_t n);

// Heap offset of a symmetric pointer (the value that agrees across PEs), or ~0 for NULL.
uint64_t coll_heap_offset(const Runtime& rt, const void* ptr);

}  // namespace tmashmem
