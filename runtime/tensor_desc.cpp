// The TMA rules of cuTensorMapEncodeTiled (CUDA 13 driver documentation), checked one at a
// time so that every message names one field, its value, the rule and the fix.
#include "runtime/tensor_desc.h"

#include <cstdarg>
#include <string>

#include "runtime/enum_name.h"
#include "runtime/error.h"

namespace tmashmem {
namespace {

static_assert(TMASHMEM_DTYPE_U8 == int(CU_TENSOR_MAP_DATA_TYPE_UINT8) &&
                  TMASHMEM_DTYPE_U16 == int(CU_TENSOR_MAP_DATA_TYPE_UINT16) &&
                  TMASHMEM_DTYPE_U32 == int(CU_TENSOR_MAP_DATA_TYPE_UINT32) &&
                  TMASHMEM_DTYPE_I32 == int(CU_TENSOR_MAP_DATA_TYPE_INT32) &&
                  TMASHMEM_DTYPE_U64 == int(CU_TENSOR_MAP_DATA_TYPE_UINT64) &&
                  TMASHMEM_DTYPE_I64 == int(CU_TENSOR_MAP_DATA_TYPE_INT64) &&
                  TMASHMEM_DTYPE_F16 == int(CU_TENSOR_MAP_DATA_TYPE_FLOAT16) &&
                  TMASHMEM_DTYPE_F32 == int(CU_TENSOR_MAP_DATA_TYPE_FLOAT32) &&
                  TMASHMEM_DTYPE_F64 == int(CU_TENSOR_MAP_DATA_TYPE_FLOAT64) &&
                  TMASHMEM_DTYPE_BF16 == int(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16) &&
                  TMASHMEM_DTYPE_F32_FTZ == int(CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ) &&
                  TMASHMEM_DTYPE_TF32 == int(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32) &&
                  TMASHMEM_DTYPE_TF32_FTZ == int(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ),
              "tmashmem_dtype_t must keep CUtensorMapDataType's numbering");
static_assert(TMASHMEM_SWIZZLE_128B == int(CU_TENSOR_MAP_SWIZZLE_128B) &&
                  TMASHMEM_INTERLEAVE_32B == int(CU_TENSOR_MAP_INTERLEAVE_32B) &&
                  TMASHMEM_L2_PROMOTION_256B == int(CU_TENSOR_MAP_L2_PROMOTION_L2_256B) &&
                  TMASHMEM_OOB_FILL_NAN == int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA),
              "tmashmem's tensor-map enums must keep the driver's numbering");

constexpr uint64_t kMaxDim = uint64_t(1) << 32;
constexpr uint64_t kStrideLimit = uint64_t(1) << 40;
constexpr uint32_t kMaxBox = 256;
constexpr uint32_t kMaxElementStride = 8;

tmashmem_status_t fail(const char* call, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

tmashmem_status_t fail(const char* call, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(&text[0], text.size() + 1, format, args);
  va_end(args);
  return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s: %s", call, text.c_str());
}

const char* interleave_name(uint32_t v) {
  static const char* const kNames[] = {"none", "16B", "32B"};  // in tmashmem_interleave_t's order
  return enum_name(kNames, long(v), "?");
}

const char* swizzle_name(uint32_t v) {
  static const char* const kNames[] = {"none", "32B", "64B",
                                       "128B"};  // in tmashmem_swizzle_t's order
  return enum_name(kNames, long(v), "?");
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

// What tmashmem knows of each dtype, in tmashmem_dtype_t's order.
struct DtypeInfo {
  const char* name;
  uint32_t bytes;
  bool is_float;
};
constexpr DtypeInfo kDtypes[TMASHMEM_DTYPE_COUNT] = {
    {"u8", 1, false},     {"u16", 2, false}, {"u32", 4, false},    {"i32", 4, false},
    {"u64", 8, false},    {"i64", 8, false}, {"f16", 2, true},     {"f32", 4, true},
    {"f64", 8, true},     {"bf16", 2, true}, {"f32_ftz", 4, true}, {"tf32", 4, true},
    {"tf32_ftz", 4, true}};

}  // namespace

uint32_t dtype_bytes(uint32_t dtype) {
  return dtype < TMASHMEM_DTYPE_COUNT ? kDtypes[dtype].bytes : 0;
}

const char* dtype_name(uint32_t dtype) {
  return dtype < TMASHMEM_DTYPE_COUNT ? kDtypes[dtype].name : "?";
}

bool dtype_is_float(uint32_t dtype) {
  return dtype < TMASHMEM_DTYPE_COUNT && kDtypes[dtype].is_float;
}

// Every desc.<field>[i] for i < rank in 1..max, else the error naming i, the value and `why`.
tmashmem_status_t check_per_dimension(const char* call, const char* field, const uint32_t* values,
                                      uint32_t rank, uint32_t max, const char* why) {
  for (uint32_t i = 0; i < rank; ++i)
    if (values[i] < 1 || values[i] > max)
      return fail(call, "desc.%s[%u] = %u is outside 1..%u: %s", field, i, values[i], max, why);
  return TMASHMEM_SUCCESS;
}

uint32_t swizzle_span(uint32_t swizzle) {
  static const uint32_t kSpans[] = {0, 32, 64, 128};  // in tmashmem_swizzle_t's order
  return swizzle < sizeof kSpans / sizeof kSpans[0] ? kSpans[swizzle] : 0;
}

tmashmem_status_t validate_tensor_desc(const char* call, const tmashmem_tensor_desc_t* desc,
                                       TensorLayout* layout) {
  if (!desc)
    return fail(call,
                "desc is NULL: pass a tmashmem_tensor_desc_t filled by "
                "tmashmem_tensor_desc_init");
  const tmashmem_tensor_desc_t& d = *desc;
  if (d.version != TMASHMEM_TENSOR_DESC_VERSION)
    return fail(
        call,
        "desc.version = %u, but this library reads version %u "
        "(TMASHMEM_TENSOR_DESC_VERSION): fill the descriptor with tmashmem_tensor_desc_init",
        d.version, TMASHMEM_TENSOR_DESC_VERSION);
  const uint32_t dtype = d.dtype;
  const uint32_t elem = dtype_bytes(dtype);
  if (elem == 0)
    return fail(call,
                "desc.dtype = %u is not a tmashmem_dtype_t: the valid values are 0..%d (u8 u16 "
                "u32 i32 u64 i64 f16 f32 f64 bf16 f32_ftz tf32 tf32_ftz); use a TMASHMEM_DTYPE_* "
                "constant (FP8 travels as TMASHMEM_DTYPE_U8)",
                dtype, TMASHMEM_DTYPE_COUNT - 1);
  if (d.rank < 1 || d.rank > TMASHMEM_TENSOR_MAX_RANK)
    return fail(call, "desc.rank = %u is outside 1..%d: TMA tensors have 1 to 5 dimensions", d.rank,
                TMASHMEM_TENSOR_MAX_RANK);
  const uint32_t interleave = d.interleave;
  const uint32_t swizzle = d.swizzle;
  const uint32_t l2 = d.l2_promotion;
  const uint32_t oob = d.oob_fill;
  if (interleave > TMASHMEM_INTERLEAVE_32B)
    return fail(call,
                "desc.interleave = %u is not a tmashmem_interleave_t (0 none, 1 16B, 2 32B); use a "
                "TMASHMEM_INTERLEAVE_* constant",
                interleave);
  if (swizzle > TMASHMEM_SWIZZLE_128B)
    return fail(call,
                "desc.swizzle = %u is not a tmashmem_swizzle_t (0 none, 1 32B, 2 64B, 3 128B); "
                "use a TMASHMEM_SWIZZLE_* constant (the 128B-atom swizzles need Blackwell)",
                swizzle);
  if (l2 > TMASHMEM_L2_PROMOTION_256B)
    return fail(call,
                "desc.l2_promotion = %u is not a tmashmem_l2_promotion_t (0 none, 1 64B, 2 128B, "
                "3 256B); use a TMASHMEM_L2_PROMOTION_* constant",
                l2);
  if (oob > TMASHMEM_OOB_FILL_NAN)
    return fail(call,
                "desc.oob_fill = %u is not a tmashmem_oob_fill_t (0 zero, 1 nan); use a "
                "TMASHMEM_OOB_FILL_* constant",
                oob);
  if (d.reserved0 != 0)
    return fail(call, "desc.reserved0 = %u must be 0: start from tmashmem_tensor_desc_init",
                d.reserved0);
  for (int i = 0; i < 4; ++i)
    if (d.reserved[i] != 0)
      return fail(call, "desc.reserved[%d] = %llu must be 0: start from tmashmem_tensor_desc_init",
                  i, ull(d.reserved[i]));
  const uint32_t rank = d.rank;
  if (interleave != TMASHMEM_INTERLEAVE_NONE && rank < 3)
    return fail(call,
                "desc.rank = %u with desc.interleave = %s: TMA interleaved layouts need rank 3..5; "
                "use TMASHMEM_INTERLEAVE_NONE or describe the tensor with 3 or more dimensions",
                rank, interleave_name(interleave));

  // Entries that rank does not cover must be zero: a stale or mis-sized array is a bug.
  for (uint32_t i = rank; i < TMASHMEM_TENSOR_MAX_RANK; ++i) {
    if (d.dims[i] != 0)
      return fail(call,
                  "desc.dims[%u] = %llu but desc.rank = %u: entries at and beyond rank must be 0; "
                  "raise rank or clear the entry",
                  i, ull(d.dims[i]), rank);
    if (d.box[i] != 0)
      return fail(
          call,
          "desc.box[%u] = %u but desc.rank = %u: entries at and beyond rank must be 0; raise "
          "rank or clear the entry",
          i, d.box[i], rank);
    if (d.element_strides[i] != 0)
      return fail(call,
                  "desc.element_strides[%u] = %u but desc.rank = %u: entries at and beyond rank "
                  "must be 0; raise rank or clear the entry",
                  i, d.element_strides[i], rank);
  }
  for (uint32_t i = rank - 1; i < TMASHMEM_TENSOR_MAX_RANK - 1; ++i)
    if (d.byte_strides[i] != 0)
      return fail(call,
                  "desc.byte_strides[%u] = %llu but desc.rank = %u: byte_strides[i] is the stride "
                  "of dimension i + 1, so entries at and beyond rank - 1 = %u must be 0",
                  i, ull(d.byte_strides[i]), rank, rank - 1);

  for (uint32_t i = 0; i < rank; ++i)
    if (d.dims[i] < 1 || d.dims[i] > kMaxDim)
      return fail(call,
                  "desc.dims[%u] = %llu is outside 1..2^32 (4294967296): a TMA dimension holds 1 "
                  "to 2^32 elements",
                  i, ull(d.dims[i]));

  const uint64_t stride_unit = interleave == TMASHMEM_INTERLEAVE_32B ? 32 : 16;
  for (uint32_t i = 0; i + 1 < rank; ++i) {
    uint64_t s = d.byte_strides[i];
    if (s == 0 || s % stride_unit != 0)
      return fail(call,
                  "desc.byte_strides[%u] (the stride of dimension %u) = %llu bytes is not a "
                  "positive multiple of %llu: TMA strides are multiples of 16 bytes (32 with "
                  "interleave 32B); pad each row to the next multiple (%llu)",
                  i, i + 1, ull(s), ull(stride_unit),
                  ull(s == 0 ? stride_unit : (s + stride_unit - 1) / stride_unit * stride_unit));
    if (s >= kStrideLimit)
      return fail(call,
                  "desc.byte_strides[%u] (the stride of dimension %u) = %llu bytes is not below "
                  "2^40 (%llu): TMA strides are below 2^40 bytes",
                  i, i + 1, ull(s), ull(kStrideLimit));
  }

  TMASHMEM_TRY(check_per_dimension(call, "box", d.box, rank, kMaxBox,
                                   "a TMA box spans 1 to 256 elements per dimension; move larger "
                                   "tiles as several boxes"));
  TMASHMEM_TRY(check_per_dimension(call, "element_strides", d.element_strides, rank,
                                   kMaxElementStride,
                                   "TMA traverses a box with a step of 1 to 8 elements (1 = every "
                                   "element; tmashmem_tensor_desc_init sets 1)"));
  if (d.element_strides[0] != 1)
    return fail(call,
                "desc.element_strides[0] = %u: TMA has no element stride along dimension 0 (the "
                "hardware would ignore it and copy every element); set it to 1",
                d.element_strides[0]);

  const uint64_t inner_bytes = uint64_t(d.box[0]) * elem;
  if (interleave == TMASHMEM_INTERLEAVE_NONE && inner_bytes % 16 != 0)
    return fail(call,
                "desc.box[0] = %u %s elements = %llu bytes is not a multiple of 16: without "
                "interleave TMA moves the innermost box row in 16-byte units; make box[0] a "
                "multiple of %u",
                d.box[0], dtype_name(dtype), ull(inner_bytes), 16 / elem);
  if (interleave == TMASHMEM_INTERLEAVE_NONE && swizzle != TMASHMEM_SWIZZLE_NONE &&
      inner_bytes > swizzle_span(swizzle))
    return fail(call,
                "desc.box[0] = %u %s elements = %llu bytes exceeds the %u-byte span of "
                "desc.swizzle = %s: a swizzled tile's innermost row must fit in the swizzle span; "
                "use box[0] <= %u or a wider swizzle",
                d.box[0], dtype_name(dtype), ull(inner_bytes), swizzle_span(swizzle),
                swizzle_name(swizzle), swizzle_span(swizzle) / elem);
  if (interleave == TMASHMEM_INTERLEAVE_32B && swizzle != TMASHMEM_SWIZZLE_32B)
    return fail(call,
                "desc.swizzle = %s with desc.interleave = 32B: TMA requires TMASHMEM_SWIZZLE_32B "
                "with 32-byte interleave",
                swizzle_name(swizzle));
  if (oob == TMASHMEM_OOB_FILL_NAN && !dtype_is_float(dtype))
    return fail(call,
                "desc.oob_fill = nan with desc.dtype = %s: TMA fills NaN only for floating-point "
                "types; use TMASHMEM_OOB_FILL_ZERO",
                dtype_name(dtype));

  // Bytes of one tile: whole 16-byte units of the innermost row (interleaved rows are padded
  // to them), times ceil(box / element stride) rows along the others. In shared memory, a
  // swizzled row narrower than the swizzle span occupies the whole span.
  uint64_t rows = 1;
  for (uint32_t i = 1; i < rank; ++i)
    rows *= (d.box[i] + d.element_strides[i] - 1) / d.element_strides[i];
  const uint64_t row_bytes = (inner_bytes + 15) / 16 * 16;
  const uint64_t box_bytes = row_bytes * rows;
  const uint64_t pitch = interleave == TMASHMEM_INTERLEAVE_NONE && swizzle_span(swizzle) > row_bytes
                             ? swizzle_span(swizzle)
                             : row_bytes;
  if (box_bytes > kMaxBoxBytes)
    return fail(call,
                "desc.box gives tiles of %llu bytes, above the %llu bytes one mbarrier "
                "transaction can count (2^20 - 1, and more than any shared memory holds); shrink "
                "desc.box",
                ull(box_bytes), ull(kMaxBoxBytes));

  // Extent: the last row's offset plus the row, rounded up to whole 16-byte units (puts at
  // the right edge write them; interleaved rows round up to the interleave unit). Computed
  // in 128 bits: dims up to 2^32 times strides up to 2^40.
  const uint64_t unit = stride_unit;
  unsigned __int128 extent =
      (static_cast<unsigned __int128>(d.dims[0]) * elem + unit - 1) / unit * unit;
  for (uint32_t i = 1; i < rank; ++i)
    extent += static_cast<unsigned __int128>(d.dims[i] - 1) * d.byte_strides[i - 1];
  if (extent > static_cast<unsigned __int128>(~uint64_t(0)))
    return fail(call,
                "desc.dims and desc.byte_strides span more than 2^64 bytes: no memory holds that "
                "tensor; check the dims and strides");

  if (layout) {
    layout->elem_bytes = elem;
    layout->extent_bytes = static_cast<uint64_t>(extent);
    layout->box_bytes = static_cast<uint32_t>(box_bytes);
    layout->smem_bytes = static_cast<uint32_t>(pitch * rows);
    layout->address_alignment = interleave == TMASHMEM_INTERLEAVE_32B ? 32 : 16;
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t validate_tensor_placement(const char* call, const TensorLayout& layout,
                                            uint64_t address, uint64_t region_begin,
                                            uint64_t region_end, const char* region) {
  if (address % layout.address_alignment != 0)
    return fail(
        call,
        "the tensor's address %p is not %u-byte aligned: TMA needs a 16-byte aligned "
        "global address (32 with desc.interleave = 32B); align the pointer (tmashmem_malloc "
        "returns 256-byte aligned blocks)",
        reinterpret_cast<void*>(address), layout.address_alignment);
  if (address < region_begin || address >= region_end || layout.extent_bytes > region_end - address)
    return fail(call,
                "the tensor spans %llu bytes from %p (to %p), outside %s [%p, %p); shrink "
                "desc.dims or desc.byte_strides, or allocate a symmetric buffer of at least %llu "
                "bytes (tmashmem_tensor_desc_check reports the extent)",
                ull(layout.extent_bytes), reinterpret_cast<void*>(address),
                reinterpret_cast<void*>(address + layout.extent_bytes), region,
                reinterpret_cast<void*>(region_begin), reinterpret_cast<void*>(region_end),
                ull(layout.extent_bytes));
  return TMASHMEM_SUCCESS;
}

TensorMapArgs tensor_map_args(const tmashmem_tensor_desc_t& d) {
  TensorMapArgs a{};
  a.dtype = static_cast<CUtensorMapDataType>(d.dtype);
  a.rank = d.rank;
  for (uint32_t i = 0; i < TMASHMEM_TENSOR_MAX_RANK; ++i) {
    a.dims[i] = d.dims[i];
    a.box[i] = d.box[i];
    a.element_strides[i] = d.element_strides[i];
  }
  for (uint32_t i = 0; i + 1 < TMASHMEM_TENSOR_MAX_RANK; ++i) a.strides[i] = d.byte_strides[i];
  a.interleave = static_cast<CUtensorMapInterleave>(d.interleave);
  a.swizzle = static_cast<CUtensorMapSwizzle>(d.swizzle);
  a.l2_promotion = static_cast<CUtensorMapL2promotion>(d.l2_promotion);
  a.oob_fill = static_cast<CUtensorMapFloatOOBfill>(d.oob_fill);
  return a;
}

}  // namespace tmashmem
