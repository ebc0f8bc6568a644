// Tensor descriptor validation (runtime/tensor_desc.h): one test per TMA rule, each
// checking that the message names the field and its value, plus valid descriptors of every
// dtype, rank, swizzle, interleave, L2 promotion and OOB fill accepted.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/error.h"
#include "runtime/tensor_desc.h"
#include "tensor_geometry_check.h"
#include "tmashmem/tensor.h"

using tmashmem::TensorLayout;
using tmashmem::validate_tensor_desc;

namespace {

const char* kCall = "test_call";

uint64_t pick(std::mt19937_64& rng, uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo + 1); }

uint64_t round_up(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }

// A random descriptor that satisfies every rule: dims, padded strides, box within the
// swizzle span, element strides.
tmashmem_tensor_desc_t random_valid(std::mt19937_64& rng, tmashmem_dtype_t dtype, uint32_t rank,
                                    tmashmem_swizzle_t swizzle = TMASHMEM_SWIZZLE_NONE,
                                    tmashmem_interleave_t interleave = TMASHMEM_INTERLEAVE_NONE) {
  const uint32_t elem = tmashmem::dtype_bytes(dtype);
  tmashmem_tensor_desc_t d;
  std::memset(&d, 0, sizeof d);
  d.version = TMASHMEM_TENSOR_DESC_VERSION;
  d.dtype = dtype;
  d.rank = rank;
  d.interleave = interleave;
  d.swizzle = swizzle;
  d.l2_promotion = static_cast<uint32_t>(rng() % 4);
  d.oob_fill =
      tmashmem::dtype_is_float(dtype) && rng() % 2 ? TMASHMEM_OOB_FILL_NAN : TMASHMEM_OOB_FILL_ZERO;
  const uint64_t stride_unit = interleave == TMASHMEM_INTERLEAVE_32B ? 32 : 16;
  for (uint32_t i = 0; i < rank; ++i) d.dims[i] = pick(rng, 1, i == 0 ? 3000 : 40);
  uint64_t stride = round_up(d.dims[0] * elem, stride_unit) + stride_unit * pick(rng, 0, 2);
  for (uint32_t i = 0; i + 1 < rank; ++i) {
    d.byte_strides[i] = stride;
    stride = stride * d.dims[i + 1] + stride_unit * pick(rng, 0, 3);
  }
  // Innermost box: a multiple of 16 bytes, within the swizzle span when swizzled.
  uint32_t max_inner =
      swizzle == TMASHMEM_SWIZZLE_NONE ? 256 * elem : tmashmem::swizzle_span(swizzle);
  if (max_inner > 256 * elem) max_inner = 256 * elem;
  uint32_t units = static_cast<uint32_t>(pick(rng, 1, max_inner / 16));
  d.box[0] = interleave == TMASHMEM_INTERLEAVE_NONE ? units * 16 / elem
                                                    : static_cast<uint32_t>(pick(rng, 1, 256));
  if (d.box[0] == 0) d.box[0] = 16 / elem;
  d.element_strides[0] = 1;
  for (uint32_t i = 1; i < rank; ++i) {
    d.box[i] = static_cast<uint32_t>(pick(rng, 1, 4));
    d.element_strides[i] = static_cast<uint32_t>(pick(rng, 1, 8));
  }
  return d;
}

tmashmem_tensor_desc_t simple(tmashmem_dtype_t dtype = TMASHMEM_DTYPE_F32, uint32_t rank = 3) {
  uint64_t dims[5] = {64, 32, 16, 8, 4};
  uint32_t box[5] = {16, 8, 4, 2, 2};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, dtype, rank, dims, box) == TMASHMEM_SUCCESS);
  return d;
}

bool accepted(const tmashmem_tensor_desc_t& d, TensorLayout* layout = nullptr) {
  tmashmem::clear_error();
  TensorLayout l;
  bool ok = validate_tensor_desc(kCall, &d, layout ? layout : &l) == TMASHMEM_SUCCESS;
  if (!ok) UNSCOPED_INFO("rejected: " << tmashmem::last_error());
  return ok;
}

