// Symmetric tensors on the emulated driver (tests/unit/emu): create, view, the per-PE maps
// and their device table, the POD handle, destroy, and the collective error paths
// (a descriptor that differs between PEs, or is invalid on one PE only). Runs under
// mpiexec -np 1, 2 and 4; every PE runs every case.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/tensor_desc.h"
#include "tensor_geometry_check.h"
#include "tmashmem/tensor.h"
#include "unit/emu/emulated_driver.h"

namespace {

using tmashmem::emu::TensorMapFields;

// tmashmem_init on the emulator for one test case; finalizes on every exit path.
struct EmuRuntime {
  bool ok = false;
  EmuRuntime() {
    tmashmem::emu::install();
    tmashmem_init_attr_t attr;
    tmashmem_init_attr_set_defaults(&attr);
    attr.heap_max = size_t(256) << 20;
    attr.chunk_size = size_t(4) << 20;
    ok = tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS;
    if (!ok) UNSCOPED_INFO("tmashmem_init: " << tmashmem_last_error());
  }
  ~EmuRuntime() {
    if (ok) tmashmem_finalize();
    tmashmem::emu::uninstall();
  }
};

const tmashmem_dtype_t kAllDtypes[] = {
    TMASHMEM_DTYPE_U8,      TMASHMEM_DTYPE_U16,  TMASHMEM_DTYPE_U32,     TMASHMEM_DTYPE_I32,
    TMASHMEM_DTYPE_U64,     TMASHMEM_DTYPE_I64,  TMASHMEM_DTYPE_F16,     TMASHMEM_DTYPE_F32,
    TMASHMEM_DTYPE_F64,     TMASHMEM_DTYPE_BF16, TMASHMEM_DTYPE_F32_FTZ, TMASHMEM_DTYPE_TF32,
    TMASHMEM_DTYPE_TF32_FTZ};

// The same random descriptor on every PE (the generator is seeded identically).
tmashmem_tensor_desc_t shared_random_desc(std::mt19937_64& rng, tmashmem_dtype_t dtype,
                                          uint32_t rank) {
  const uint32_t elem = tmashmem::dtype_bytes(dtype);
  uint64_t dims[5];
  uint32_t box[5];
  for (uint32_t i = 0; i < 5; ++i) {
    dims[i] = i == 0 ? 16 / elem * (1 + rng() % 8) : 1 + rng() % 6;
    box[i] = i == 0 ? 16 / elem * static_cast<uint32_t>(1 + rng() % 2)
                    : static_cast<uint32_t>(1 + rng() % 4);
  }
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, dtype, rank, dims, box) == TMASHMEM_SUCCESS);
  const uint32_t span = 32u << (rng() % 3);
  if (d.box[0] * elem <= span) d.swizzle = span == 32 ? 1 : span == 64 ? 2 : 3;
  return d;
}

std::mt19937_64 same_on_every_pe(uint64_t salt) {
  return std::mt19937_64(tmashmem_test::run_seed() ^ salt);
}

// Checks the map of `pe` against the descriptor and the expected address.
void check_map(const CUtensorMap& map, const tmashmem_tensor_desc_t& d, uint64_t address) {
  TensorMapFields f;
  REQUIRE(tmashmem::emu::decode_tensor_map(map, &f));
  CHECK(static_cast<uint32_t>(f.dtype) == d.dtype);
  CHECK(f.rank == d.rank);
  CHECK(f.address == address);
  tmashmem_test::check_geometry(f, d);
  CHECK(static_cast<uint32_t>(f.swizzle) == d.swizzle);
  CHECK(static_cast<uint32_t>(f.interleave) == d.interleave);
  CHECK(static_cast<uint32_t>(f.l2_promotion) == d.l2_promotion);
  CHECK(static_cast<uint32_t>(f.oob_fill) == d.oob_fill);
}

}  // namespace

