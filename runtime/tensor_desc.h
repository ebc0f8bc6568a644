// Validation of a tensor descriptor against the TMA (cuTensorMapEncodeTiled) rules, before
// anything is encoded, with one precise message per rule.
//
// Pure functions: no runtime state, no driver. Every failure records the thread's error
// (runtime/error.h) as "<call>: desc.<field> = <value> ...: <rule>; <fix>" and returns
// TMASHMEM_ERROR_INVALID_VALUE. Rules are checked in a fixed order and the first violation
// is reported, so a test can provoke each rule alone.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "tmashmem/tensor.h"

namespace tmashmem {

// What a valid descriptor implies.
struct TensorLayout {
  uint32_t elem_bytes = 0;
  // Bytes from the first element to the end of the last row, rounded up to 16 bytes: puts
  // at the right edge write whole 16-byte units of a row (seen on H200).
  uint64_t extent_bytes = 0;
  uint32_t box_bytes = 0;   // bytes one tile moves (a get's complete_tx count)
  uint32_t smem_bytes = 0;  // shared memory one tile occupies (swizzled rows padded to the span)
  uint32_t address_alignment = 16;  // 32 with TMASHMEM_INTERLEAVE_32B
};

// Bytes of one element; 0 for a value outside tmashmem_dtype_t.
uint32_t dtype_bytes(uint32_t dtype);
// "f16", "u8", ...; "?" outside tmashmem_dtype_t.
const char* dtype_name(uint32_t dtype);
bool dtype_is_float(uint32_t dtype);

// Bytes of the swizzle span (32/64/128), 0 for TMASHMEM_SWIZZLE_NONE.
uint32_t swizzle_span(uint32_t swizzle);

// Largest shared-memory tile a get may move: the mbarrier transaction count is below 2^20.
constexpr uint64_t kMaxBoxBytes = (uint64_t(1) << 20) - 1;

// Every rule that does not depend on where the tensor lives. `call` prefixes the message.
tmashmem_status_t validate_tensor_desc(const char* call, const tmashmem_tensor_desc_t* desc,
                                       TensorLayout* layout);

// The rules that do: `address` aligned as the layout requires, and the whole tensor,
// [address, address + extent), inside [region_begin, region_end). `region` names that
// range in the message ("the heap's backed range").
tmashmem_status_t validate_tensor_placement(const char* call, const TensorLayout& layout,
                                            uint64_t address, uint64_t region_begin,
                                            uint64_t region_end, const char* region);

// The cuTensorMapEncodeTiled arguments of a valid descriptor (arrays sized for rank 5).
struct TensorMapArgs {
  CUtensorMapDataType dtype;
  cuuint32_t rank;
  cuuint64_t dims[5];
  cuuint64_t strides[4];
  cuuint32_t box[5];
  cuuint32_t element_strides[5];
  CUtensorMapInterleave interleave;
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2_promotion;
  CUtensorMapFloatOOBfill oob_fill;
};
TensorMapArgs tensor_map_args(const tmashmem_tensor_desc_t& desc);

}  // namespace tmashmem