// Expects INVALID_VALUE and returns the message, which must name the call and every needle.
std::string rejected(const tmashmem_tensor_desc_t* d, const std::vector<std::string>& needles) {
  tmashmem::clear_error();
  TensorLayout l;
  tmashmem_status_t st = validate_tensor_desc(kCall, d, &l);
  std::string message = tmashmem::last_error();
  INFO("message: " << message);
  CHECK(st == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(message.find(kCall) != std::string::npos);
  for (const std::string& n : needles) CHECK(message.find(n) != std::string::npos);
  return message;
}

// A per-dimension field of range [lo, hi] is rejected just outside it: `below` (lo - 1) in
// dimension 1 and `above` (hi + 1) in dimension 2, each message naming the entry, its
// value and `range`.
template <typename T>
void out_of_range_rejected(T (tmashmem_tensor_desc_t::*field)[TMASHMEM_TENSOR_MAX_RANK],
                           const char* name, T below, T above, const char* range) {
  const T values[] = {below, above};
  for (int i = 0; i < 2; ++i) {
    tmashmem_tensor_desc_t d = simple();
    (d.*field)[i + 1] = values[i];
    rejected(&d, {std::string("desc.") + name + "[" + std::to_string(i + 1) +
                      "] = " + std::to_string(values[i]),
                  range});
  }
}

const tmashmem_dtype_t kAllDtypes[] = {
    TMASHMEM_DTYPE_U8,      TMASHMEM_DTYPE_U16,  TMASHMEM_DTYPE_U32,     TMASHMEM_DTYPE_I32,
    TMASHMEM_DTYPE_U64,     TMASHMEM_DTYPE_I64,  TMASHMEM_DTYPE_F16,     TMASHMEM_DTYPE_F32,
    TMASHMEM_DTYPE_F64,     TMASHMEM_DTYPE_BF16, TMASHMEM_DTYPE_F32_FTZ, TMASHMEM_DTYPE_TF32,
    TMASHMEM_DTYPE_TF32_FTZ};

}  // namespace

// ---------------------------------------------------------------------------------------
// Accepted

TEST_CASE("tensor desc: every dtype at every rank 1..5 is accepted") {
  auto rng = tmashmem_test::make_rng();
  for (tmashmem_dtype_t dtype : kAllDtypes)
    for (uint32_t rank = 1; rank <= 5; ++rank)
      for (int trial = 0; trial < 20; ++trial) {
        tmashmem_tensor_desc_t d = random_valid(rng, dtype, rank);
        INFO("dtype " << tmashmem::dtype_name(dtype) << " rank " << rank);
        CHECK(accepted(d));
      }
}

TEST_CASE("tensor desc: every swizzle, interleave, L2 promotion and fill is accepted where valid") {
  auto rng = tmashmem_test::make_rng(1);
  for (tmashmem_dtype_t dtype : kAllDtypes)
    for (uint32_t rank = 1; rank <= 5; ++rank) {
      for (int s = 0; s <= 3; ++s)
        CHECK(accepted(random_valid(rng, dtype, rank, static_cast<tmashmem_swizzle_t>(s))));
      if (rank >= 3) {
        for (int s = 0; s <= 3; ++s)
          CHECK(accepted(random_valid(rng, dtype, rank, static_cast<tmashmem_swizzle_t>(s),
                                      TMASHMEM_INTERLEAVE_16B)));
        CHECK(accepted(
            random_valid(rng, dtype, rank, TMASHMEM_SWIZZLE_32B, TMASHMEM_INTERLEAVE_32B)));
      }
    }
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F16);
  for (int l2 = 0; l2 <= 3; ++l2) {
    d.l2_promotion = static_cast<uint32_t>(l2);
    CHECK(accepted(d));
  }
  for (tmashmem_dtype_t dtype : kAllDtypes) {
    tmashmem_tensor_desc_t f = simple(dtype, 2);
    if (!tmashmem::dtype_is_float(dtype)) continue;
    f.oob_fill = TMASHMEM_OOB_FILL_NAN;
    CHECK(accepted(f));
  }
}