TEST_CASE("tensor: create gives every reachable PE a map, a device table and a handle") {
  EmuRuntime rt;
  REQUIRE(tmashmem_test::all_ranks(rt.ok));
  const int me = tmashmem_my_pe(), npes = tmashmem_n_pes();
  const long buffers_before = tmashmem::emu::counts().device_buffers;
  auto rng = same_on_every_pe(11);
  for (tmashmem_dtype_t dtype : kAllDtypes)
    for (uint32_t rank = 1; rank <= 5; ++rank) {
      tmashmem_tensor_desc_t d = shared_random_desc(rng, dtype, rank);
      INFO("dtype " << tmashmem::dtype_name(dtype) << " rank " << rank);
      tmashmem_tensor_t t = nullptr;
      tmashmem_status_t st = tmashmem_tensor_create(&d, &t);
      INFO(tmashmem_last_error());
      REQUIRE(tmashmem_test::all_ranks(st == TMASHMEM_SUCCESS));
      void* data = tmashmem_tensor_data(t);
      REQUIRE(data != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(data) % 256 == 0);
      size_t extent = 0;
      REQUIRE(tmashmem_tensor_desc_check(&d, &extent) == TMASHMEM_SUCCESS);

      // The POD handle.
      tmashmem_tensor_handle_t h;
      REQUIRE(tmashmem_tensor_handle(t, &h) == TMASHMEM_SUCCESS);
      CHECK(h.version == TMASHMEM_TENSOR_HANDLE_VERSION);
      CHECK(h.dtype == d.dtype);
      CHECK(h.rank == rank);
      CHECK(h.elem_bytes == tmashmem::dtype_bytes(dtype));
      CHECK(h.swizzle == d.swizzle);
      CHECK(h.my_pe == me);
      CHECK(h.first_local_pe == 0);  // one node in these tests
      CHECK(h.n_local_pes == npes);
      CHECK(h.has_multicast == 0u);
      CHECK(h.data == reinterpret_cast<uint64_t>(data));
      CHECK(h.maps % 128 == 0);
      uint64_t tile = uint64_t(d.box[0]) * h.elem_bytes;
      for (uint32_t i = 0; i < 5; ++i) {
        CHECK(h.box[i] == d.box[i]);
        CHECK(h.dims[i] == d.dims[i]);
        if (i >= 1 && i < rank) tile *= d.box[i];
      }
      CHECK(h.box_bytes == tile);
      const uint32_t span = d.swizzle ? 16u << d.swizzle : 0;
      const uint64_t row = uint64_t(d.box[0]) * h.elem_bytes;
      CHECK(h.smem_bytes == tile / row * (row < span ? span : row));
      CHECK(h.interleave == d.interleave);
      CHECK(extent % 16 == 0);
      tmashmem_ctx_t ctx;
      REQUIRE(tmashmem_device_ctx(&ctx) == TMASHMEM_SUCCESS);
      CHECK(h.peer_stride == ctx.peer_stride);
      CHECK(h.reachable == ctx.reachable);

      // Host maps, and the device table holding the same bytes plus the multicast slot, zero:
      // the emulated GPU has no multicast here (test_multicast_setup covers the map it gets).
      std::vector<CUtensorMap> table(static_cast<size_t>(npes) + 1);
      REQUIRE(tmashmem::driver().cuMemcpyDtoH(table.data(), static_cast<CUdeviceptr>(h.maps),
                                              table.size() * sizeof(CUtensorMap)) == CUDA_SUCCESS);
      for (int pe = 0; pe < npes; ++pe) {
        CUtensorMap map;
        REQUIRE(tmashmem_tensor_get_map(t, pe, &map) == TMASHMEM_SUCCESS);
        void* peer = tmashmem_ptr(data, pe);
        REQUIRE(peer != nullptr);
        CHECK(reinterpret_cast<uint64_t>(peer) ==
              h.data + static_cast<uint64_t>(pe - me) * h.peer_stride);
        check_map(map, d, reinterpret_cast<uint64_t>(peer));
        CHECK(std::memcmp(&map, &table[static_cast<size_t>(pe)], sizeof map) == 0);
      }
      const CUtensorMap& multicast = table[static_cast<size_t>(npes)];
      CHECK(std::all_of(std::begin(multicast.opaque), std::end(multicast.opaque),
                        [](cuuint64_t w) { return w == 0; }));
      CHECK(tmashmem_tensor_destroy(t) == TMASHMEM_SUCCESS);
    }
  CHECK(tmashmem::emu::counts().device_buffers == buffers_before);
}