TEST_CASE("tensor desc: swizzled rows narrower than the span are padded in shared memory") {
  const struct { uint32_t swizzle, span; } spans[] = {{1, 32}, {2, 64}, {3, 128}};
  for (auto sp : spans)
    for (uint32_t units = 1; units <= sp.span / 16; ++units) {
      tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F32, 3);
      d.swizzle = sp.swizzle;
      d.box[0] = units * 4;  // units * 16 bytes
      d.box[1] = 3;
      d.box[2] = 2;
      TensorLayout l;
      REQUIRE(accepted(d, &l));
      CHECK(l.box_bytes == units * 16 * 6);  // the bytes a get completes
      CHECK(l.smem_bytes == sp.span * 6);    // the room a tile takes: rows of a whole span
    }
}

TEST_CASE("tensor desc: the limits themselves are accepted") {
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_U8, 2);
  d.dims[1] = uint64_t(1) << 32;  // dims up to 2^32
  d.box[0] = 256;                 // box up to 256
  d.box[1] = 256;
  d.element_strides[1] = 8;  // element strides up to 8
  CHECK(accepted(d));
  d = simple(TMASHMEM_DTYPE_U8, 2);
  d.byte_strides[0] = (uint64_t(1) << 40) - 16;  // strides below 2^40
  CHECK(accepted(d));
  // Swizzle spans: exactly the span is fine.
  const struct {
    tmashmem_swizzle_t s;
    uint32_t span;
  } spans[] = {
      {TMASHMEM_SWIZZLE_32B, 32}, {TMASHMEM_SWIZZLE_64B, 64}, {TMASHMEM_SWIZZLE_128B, 128}};
  for (auto sp : spans) {
    tmashmem_tensor_desc_t e = simple(TMASHMEM_DTYPE_F16, 2);
    e.swizzle = sp.s;
    e.box[0] = sp.span / 2;
    CHECK(accepted(e));
  }
}

TEST_CASE("tensor desc: the layout gives extent and tile bytes") {
  auto rng = tmashmem_test::make_rng(2);
  for (int trial = 0; trial < 500; ++trial) {
    tmashmem_dtype_t dtype = kAllDtypes[rng() % 13];
    uint32_t rank = static_cast<uint32_t>(pick(rng, 1, 5));
    tmashmem_tensor_desc_t d = random_valid(rng, dtype, rank);
    TensorLayout l;
    REQUIRE(accepted(d, &l));
    const uint32_t elem = tmashmem::dtype_bytes(dtype);
    // Brute force: the last row starts at the all-maximum corner of the outer dimensions;
    // the extent ends with that row rounded up to 16 bytes (right-edge puts write whole
    // 16-byte units).
    uint64_t last_row = 0;
    for (uint32_t i = 1; i < rank; ++i) last_row += (d.dims[i] - 1) * d.byte_strides[i - 1];
    CHECK(l.extent_bytes == last_row + round_up(d.dims[0] * elem, 16));
    uint64_t rows = 1;
    for (uint32_t i = 1; i < rank; ++i)
      rows *= (d.box[i] + d.element_strides[i] - 1) / d.element_strides[i];
    CHECK(l.box_bytes == uint64_t(d.box[0]) * elem * rows);
    CHECK(l.smem_bytes == l.box_bytes);  // no swizzle: no padding
    CHECK(l.elem_bytes == elem);
    CHECK(l.address_alignment == 16);
  }
}

// ---------------------------------------------------------------------------------------
// One test per rule

TEST_CASE("tensor desc rule: desc must not be NULL") { rejected(nullptr, {"desc is NULL"}); }

TEST_CASE("tensor desc rule: version") {
  tmashmem_tensor_desc_t d = simple();
  d.version = 7;
  rejected(&d, {"desc.version = 7", "TMASHMEM_TENSOR_DESC_VERSION"});
}

TEST_CASE("tensor desc rule: dtype must be a tmashmem_dtype_t") {
  tmashmem_tensor_desc_t d = simple();
  d.dtype = 13;  // 16U4_ALIGN8B: Blackwell only
  rejected(&d, {"desc.dtype = 13"});
  d.dtype = ~0u;
  rejected(&d, {"desc.dtype = 4294967295"});
}

TEST_CASE("tensor desc rule: rank 1..5") {
  tmashmem_tensor_desc_t d = simple();
  d.rank = 0;
  rejected(&d, {"desc.rank = 0", "1..5"});
  d.rank = 6;
  rejected(&d, {"desc.rank = 6", "1..5"});
}

TEST_CASE("tensor desc rule: enum fields take their enum's values") {
  tmashmem_tensor_desc_t d = simple();
  d.interleave = 3;
  rejected(&d, {"desc.interleave = 3"});
  d = simple();
  d.swizzle = 4;  // 128B_ATOM_32B: Blackwell only
  rejected(&d, {"desc.swizzle = 4"});
  d = simple();
  d.l2_promotion = 4;
  rejected(&d, {"desc.l2_promotion = 4"});
  d = simple();
  d.oob_fill = 2;
  rejected(&d, {"desc.oob_fill = 2"});
}

TEST_CASE("tensor desc rule: reserved fields are zero") {
  tmashmem_tensor_desc_t d = simple();
  d.reserved0 = 5;
  rejected(&d, {"desc.reserved0 = 5"});
  for (int i = 0; i < 4; ++i) {
    d = simple();
    d.reserved[i] = 9;
    rejected(&d, {"desc.reserved[" + std::to_string(i) + "] = 9"});
  }
}

TEST_CASE("tensor desc rule: interleave needs rank 3..5") {
  for (uint32_t rank = 1; rank <= 2; ++rank) {
    tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F16, rank);
    d.interleave = TMASHMEM_INTERLEAVE_16B;
    rejected(&d, {"desc.rank = " + std::to_string(rank), "desc.interleave = 16B", "3..5"});
  }
}

TEST_CASE("tensor desc rule: entries beyond rank are zero") {
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F32, 2);
  d.dims[3] = 4;
  rejected(&d, {"desc.dims[3] = 4", "desc.rank = 2"});
  d = simple(TMASHMEM_DTYPE_F32, 2);
  d.box[2] = 1;
  rejected(&d, {"desc.box[2] = 1", "desc.rank = 2"});
  d = simple(TMASHMEM_DTYPE_F32, 2);
  d.element_strides[4] = 1;
  rejected(&d, {"desc.element_strides[4] = 1", "desc.rank = 2"});
  d = simple(TMASHMEM_DTYPE_F32, 2);
  d.byte_strides[1] = 256;  // byte_strides[1] is dimension 2's stride: beyond rank 2
  rejected(&d, {"desc.byte_strides[1] = 256", "desc.rank = 2"});
}

TEST_CASE("tensor desc rule: dims 1..2^32") {
  out_of_range_rejected<uint64_t>(&tmashmem_tensor_desc_t::dims, "dims", 0, (uint64_t(1) << 32) + 1,
                                  "1..2^32");
}

TEST_CASE("tensor desc rule: byte strides are positive multiples of 16") {
  tmashmem_tensor_desc_t d = simple();
  d.byte_strides[0] = 0;
  rejected(&d, {"desc.byte_strides[0]", "dimension 1", "= 0 bytes", "multiple of 16"});
  d = simple();
  d.byte_strides[1] = 8200;
  rejected(&d, {"desc.byte_strides[1]", "dimension 2", "= 8200 bytes", "multiple of 16", "8208"});
}

TEST_CASE("tensor desc rule: byte strides are multiples of 32 with 32-byte interleave") {
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F16, 3);
  d.interleave = TMASHMEM_INTERLEAVE_32B;
  d.swizzle = TMASHMEM_SWIZZLE_32B;
  d.byte_strides[0] = 144;  // a multiple of 16 but not of 32
  d.byte_strides[1] = 144 * 32;
  rejected(&d, {"desc.byte_strides[0]", "= 144 bytes", "multiple of 32"});
  d.byte_strides[0] = 160;
  d.byte_strides[1] = 160 * 32;
  CHECK(accepted(d));
}

TEST_CASE("tensor desc rule: byte strides below 2^40") {
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F32, 2);
  d.byte_strides[0] = uint64_t(1) << 40;
  rejected(&d, {"desc.byte_strides[0]", "= 1099511627776 bytes", "2^40"});
}