TEST_CASE("tensor: a view maps existing symmetric memory, and must lie inside the heap") {
  EmuRuntime rt;
  REQUIRE(tmashmem_test::all_ranks(rt.ok));
  const int npes = tmashmem_n_pes();
  uint64_t dims[2] = {64, 48};
  uint32_t box[2] = {32, 16};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_F16, 2, dims, box) == TMASHMEM_SUCCESS);
  size_t extent = 0;
  REQUIRE(tmashmem_tensor_desc_check(&d, &extent) == TMASHMEM_SUCCESS);
  REQUIRE(extent == 64 * 48 * 2);  // rows of 128 bytes: nothing to round up
  char* buffer = static_cast<char*>(tmashmem_malloc(extent + 4096));
  REQUIRE(tmashmem_test::all_ranks(buffer != nullptr));

  tmashmem_tensor_t t = nullptr;
  REQUIRE(
      tmashmem_test::all_ranks(tmashmem_tensor_view(buffer + 1024, &d, &t) == TMASHMEM_SUCCESS));
  CHECK(tmashmem_tensor_data(t) == buffer + 1024);
  for (int pe = 0; pe < npes; ++pe) {
    CUtensorMap map;
    REQUIRE(tmashmem_tensor_get_map(t, pe, &map) == TMASHMEM_SUCCESS);
    check_map(map, d, reinterpret_cast<uint64_t>(tmashmem_ptr(buffer + 1024, pe)));
  }
  // Two shapes over one buffer.
  tmashmem_tensor_desc_t d2 = d;
  d2.box[0] = 8;
  d2.box[1] = 1;
  tmashmem_tensor_t t2 = nullptr;
  REQUIRE(
      tmashmem_test::all_ranks(tmashmem_tensor_view(buffer + 1024, &d2, &t2) == TMASHMEM_SUCCESS));
  CHECK(tmashmem_tensor_destroy(t2) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_tensor_destroy(t) == TMASHMEM_SUCCESS);

  // Misaligned: every PE fails, naming the address rule.
  CHECK(tmashmem_tensor_view(buffer + 8, &d, &t) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::string(tmashmem_last_error()).find("16-byte aligned") != std::string::npos);
  CHECK(t == nullptr);
  // Past the backed heap.
  tmashmem_ctx_t ctx;
  REQUIRE(tmashmem_device_ctx(&ctx) == TMASHMEM_SUCCESS);
  char* near_end = reinterpret_cast<char*>(ctx.heap_base + ctx.heap_size - 1024);
  CHECK(tmashmem_tensor_view(near_end, &d, &t) == TMASHMEM_ERROR_INVALID_VALUE);
  std::string m = tmashmem_last_error();
  CHECK(m.find("the heap's backed range") != std::string::npos);
  CHECK(m.find(std::to_string(extent) + " bytes") != std::string::npos);
  // Not heap memory at all.
  std::vector<char> host(extent + 64);
  char* aligned =
      reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(host.data()) + 15) / 16 * 16);
  CHECK(tmashmem_tensor_view(aligned, &d, &t) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::string(tmashmem_last_error()).find("not in this PE's symmetric heap") !=
        std::string::npos);
  CHECK(tmashmem_tensor_view(nullptr, &d, &t) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_free(buffer) == TMASHMEM_SUCCESS);
}