TEST_CASE("tensor desc rule: box 1..256") {
  out_of_range_rejected<uint32_t>(&tmashmem_tensor_desc_t::box, "box", 0, 257, "1..256");
}

TEST_CASE("tensor desc rule: element strides 1..8") {
  out_of_range_rejected<uint32_t>(&tmashmem_tensor_desc_t::element_strides, "element_strides", 0, 9,
                                  "1..8");
}

TEST_CASE("tensor desc rule: element_strides[0] is 1") {
  tmashmem_tensor_desc_t d = simple();
  d.element_strides[0] = 2;
  rejected(&d, {"desc.element_strides[0] = 2", "dimension 0"});
}

TEST_CASE("tensor desc rule: the innermost box row is a multiple of 16 bytes") {
  for (tmashmem_dtype_t dtype : kAllDtypes) {
    const uint32_t elem = tmashmem::dtype_bytes(dtype);
    tmashmem_tensor_desc_t d = simple(dtype, 2);
    d.box[0] = 16 / elem + 1;
    const uint32_t bytes = d.box[0] * elem;
    rejected(&d, {"desc.box[0] = " + std::to_string(d.box[0]), tmashmem::dtype_name(dtype),
                  std::to_string(bytes) + " bytes", "multiple of 16",
                  "multiple of " + std::to_string(16 / elem)});
  }
  // With interleave the 16-byte rule does not apply.
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F16, 3);
  d.interleave = TMASHMEM_INTERLEAVE_16B;
  d.box[0] = 3;
  CHECK(accepted(d));
}

TEST_CASE("tensor desc rule: a swizzled box row fits in the swizzle span") {
  const struct {
    tmashmem_swizzle_t s;
    uint32_t span;
    const char* name;
  } spans[] = {{TMASHMEM_SWIZZLE_32B, 32, "32B"},
               {TMASHMEM_SWIZZLE_64B, 64, "64B"},
               {TMASHMEM_SWIZZLE_128B, 128, "128B"}};
  for (auto sp : spans) {
    tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F32, 2);
    d.swizzle = sp.s;
    d.box[0] = sp.span / 4 + 4;  // one 16-byte unit too many
    rejected(&d,
             {"desc.box[0] = " + std::to_string(d.box[0]), std::to_string(sp.span + 16) + " bytes",
              std::to_string(sp.span) + "-byte span", std::string("desc.swizzle = ") + sp.name});
  }
}

TEST_CASE("tensor desc rule: 32-byte interleave needs the 32B swizzle") {
  for (int s : {0, 2, 3}) {
    tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F16, 3);
    d.interleave = TMASHMEM_INTERLEAVE_32B;
    d.swizzle = static_cast<uint32_t>(s);
    rejected(&d, {"desc.swizzle", "desc.interleave = 32B", "TMASHMEM_SWIZZLE_32B"});
  }
}

TEST_CASE("tensor desc rule: NaN fill only for floating-point dtypes") {
  for (tmashmem_dtype_t dtype : kAllDtypes) {
    if (tmashmem::dtype_is_float(dtype)) continue;
    tmashmem_tensor_desc_t d = simple(dtype, 2);
    d.oob_fill = TMASHMEM_OOB_FILL_NAN;
    rejected(&d,
             {"desc.oob_fill = nan", std::string("desc.dtype = ") + tmashmem::dtype_name(dtype)});
  }
}

TEST_CASE("tensor desc rule: one tile fits an mbarrier transaction") {
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_F64, 3);
  d.box[0] = 256;
  d.box[1] = 256;
  d.box[2] = 4;  // 256 * 8 * 256 * 4 = 2 MiB
  rejected(&d, {"desc.box", "2097152 bytes", "2^20"});
  d.element_strides[2] = 4;  // only one plane is loaded: 512 KiB
  CHECK(accepted(d));
}

TEST_CASE("tensor desc rule: the tensor spans fewer than 2^64 bytes") {
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_U8, 4);
  d.dims[1] = d.dims[2] = d.dims[3] = uint64_t(1) << 32;
  d.byte_strides[0] = d.byte_strides[1] = d.byte_strides[2] = (uint64_t(1) << 40) - 16;
  rejected(&d, {"desc.dims", "desc.byte_strides", "2^64"});
}