TEST_CASE("tensor: PEs that describe different tensors all get a symmetry error") {
  EmuRuntime rt;
  REQUIRE(tmashmem_test::all_ranks(rt.ok));
  const int me = tmashmem_my_pe(), npes = tmashmem_n_pes();
  if (npes < 2) {
    tmashmem_test::mark_skipped("needs 2 or more PEs");
    return;
  }
  uint64_t dims[3] = {32, 16, 8};
  uint32_t box[3] = {16, 4, 2};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U16, 3, dims, box) == TMASHMEM_SUCCESS);
  if (me == npes - 1) d.box[1] = 8;
  tmashmem_tensor_t t = nullptr;
  CHECK(tmashmem_tensor_create(&d, &t) == TMASHMEM_ERROR_SYMMETRY);
  std::string m = tmashmem_last_error();
  INFO(m);
  CHECK(m.find("desc.box[1] = 4 on PE 0") != std::string::npos);
  CHECK(m.find("8 on PE " + std::to_string(npes - 1)) != std::string::npos);
  CHECK(t == nullptr);

  // A view at different heap offsets.
  char* buffer = static_cast<char*>(tmashmem_malloc(1 << 16));
  REQUIRE(tmashmem_test::all_ranks(buffer != nullptr));
  d.box[1] = 4;
  CHECK(tmashmem_tensor_view(buffer + (me == 0 ? 0 : 256), &d, &t) == TMASHMEM_ERROR_SYMMETRY);
  CHECK(std::string(tmashmem_last_error()).find("heap offset") != std::string::npos);
  CHECK(tmashmem_free(buffer) == TMASHMEM_SUCCESS);

  // Still usable afterwards: the failed calls left nothing behind.
  REQUIRE(tmashmem_test::all_ranks(tmashmem_tensor_create(&d, &t) == TMASHMEM_SUCCESS));
  CHECK(tmashmem_tensor_destroy(t) == TMASHMEM_SUCCESS);
}

TEST_CASE("tensor: a descriptor invalid on one PE is an error on every PE") {
  EmuRuntime rt;
  REQUIRE(tmashmem_test::all_ranks(rt.ok));
  const int me = tmashmem_my_pe(), npes = tmashmem_n_pes();
  const int bad = npes - 1;
  uint64_t dims[2] = {128, 4};
  uint32_t box[2] = {64, 2};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U8, 2, dims, box) == TMASHMEM_SUCCESS);
  if (me == bad) d.box[0] = 300;
  tmashmem_tensor_t t = nullptr;
  CHECK(tmashmem_tensor_create(&d, &t) == TMASHMEM_ERROR_INVALID_VALUE);
  std::string m = tmashmem_last_error();
  INFO(m);
  CHECK(m.find("desc.box[0] = 300") != std::string::npos);
  if (me != bad) CHECK(m.find("failed on PE " + std::to_string(bad)) != std::string::npos);
  CHECK(tmashmem_tensor_create(nullptr, &t) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::string(tmashmem_last_error()).find("desc is NULL") != std::string::npos);
}

TEST_CASE("tensor: handle checks in the non-collective calls") {
  EmuRuntime rt;
  REQUIRE(tmashmem_test::all_ranks(rt.ok));
  const int npes = tmashmem_n_pes();
  uint64_t dims[1] = {256};
  uint32_t box[1] = {64};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_F32, 1, dims, box) == TMASHMEM_SUCCESS);
  tmashmem_tensor_t t = nullptr;
  REQUIRE(tmashmem_test::all_ranks(tmashmem_tensor_create(&d, &t) == TMASHMEM_SUCCESS));
  CUtensorMap map;
  CHECK(tmashmem_tensor_get_map(t, npes, &map) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::string(tmashmem_last_error()).find("pe = " + std::to_string(npes)) !=
        std::string::npos);
  CHECK(tmashmem_tensor_get_map(t, -1, &map) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_tensor_get_map(t, 0, nullptr) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_tensor_handle(t, nullptr) == TMASHMEM_ERROR_INVALID_VALUE);
  int not_a_tensor = 0;
  auto fake = reinterpret_cast<tmashmem_tensor_t>(&not_a_tensor);
  CHECK(tmashmem_tensor_data(fake) == nullptr);
  CHECK(std::string(tmashmem_last_error()).find("not a live tensor") != std::string::npos);
  CHECK(tmashmem_tensor_get_map(nullptr, 0, &map) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_tensor_destroy(nullptr) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_tensor_destroy(t) == TMASHMEM_SUCCESS);
}

TEST_CASE("tensor: a tensor does not outlive tmashmem_finalize") {
  tmashmem_tensor_t t = nullptr;
  uint64_t dims[1] = {256};
  uint32_t box[1] = {64};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U32, 1, dims, box) == TMASHMEM_SUCCESS);
  {
    EmuRuntime rt;
    REQUIRE(tmashmem_test::all_ranks(rt.ok));
    REQUIRE(tmashmem_test::all_ranks(tmashmem_tensor_create(&d, &t) == TMASHMEM_SUCCESS));
  }
  CHECK(tmashmem_tensor_data(t) == nullptr);  // not initialised
  EmuRuntime rt;
  REQUIRE(tmashmem_test::all_ranks(rt.ok));
  CHECK(tmashmem_tensor_data(t) == nullptr);
  CHECK(std::string(tmashmem_last_error()).find("before tmashmem_finalize") != std::string::npos);
  CHECK(tmashmem_tensor_destroy(t) == TMASHMEM_ERROR_INVALID_VALUE);  // releases the host part
}

TEST_CASE("tensor: the validator and the emulated driver agree on every mutation") {
  // Each mutation breaks (or keeps) one documented TMA rule; tmashmem's verdict must match
  // the emulated cuTensorMapEncodeTiled's. tmashmem-only rules are left out.
  tmashmem::emu::install();
  REQUIRE(tmashmem::driver().cuInit(0) == CUDA_SUCCESS);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  REQUIRE(tmashmem::driver().cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
  REQUIRE(tmashmem::driver().cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
  REQUIRE(tmashmem::driver().cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  auto rng = tmashmem_test::make_rng(21);
  int agreed = 0, rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    tmashmem_dtype_t dtype = kAllDtypes[rng() % 13];
    uint32_t rank = 1 + static_cast<uint32_t>(rng() % 5);
    tmashmem_tensor_desc_t d = shared_random_desc(rng, dtype, rank);
    switch (rng() % 12) {
      case 0:
        d.dims[rng() % rank] = rng() % 2 ? 0 : (uint64_t(1) << 32) + rng() % 3;
        break;
      case 1:
        if (rank > 1) d.byte_strides[rng() % (rank - 1)] += 8 * (rng() % 3);
        break;
      case 2:
        d.box[rng() % rank] = static_cast<uint32_t>(rng() % 2 ? 0 : 255 + rng() % 3);
        break;
      case 3:
        if (rank > 1) d.element_strides[1 + rng() % (rank - 1)] = static_cast<uint32_t>(rng() % 10);
        break;
      case 4:
        d.box[0] = static_cast<uint32_t>(1 + rng() % 64);
        break;
      case 5:
        d.swizzle = static_cast<uint32_t>(rng() % 4);
        break;
      case 6:
        d.interleave = static_cast<uint32_t>(rng() % 3);
        d.swizzle = static_cast<uint32_t>(rng() % 4);
        break;
      case 7:
        d.oob_fill = 1;
        break;
      case 8:
        if (rank > 1) d.byte_strides[rng() % (rank - 1)] = (uint64_t(1) << 40) - 16 * (rng() % 2);
        break;
      default:
        break;  // unchanged: valid
    }
    tmashmem::clear_error();
    tmashmem::TensorLayout layout;
    bool ours = tmashmem::validate_tensor_desc("t", &d, &layout) == TMASHMEM_SUCCESS;
    // The box-bytes and extent limits are tmashmem's own; skip descriptors they decide.
    if (!ours && (tmashmem::last_error().find("2^20") != std::string::npos ||
                  tmashmem::last_error().find("2^64") != std::string::npos))
      continue;
    tmashmem::TensorMapArgs a = tmashmem::tensor_map_args(d);
    CUtensorMap map;
    void* address = reinterpret_cast<void*>(uintptr_t(0x7f0000000000ull));
    bool theirs = tmashmem::driver().cuTensorMapEncodeTiled(
                      &map, a.dtype, a.rank, address, a.dims, a.strides, a.box, a.element_strides,
                      a.interleave, a.swizzle, a.l2_promotion, a.oob_fill) == CUDA_SUCCESS;
    INFO("trial " << trial << ": tmashmem says " << (ours ? "valid" : tmashmem::last_error()));
    CHECK(ours == theirs);
    agreed += ours == theirs;
    rejected += !ours;
  }
  CHECK(rejected > 100);  // the mutations did break rules
  CHECK(agreed > 1000);
  tmashmem::driver().cuDevicePrimaryCtxRelease(dev);
  tmashmem::emu::uninstall();
}