TEST_CASE("tensor desc rule: the address is 16-byte aligned, 32 with 32-byte interleave") {
  tmashmem_tensor_desc_t d = simple();
  TensorLayout l;
  REQUIRE(validate_tensor_desc(kCall, &d, &l) == TMASHMEM_SUCCESS);
  const uint64_t base = 0x7f0000000000ull;
  CHECK(tmashmem::validate_tensor_placement(kCall, l, base + 16, base, base + (1 << 30), "r") ==
        TMASHMEM_SUCCESS);
  CHECK(tmashmem::validate_tensor_placement(kCall, l, base + 8, base, base + (1 << 30), "r") ==
        TMASHMEM_ERROR_INVALID_VALUE);
  std::string m = tmashmem::last_error();
  CHECK(m.find("0x7f0000000008") != std::string::npos);
  CHECK(m.find("16-byte aligned") != std::string::npos);

  tmashmem_tensor_desc_t i = simple(TMASHMEM_DTYPE_F16, 3);
  i.interleave = TMASHMEM_INTERLEAVE_32B;
  i.swizzle = TMASHMEM_SWIZZLE_32B;
  REQUIRE(validate_tensor_desc(kCall, &i, &l) == TMASHMEM_SUCCESS);
  CHECK(l.address_alignment == 32);
  CHECK(tmashmem::validate_tensor_placement(kCall, l, base + 16, base, base + (1 << 30), "r") ==
        TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem::last_error().find("32-byte aligned") != std::string::npos);
}

TEST_CASE("tensor desc rule: the whole tensor lies inside its region") {
  auto rng = tmashmem_test::make_rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    tmashmem_tensor_desc_t d =
        random_valid(rng, kAllDtypes[rng() % 13], static_cast<uint32_t>(pick(rng, 1, 5)));
    TensorLayout l;
    REQUIRE(validate_tensor_desc(kCall, &d, &l) == TMASHMEM_SUCCESS);
    const uint64_t begin = 0x10000000ull, end = begin + l.extent_bytes + 16 * pick(rng, 0, 4);
    const uint64_t last_fit = begin + (end - begin - l.extent_bytes) / 16 * 16;
    CHECK(tmashmem::validate_tensor_placement(kCall, l, begin, begin, end, "r") ==
          TMASHMEM_SUCCESS);
    CHECK(tmashmem::validate_tensor_placement(kCall, l, last_fit, begin, end, "r") ==
          TMASHMEM_SUCCESS);
    // One 16-byte step past the end, or before the start: rejected, naming the extent.
    CHECK(tmashmem::validate_tensor_placement(kCall, l, last_fit + 16, begin, end,
                                              "the test region") == TMASHMEM_ERROR_INVALID_VALUE);
    std::string m = tmashmem::last_error();
    CHECK(m.find(std::to_string(l.extent_bytes) + " bytes") != std::string::npos);
    CHECK(m.find("the test region") != std::string::npos);
    CHECK(tmashmem::validate_tensor_placement(kCall, l, begin - 16, begin, end, "r") ==
          TMASHMEM_ERROR_INVALID_VALUE);
  }
}

// ---------------------------------------------------------------------------------------
// The public helpers

TEST_CASE("tensor desc: tmashmem_tensor_desc_init packs the strides and sets defaults") {
  auto rng = tmashmem_test::make_rng(4);
  for (tmashmem_dtype_t dtype : kAllDtypes)
    for (uint32_t rank = 1; rank <= 5; ++rank) {
      uint64_t dims[5];
      uint32_t box[5];
      const uint32_t elem = tmashmem::dtype_bytes(dtype);
      for (uint32_t i = 0; i < 5; ++i) {
        dims[i] = i == 0 ? 16 / elem * pick(rng, 1, 20) : pick(rng, 1, 9);
        box[i] = i == 0 ? 16 / elem : static_cast<uint32_t>(pick(rng, 1, 4));
      }
      tmashmem_tensor_desc_t d;
      std::memset(&d, 0xab, sizeof d);
      REQUIRE(tmashmem_tensor_desc_init(&d, dtype, rank, dims, box) == TMASHMEM_SUCCESS);
      CHECK(d.version == TMASHMEM_TENSOR_DESC_VERSION);
      CHECK(d.dtype == dtype);
      CHECK(d.rank == rank);
      uint64_t stride = elem;
      for (uint32_t i = 0; i < 5; ++i) {
        CHECK(d.dims[i] == (i < rank ? dims[i] : 0));
        CHECK(d.box[i] == (i < rank ? box[i] : 0));
        CHECK(d.element_strides[i] == (i < rank ? 1u : 0u));
        stride *= dims[i];
        if (i < 4) CHECK(d.byte_strides[i] == (i + 1 < rank ? stride : 0));
      }
      CHECK(d.interleave == TMASHMEM_INTERLEAVE_NONE);
      CHECK(d.swizzle == TMASHMEM_SWIZZLE_NONE);
      CHECK(d.l2_promotion == TMASHMEM_L2_PROMOTION_NONE);
      CHECK(d.oob_fill == TMASHMEM_OOB_FILL_ZERO);
      CHECK(d.reserved0 == 0);
      CHECK(accepted(d));
      size_t extent = 0;
      CHECK(tmashmem_tensor_desc_check(&d, &extent) == TMASHMEM_SUCCESS);
      uint64_t total = elem;
      for (uint32_t i = 0; i < rank; ++i) total *= dims[i];
      CHECK(extent == total);  // packed: the extent is the element count times the size
    }
}

TEST_CASE("tensor desc: tmashmem_tensor_desc_init rejects what it cannot fill") {
  uint64_t dims[5] = {16, 2, 2, 2, 2};
  uint32_t box[5] = {16, 1, 1, 1, 1};
  tmashmem_tensor_desc_t d;
  CHECK(tmashmem_tensor_desc_init(nullptr, TMASHMEM_DTYPE_U8, 2, dims, box) ==
        TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U8, 2, nullptr, box) ==
        TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U8, 6, dims, box) ==
        TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::string(tmashmem_last_error()).find("rank = 6") != std::string::npos);
  CHECK(tmashmem_tensor_desc_init(&d, static_cast<tmashmem_dtype_t>(13), 2, dims, box) ==
        TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::string(tmashmem_last_error()).find("dtype = 13") != std::string::npos);
}

TEST_CASE("tensor desc: tmashmem_tensor_desc_check reports the first broken rule") {
  tmashmem_tensor_desc_t d = simple(TMASHMEM_DTYPE_BF16, 2);
  d.box[0] = 4;
  CHECK(tmashmem_tensor_desc_check(&d, nullptr) == TMASHMEM_ERROR_INVALID_VALUE);
  std::string m = tmashmem_last_error();
  CHECK(m.find("tmashmem_tensor_desc_check") != std::string::npos);
  CHECK(m.find("desc.box[0] = 4 bf16 elements = 8 bytes") != std::string::npos);
}

TEST_CASE("tensor desc: the encoding arguments mirror the descriptor") {
  auto rng = tmashmem_test::make_rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    uint32_t rank = static_cast<uint32_t>(pick(rng, 3, 5));
    tmashmem_tensor_desc_t d =
        random_valid(rng, kAllDtypes[rng() % 13], rank, static_cast<tmashmem_swizzle_t>(rng() % 4));
    tmashmem::TensorMapArgs a = tmashmem::tensor_map_args(d);
    CHECK(static_cast<int>(a.dtype) == static_cast<int>(d.dtype));
    CHECK(a.rank == rank);
    tmashmem_test::check_geometry(a, d);
    CHECK(static_cast<int>(a.swizzle) == static_cast<int>(d.swizzle));
    CHECK(static_cast<int>(a.interleave) == static_cast<int>(d.interleave));
    CHECK(static_cast<int>(a.l2_promotion) == static_cast<int>(d.l2_promotion));
    CHECK(static_cast<int>(a.oob_fill) == static_cast<int>(d.oob_fill));
  }
}
