// GPU tests of the tile layer (tmashmem/device/tile.cuh) against CPU references, under
// mpiexec with 1, 2 and 4 PEs (which may all share one GPU).
//
// Every case is generated from the run's seed, identically on every PE (so collective calls
// match), while each PE's data is seeded by its rank: every PE can rebuild every other PE's
// source data to check what arrived. Destination buffers have guard bytes before, after and
// between rows (padded strides), and every byte of them is checked.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "tile_kernels.h"
#include "tmashmem/tensor.h"
#include "tmashmem/tmashmem.h"

namespace {

using tile_test::KernelStatus;
using tile_test::LayoutParams;
using tile_test::ReduceOpId;
using tile_test::TileJob;

// PEs may time-slice one GPU: waits get a generous bound, and still fail instead of hanging.
constexpr uint64_t kTimeoutNs = 20ull * 1000 * 1000 * 1000;
constexpr size_t kGuard = 512;  // guard bytes before each tensor (and at least as many after)
constexpr uint32_t kMaxBoxBytes = 16384;

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  UNSCOPED_INFO(what << ": " << cudaGetErrorName(e) << " (" << cudaGetErrorString(e) << ")");
  std::printf("[PE %d] %s: %s\n", tmashmem_test::mpi_rank(), what, cudaGetErrorString(e));
  return false;
}
#define CUDA_CHECK(call) CHECK(cuda_ok((call), #call))

// tmashmem_init on this node's share of the GPUs, finalized on every exit path.
struct Runtime {
  bool ok = false;
  Runtime() {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int local_rank = 0, devices = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    ok = cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount") && devices > 0 &&
         cuda_ok(cudaSetDevice(local_rank % devices), "cudaSetDevice") &&
         cuda_ok(cudaFree(nullptr), "cudaFree(0)");
    if (ok) {
      ok = tmashmem_init() == TMASHMEM_SUCCESS;
      if (!ok) std::printf("tmashmem_init: %s\n", tmashmem_last_error());
    }
  }
  ~Runtime() {
    if (ok) tmashmem_finalize();
  }
  // REQUIREs the runtime up on every PE; returns the test case's generator, seeded from the
  // run's seed and the case's `salt`.
  std::mt19937_64 require_up(uint64_t salt) const {
    REQUIRE(tmashmem_test::all_ranks(ok));
    return std::mt19937_64(tmashmem_test::run_seed() ^ salt);
  }
};

template <typename T>
struct DeviceArray {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceArray(size_t n) : count(n) {
    if (n && !cuda_ok(cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(T)), "cudaMalloc"))
      ptr = nullptr;
    if (ptr) cudaMemset(ptr, 0, n * sizeof(T));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (ptr) cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceArray() {
    if (ptr) cudaFree(ptr);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  std::vector<T> read() const {
    std::vector<T> out(count);
    if (count)
      cuda_ok(cudaMemcpy(out.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost), "read");
    return out;
  }
};

// Failure details go to stdout with the PE: Catch's unscoped messages would be consumed by
// the next (passing) assertion.
bool kernel_status_ok(const DeviceArray<KernelStatus>& s, const char* what) {
  KernelStatus st = s.read()[0];
  if (st.failures == 0) return true;
  std::printf("[PE %d] %s: %d failures, first code %d at job %d, %d mismatches\n",
              tmashmem_test::mpi_rank(), what, st.failures, st.first_code, st.first_job,
              st.mismatches);
  return false;
}

// ---------------------------------------------------------------------------------------
// Host model of a tensor and its tiles

// The test's own model of each dtype's element size, in tmashmem_dtype_t's order.
uint32_t elem_bytes(uint32_t dtype) {
  static const uint32_t bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  static_assert(sizeof bytes / sizeof bytes[0] == TMASHMEM_DTYPE_COUNT, "one size per dtype");
  return dtype < TMASHMEM_DTYPE_COUNT ? bytes[dtype] : 4;
}

bool is_float(uint32_t dtype) {
  return dtype >= TMASHMEM_DTYPE_F16 && dtype != TMASHMEM_DTYPE_I64 && dtype != TMASHMEM_DTYPE_U64;
}

const char* dtype_name(uint32_t dtype) {
  static const char* const names[] = {"u8",  "u16", "u32",  "i32",     "u64",  "i64",     "f16",
                                      "f32", "f64", "bf16", "f32_ftz", "tf32", "tf32_ftz"};
  return dtype < 13 ? names[dtype] : "?";
}

struct Case {
  tmashmem_tensor_desc_t desc;
  uint32_t elem = 0;
  size_t extent = 0;
  size_t slot_bytes = 0;    // guard + tensor + guard, a multiple of 256
  uint32_t box_bytes = 0;   // bytes a tile moves
  uint32_t smem_bytes = 0;  // shared memory a tile occupies (swizzled rows padded to the span)
  uint32_t pitch = 0;       // bytes between rows of a tile in shared memory
  std::string name;
};

uint64_t round_up(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }

uint32_t per_dim(const tmashmem_tensor_desc_t& d, uint32_t i) {
  return (d.box[i] + d.element_strides[i] - 1) / d.element_strides[i];
}

// `whole_rows`: dims[0] * elem_bytes a multiple of 16, for tensors that puts and reduces
// write (a put at the right edge writes whole 16-byte units, see tile.cuh).
Case make_case(std::mt19937_64& rng, uint32_t dtype, uint32_t rank, uint32_t swizzle, bool nan_fill,
               bool full_span, bool whole_rows, uint32_t max_element_stride = 1) {
  Case c;
  c.elem = elem_bytes(dtype);
  const uint32_t span = swizzle == 0 ? 256 : (16u << swizzle);
  uint32_t max_units = std::min<uint32_t>(span / 16, 256 * c.elem / 16);
  uint32_t units = full_span ? max_units : 1 + static_cast<uint32_t>(rng() % max_units);
  uint32_t box[5] = {units * 16 / c.elem, 1, 1, 1, 1};
  uint32_t es[5] = {1, 1, 1, 1, 1};
  for (uint32_t i = 1; i < rank; ++i) {
    box[i] = 1 + static_cast<uint32_t>(rng() % 4);
    es[i] = 1 + static_cast<uint32_t>(rng() % max_element_stride);
  }
  auto tile_bytes = [&] {
    uint64_t b = uint64_t(box[0]) * c.elem;
    for (uint32_t i = 1; i < rank; ++i) b *= (box[i] + es[i] - 1) / es[i];
    return b;
  };
  while (tile_bytes() > kMaxBoxBytes) {
    uint32_t* largest = std::max_element(box + 1, box + rank);
    if (*largest > 1)
      --*largest;
    else
      box[0] /= 2;
  }
  uint64_t dims[5];
  for (uint32_t i = 0; i < rank; ++i)
    dims[i] = uint64_t(box[i]) * (1 + rng() % 2) + rng() % box[i] + (box[i] == 1 ? rng() % 3 : 0);
  if (whole_rows) dims[0] = round_up(dims[0], 16 / c.elem);
  tmashmem_tensor_desc_init(&c.desc, static_cast<tmashmem_dtype_t>(dtype), rank, dims, box);
  c.desc.swizzle = swizzle;
  c.desc.oob_fill = nan_fill ? TMASHMEM_OOB_FILL_NAN : TMASHMEM_OOB_FILL_ZERO;
  c.desc.l2_promotion = static_cast<uint32_t>(rng() % 4);
  uint64_t stride = round_up(dims[0] * c.elem, 16) + 16 * (rng() % 3);  // padded rows
  for (uint32_t i = 0; i + 1 < rank; ++i) {
    c.desc.byte_strides[i] = stride;
    stride = stride * dims[i + 1] + 16 * (rng() % 2);
  }
  for (uint32_t i = 0; i < rank; ++i) c.desc.element_strides[i] = es[i];
  c.box_bytes = static_cast<uint32_t>(tile_bytes());
  c.pitch = std::max(box[0] * c.elem, swizzle == 0 ? 0u : 16u << swizzle);
  c.smem_bytes = static_cast<uint32_t>(tile_bytes() / (box[0] * c.elem) * c.pitch);
  size_t extent = 0;
  REQUIRE(tmashmem_tensor_desc_check(&c.desc, &extent) == TMASHMEM_SUCCESS);
  c.extent = extent;
  c.slot_bytes = round_up(kGuard + extent + kGuard, 256);
  c.name = std::string(dtype_name(dtype)) + " rank " + std::to_string(rank) + " swizzle " +
           std::to_string(swizzle) + " box";
  for (uint32_t i = 0; i < rank; ++i) c.name += " " + std::to_string(box[i]);
  c.name += " dims";
  for (uint32_t i = 0; i < rank; ++i) c.name += " " + std::to_string(dims[i]);
  if (nan_fill) c.name += " nan-fill";
  return c;
}

// Tile origins at every edge: per dimension, a tile hanging over the low edge (negative
// coordinate), one at 0, and one at or over the high edge. Innermost coordinates sit at
// 16-byte offsets (a TMA requirement, see tile.cuh).
std::vector<std::vector<int32_t>> edge_tiles(const Case& c) {
  const tmashmem_tensor_desc_t& d = c.desc;
  const int32_t unit = static_cast<int32_t>(16 / c.elem);  // elements per 16 bytes
  std::vector<std::vector<int32_t>> out(1, std::vector<int32_t>(5, 0));
  for (uint32_t i = 0; i < d.rank; ++i) {
    const int32_t box = static_cast<int32_t>(d.box[i]), dim = static_cast<int32_t>(d.dims[i]);
    int32_t picks[3] = {-std::max(box / 2, 1), 0, dim - (box + 1) / 2};
    if (i == 0) {
      picks[0] = -((std::max(box / 2, 1) + unit - 1) / unit * unit);
      picks[2] = (dim - 1) / unit * unit;  // the last aligned start that holds an element
    }
    std::vector<std::vector<int32_t>> next;
    for (const auto& t : out)
      for (int32_t p : picks) {
        auto u = t;
        u[i] = p;
        next.push_back(u);
      }
    out.swap(next);
  }
  return out;
}

// Non-overlapping tiles for reduces (each element reduced at most once per PE, so the
// reference stays exact): per dimension, the first tile and the last tile of the box grid,
// which hangs over the high edge unless the dimension is a multiple of the box.
std::vector<std::vector<int32_t>> grid_edge_tiles(const Case& c) {
  const tmashmem_tensor_desc_t& d = c.desc;
  std::vector<std::vector<int32_t>> out(1, std::vector<int32_t>(5, 0));
  for (uint32_t i = 0; i < d.rank; ++i) {
    const int32_t box = static_cast<int32_t>(d.box[i]), dim = static_cast<int32_t>(d.dims[i]);
    const int32_t last = (dim - 1) / box * box;
    const int32_t picks[2] = {0, last};
    std::vector<std::vector<int32_t>> next;
    for (const auto& t : out)
      for (int k = 0; k < (last == 0 ? 1 : 2); ++k) {
        auto u = t;
        u[i] = picks[k];
        next.push_back(u);
      }
    out.swap(next);
  }
  return out;
}

// Puts and reduces take no negative coordinate (tile.cuh): such tiles are only read.
bool writable(const std::vector<int32_t>& t) {
  return std::all_of(t.begin(), t.end(), [](int32_t v) { return v >= 0; });
}

uint64_t element_offset(const tmashmem_tensor_desc_t& d, uint32_t elem, const int64_t* e) {
  uint64_t off = static_cast<uint64_t>(e[0]) * elem;
  for (uint32_t i = 1; i < d.rank; ++i) off += static_cast<uint64_t>(e[i]) * d.byte_strides[i - 1];
  return off;
}

// Visits every element of the tile at `origin`: f(smem_byte_offset, inside, element coords).
// The shared-memory layout is rows of `pitch` bytes (per_dim elements per dimension,
// innermost first), then swizzled: address bits 4.. (the 16-byte chunk) are XORed with the
// bits from 7 up (the TMA/CUTLASS Swizzle<B,4,3> pattern on a 1024-aligned tile).
template <typename F>
void for_each_tile_element(const Case& c, const int32_t* origin, F f) {
  const tmashmem_tensor_desc_t& d = c.desc;
  uint32_t n = 1;
  for (uint32_t i = 0; i < d.rank; ++i) n *= per_dim(d, i);
  const uint32_t mask = d.swizzle == 0 ? 0 : (1u << d.swizzle) - 1;
  for (uint32_t k = 0; k < n; ++k) {
    int64_t e[5] = {0, 0, 0, 0, 0};
    uint32_t rest = k;
    bool inside = true;
    for (uint32_t i = 0; i < d.rank; ++i) {
      const uint32_t pd = per_dim(d, i);
      e[i] = origin[i] + static_cast<int64_t>(rest % pd) * d.element_strides[i];
      rest /= pd;
      if (e[i] < 0 || e[i] >= static_cast<int64_t>(d.dims[i])) inside = false;
    }
    const uint32_t row = k / per_dim(d, 0), col = k % per_dim(d, 0);
    uint64_t lin = uint64_t(row) * c.pitch + uint64_t(col) * c.elem;
    uint64_t phys = lin ^ (((lin >> 7) & mask) << 4);
    f(phys, inside, e);
  }
}

std::vector<uint8_t> random_bytes(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(out.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return out;
}

// A seed every PE can compute for (`what`, `pe`) in this run.
uint64_t data_seed(uint64_t case_seed, const char* what, int pe) {
  uint64_t h = case_seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(pe + 7));
  for (const char* p = what; *p; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 0x100000001B3ull;
  return h;
}

bool is_nan_bits(const uint8_t* p, uint32_t dtype) {
  switch (elem_bytes(dtype)) {
    case 2: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      if (dtype == TMASHMEM_DTYPE_BF16) return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
      return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    }
    case 4: {
      uint32_t w;
      std::memcpy(&w, p, 4);
      return (w & 0x7f800000u) == 0x7f800000u && (w & 0x7fffffu) != 0;
    }
    default: {
      uint64_t w;
      std::memcpy(&w, p, 8);
      return (w & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (w & 0xfffffffffffffull) != 0;
    }
  }
}

// Compares `got` with `want` byte by byte; reports the count and the first few differences.
bool same_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                const std::string& what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  if (bad == 0) return true;
  std::printf("[PE %d] %s: %zu of %zu bytes differ, first at byte %zu (got %d, want %d)\n",
              tmashmem_test::mpi_rank(), what.c_str(), bad, want.size(), first, int(got[first]),
              int(want[first]));
  return false;
}

// same_bytes of the first want.size() bytes at device address `dev`.
bool device_same_bytes(const void* dev, const std::vector<uint8_t>& want, const std::string& what) {
  std::vector<uint8_t> got(want.size());
  CUDA_CHECK(cudaMemcpy(got.data(), dev, got.size(), cudaMemcpyDeviceToHost));
  return same_bytes(got, want, what);
}

// Calls f(byte offset) for every element of the tensor.
template <typename F>
void for_each_element(const Case& c, F f) {
  const tmashmem_tensor_desc_t& d = c.desc;
  uint64_t count = 1;
  for (uint32_t i = 0; i < d.rank; ++i) count *= d.dims[i];
  for (uint64_t k = 0; k < count; ++k) {
    int64_t e[5] = {0, 0, 0, 0, 0};
    uint64_t rest = k;
    for (uint32_t i = 0; i < d.rank; ++i) {
      e[i] = static_cast<int64_t>(rest % d.dims[i]);
      rest /= d.dims[i];
    }
    f(element_offset(d, c.elem, e));
  }
}

// Whether TMA copies the f32_ftz and tf32 types bit for bit is not documented: their
// elements get values it cannot change (normal, finite, tf32 precision). Other types
// keep arbitrary bytes.
void make_copy_exact(std::vector<uint8_t>& image, const Case& c) {
  const uint32_t dt = c.desc.dtype;
  if (dt != TMASHMEM_DTYPE_F32_FTZ && dt != TMASHMEM_DTYPE_TF32 && dt != TMASHMEM_DTYPE_TF32_FTZ)
    return;
  for_each_element(c, [&](uint64_t off) {
    uint32_t w;
    std::memcpy(&w, image.data() + off, 4);
    uint32_t exp = (w >> 23) & 0xff;
    if (exp == 0) exp = 1;
    if (exp == 0xff) exp = 0xfe;
    w = (w & 0x807fe000u) | exp << 23;  // keep sign and 10 mantissa bits
    std::memcpy(image.data() + off, &w, 4);
  });
}

// Wrong elements in a shared-memory tile dumped after a get of the tile at `origin` from a
// tensor holding `src`: data inside the tensor, the fill value outside.
size_t tile_errors(const Case& c, const uint8_t* tile, const int32_t* origin,
                   const std::vector<uint8_t>& src) {
  size_t bad = 0;
  for_each_tile_element(c, origin, [&](uint64_t at, bool inside, const int64_t* e) {
    const uint8_t* g = tile + at;
    if (inside) {
      if (std::memcmp(g, src.data() + element_offset(c.desc, c.elem, e), c.elem) != 0) ++bad;
    } else if (c.desc.oob_fill == TMASHMEM_OOB_FILL_NAN) {
      if (!is_nan_bits(g, c.desc.dtype)) ++bad;
    } else {
      for (uint32_t b = 0; b < c.elem; ++b) bad += g[b] != 0;
    }
  });
  return bad;
}

struct Views {
  std::vector<tmashmem_tensor_t> views;
  // COLLECTIVE: one view of case `c`'s tensor in each of the `slots` slots of `dst`
  // (slot p at dst + p * c.slot_bytes, after its guard).
  void add_slots(uint8_t* dst, const Case& c, int slots) {
    for (int p = 0; p < slots; ++p) {
      tmashmem_tensor_t v = nullptr;
      const tmashmem_status_t st =
          tmashmem_tensor_view(dst + static_cast<size_t>(p) * c.slot_bytes + kGuard, &c.desc, &v);
      REQUIRE(tmashmem_test::all_ranks(st == TMASHMEM_SUCCESS));
      views.push_back(v);
    }
  }
  // Destroys every view, checking each; the memory under them is freed after.
  void destroy_checked() {
    for (tmashmem_tensor_t v : views) CHECK(tmashmem_tensor_destroy(v) == TMASHMEM_SUCCESS);
    views.clear();
  }
  ~Views() {
    for (tmashmem_tensor_t v : views) tmashmem_tensor_destroy(v);
  }
};

// A case's source tensor, created collectively, with PE q's contents images[q] (known on
// every PE, for the model); this PE's image is uploaded.
struct Source {
  tmashmem_tensor_t tensor = nullptr;
  tmashmem_tensor_handle_t handle{};
  std::vector<std::vector<uint8_t>> images;  // by PE
};

Source upload_source(const Case& c, std::vector<std::vector<uint8_t>> images) {
  Source src;
  src.images = std::move(images);
  REQUIRE(
      tmashmem_test::all_ranks(tmashmem_tensor_create(&c.desc, &src.tensor) == TMASHMEM_SUCCESS));
  CUDA_CHECK(cudaMemcpy(tmashmem_tensor_data(src.tensor),
                        src.images[static_cast<size_t>(tmashmem_my_pe())].data(), c.extent,
                        cudaMemcpyHostToDevice));
  REQUIRE(tmashmem_tensor_handle(src.tensor, &src.handle) == TMASHMEM_SUCCESS);
  return src;
}

// Every PE's image of a copy test: random bytes (seeded by the case, `what` and the PE)
// that a copy moves exactly (make_copy_exact).
std::vector<std::vector<uint8_t>> copy_images(const Case& c, uint64_t case_seed, const char* what) {
  std::vector<std::vector<uint8_t>> images(static_cast<size_t>(tmashmem_n_pes()));
  for (size_t q = 0; q < images.size(); ++q) {
    images[q] = random_bytes(data_seed(case_seed, what, static_cast<int>(q)), c.extent);
    make_copy_exact(images[q], c);
  }
  return images;
}

// One job of the tile kernels: get the tile at origin `t` from `get_pe` (-1: none), put it
// to `put_pe` (-1: none), dump it to slot `out_index` (-1: none).
TileJob tile_job(int get_pe, int put_pe, const std::vector<int32_t>& t, int32_t out_index) {
  TileJob j{};
  j.get_pe = get_pe;
  j.put_pe = put_pe;
  for (int i = 0; i < 5; ++i) j.coords[i] = t[static_cast<size_t>(i)];
  j.out_index = out_index;
  return j;
}

// ---------------------------------------------------------------------------------------
// The exchange: every PE gets tiles from every PE and puts them into the next PE

// PE me: for every PE q and tile T, get T from q's source, dump the smem tile, and (unless
// get_only) put it into slot `me` of PE (q + 1) % n's destination. Checks the dumps and
// this PE's destination (written by every PE) against the model.
bool run_exchange(const Case& c, uint64_t case_seed, bool get_only) {
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  INFO("case: " << c.name);
  bool ok = true;

  const Source src = upload_source(c, copy_images(c, case_seed, "src"));
  const std::vector<std::vector<uint8_t>>& src_bytes = src.images;

  const size_t dst_bytes = c.slot_bytes * static_cast<size_t>(n);
  uint8_t* dst = static_cast<uint8_t*>(tmashmem_malloc(dst_bytes));
  REQUIRE(tmashmem_test::all_ranks(dst != nullptr));
  std::vector<uint8_t> want = random_bytes(data_seed(case_seed, "dst", me), dst_bytes);
  CUDA_CHECK(cudaMemcpy(dst, want.data(), dst_bytes, cudaMemcpyHostToDevice));
  Views views;
  views.add_slots(dst, c, n);
  const tmashmem_tensor_handle_t& src_h = src.handle;
  tmashmem_tensor_handle_t dst_h;
  REQUIRE(tmashmem_tensor_handle(views.views[static_cast<size_t>(me)], &dst_h) == TMASHMEM_SUCCESS);
  REQUIRE(src_h.box_bytes == c.box_bytes);
  REQUIRE(src_h.smem_bytes == c.smem_bytes);

  const auto tiles = edge_tiles(c);
  std::vector<TileJob> jobs;
  for (int q = 0; q < n; ++q)
    for (const auto& t : tiles)
      jobs.push_back(tile_job(q, get_only || !writable(t) ? -1 : (q + 1) % n, t,
                              static_cast<int32_t>(jobs.size())));
  DeviceArray<TileJob> jobs_d(jobs);
  DeviceArray<uint8_t> dump(jobs.size() * c.smem_bytes);
  DeviceArray<KernelStatus> status(1);
  REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));
  CUDA_CHECK(tile_test::launch_get_put(src_h, dst_h, jobs_d.ptr, static_cast<int>(jobs.size()),
                                       dump.ptr, c.smem_bytes, status.ptr, 16, kTimeoutNs));
  CUDA_CHECK(cudaDeviceSynchronize());
  ok &= kernel_status_ok(status, "get/put kernel");
  REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));

  // The shared-memory tiles: data inside, the fill value outside.
  {
    std::vector<uint8_t> got = dump.read();
    size_t bad = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      size_t b = tile_errors(c, got.data() + j * c.smem_bytes, jobs[j].coords,
                             src_bytes[static_cast<size_t>(jobs[j].get_pe)]);
      if (b && bad == 0)
        std::printf("[PE %d] %s: tile %zu at (%d, %d, %d, %d, %d) from PE %d: %zu wrong elements\n",
                    me, c.name.c_str(), j, jobs[j].coords[0], jobs[j].coords[1], jobs[j].coords[2],
                    jobs[j].coords[3], jobs[j].coords[4], jobs[j].get_pe, b);
      bad += b;
    }
    ok &= bad == 0;
  }

  // The destination: slot p holds what PE p put here, i.e. tiles of PE (me - 1)'s source.
  if (!get_only) {
    const int from = (me - 1 + n) % n;
    const std::vector<uint8_t>& s = src_bytes[static_cast<size_t>(from)];
    for (int p = 0; p < n; ++p) {
      uint8_t* slot = want.data() + static_cast<size_t>(p) * c.slot_bytes + kGuard;
      for (const auto& t : tiles) {
        if (!writable(t)) continue;
        for_each_tile_element(c, t.data(), [&](uint64_t, bool inside, const int64_t* e) {
          if (!inside) return;
          const uint64_t off = element_offset(c.desc, c.elem, e);
          std::memcpy(slot + off, s.data() + off, c.elem);
        });
      }
    }
    ok &= device_same_bytes(dst, want, c.name + ": destination (tensor, padding and guards)");
  }
  views.destroy_checked();
  CHECK(tmashmem_tensor_destroy(src.tensor) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(dst) == TMASHMEM_SUCCESS);
  return ok;
}

// ---------------------------------------------------------------------------------------
// Reduce

uint16_t f32_to_f16_exact(float f) {  // for values exactly representable as normal halves
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  if ((x & 0x7fffffffu) == 0) return sign;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(exp) << 10 | ((x & 0x7fffff) >> 13));
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 31, mant = h & 0x3ff;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(mant), -24);
    if (sign) out = -out;
    return out;
  }
  uint32_t x = sign | (exp == 31 ? 0x7f800000u | mant << 13 : (exp - 15 + 127) << 23 | mant << 13);
  std::memcpy(&out, &x, 4);
  return out;
}

float bf16_to_f32(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

uint16_t f32_to_bf16_exact(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return static_cast<uint16_t>(x >> 16);
}

// One element of a reduce test as raw bits (the low elem_bytes bytes are the value).
uint64_t random_value(std::mt19937_64& rng, uint32_t dtype, ReduceOpId op) {
  if (op == tile_test::kInc || op == tile_test::kDec) return rng() % 24;
  const float quarter = static_cast<float>(static_cast<int>(rng() % 33) - 16) / 4.0f;  // exact
  switch (dtype) {
    case TMASHMEM_DTYPE_F16:
      return f32_to_f16_exact(quarter);
    case TMASHMEM_DTYPE_BF16:
      return f32_to_bf16_exact(quarter);
    case TMASHMEM_DTYPE_F32: {
      uint32_t x;
      std::memcpy(&x, &quarter, 4);
      return x;
    }
    default:
      return rng();
  }
}

uint64_t load_bits(const uint8_t* p, uint32_t bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  return v;
}

// peer = op(peer, src) as the hardware does it for `dtype` (exact for the generated values).
uint64_t apply_op(ReduceOpId op, uint32_t dtype, uint64_t peer, uint64_t src) {
  const uint32_t bytes = elem_bytes(dtype);
  const uint64_t mask = bytes == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * bytes)) - 1;
  auto as_float = [&](uint64_t v) {
    if (dtype == TMASHMEM_DTYPE_F16) return f16_to_f32(static_cast<uint16_t>(v));
    if (dtype == TMASHMEM_DTYPE_BF16) return bf16_to_f32(static_cast<uint16_t>(v));
    float f;
    uint32_t w = static_cast<uint32_t>(v);
    std::memcpy(&f, &w, 4);
    return f;
  };
  auto from_float = [&](float f) -> uint64_t {
    if (dtype == TMASHMEM_DTYPE_F16) return f32_to_f16_exact(f);
    if (dtype == TMASHMEM_DTYPE_BF16) return f32_to_bf16_exact(f);
    uint32_t w;
    std::memcpy(&w, &f, 4);
    return w;
  };
  auto as_signed = [&](uint64_t v) -> int64_t {
    return bytes == 4 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)))
                      : static_cast<int64_t>(v);
  };
  const bool fl = is_float(dtype);
  const bool sig = dtype == TMASHMEM_DTYPE_I32 || dtype == TMASHMEM_DTYPE_I64;
  switch (op) {
    case tile_test::kAdd:
      return fl ? from_float(as_float(peer) + as_float(src)) : (peer + src) & mask;
    case tile_test::kMin:
      if (fl) return as_float(src) < as_float(peer) ? src : peer;
      if (sig) return as_signed(src) < as_signed(peer) ? src : peer;
      return src < peer ? src : peer;
    case tile_test::kMax:
      if (fl) return as_float(src) > as_float(peer) ? src : peer;
      if (sig) return as_signed(src) > as_signed(peer) ? src : peer;
      return src > peer ? src : peer;
    case tile_test::kInc:
      return peer >= src ? 0 : (peer + 1) & mask;
    case tile_test::kDec:
      return (peer == 0 || peer > src) ? src : (peer - 1) & mask;
    case tile_test::kAnd:
      return peer & src;
    case tile_test::kOr:
      return peer | src;
    case tile_test::kXor:
      return peer ^ src;
  }
  return peer;
}

bool reduce_supported(ReduceOpId op, uint32_t dtype) {  // mirrors tma_reduce_supported
  const bool u32 = dtype == TMASHMEM_DTYPE_U32, i32 = dtype == TMASHMEM_DTYPE_I32;
  const bool u64 = dtype == TMASHMEM_DTYPE_U64, i64 = dtype == TMASHMEM_DTYPE_I64;
  const bool h = dtype == TMASHMEM_DTYPE_F16 || dtype == TMASHMEM_DTYPE_BF16;
  switch (op) {
    case tile_test::kAdd:
      return u32 || i32 || u64 || h || dtype == TMASHMEM_DTYPE_F32;
    case tile_test::kMin:
    case tile_test::kMax:
      return u32 || i32 || u64 || i64 || h;
    case tile_test::kInc:
    case tile_test::kDec:
      return u32;
    default:
      return u32 || i32 || u64;  // and/or/xor: i64 faults on H200
  }
}

const char* op_name(ReduceOpId op) {
  static const char* const names[] = {"add", "min", "max", "inc", "dec", "and", "or", "xor"};
  return names[op];
}

// Fills every element of a tensor image with generated values (padding keeps its bytes).
void fill_values(std::vector<uint8_t>& image, size_t base, const Case& c, std::mt19937_64& rng,
                 ReduceOpId op) {
  for_each_element(c, [&](uint64_t off) {
    const uint64_t v = random_value(rng, c.desc.dtype, op);
    std::memcpy(image.data() + base + off, &v, c.elem);
  });
}

// Every PE reduces its source tiles (at every edge) into every PE's destination at once;
// each destination must equal the CPU fold of all contributions.
bool run_reduce(ReduceOpId op, const Case& c, uint64_t case_seed) {
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  INFO("reduce " << op_name(op) << ", case: " << c.name);
  bool ok = true;
  const bool same_source = op == tile_test::kInc || op == tile_test::kDec;  // order-free
  std::vector<std::vector<uint8_t>> src_bytes(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) {
    std::vector<uint8_t>& s = src_bytes[static_cast<size_t>(q)];
    s = random_bytes(data_seed(case_seed, "rsrc-pad", q), c.extent);
    std::mt19937_64 vr(data_seed(case_seed, "rsrc", same_source ? 0 : q));
    fill_values(s, 0, c, vr, op);
  }
  const Source src = upload_source(c, src_bytes);
  uint8_t* dst = static_cast<uint8_t*>(tmashmem_malloc(c.slot_bytes));
  REQUIRE(tmashmem_test::all_ranks(dst != nullptr));
  std::vector<uint8_t> want = random_bytes(data_seed(case_seed, "rdst", me), c.slot_bytes);
  std::mt19937_64 dr(data_seed(case_seed, "rdst-values", me));
  fill_values(want, kGuard, c, dr, op);
  CUDA_CHECK(cudaMemcpy(dst, want.data(), c.slot_bytes, cudaMemcpyHostToDevice));
  Views views;
  tmashmem_tensor_t v = nullptr;
  REQUIRE(tmashmem_test::all_ranks(tmashmem_tensor_view(dst + kGuard, &c.desc, &v) ==
                                   TMASHMEM_SUCCESS));
  views.views.push_back(v);
  const tmashmem_tensor_handle_t& src_h = src.handle;
  tmashmem_tensor_handle_t dst_h;
  REQUIRE(tmashmem_tensor_handle(v, &dst_h) == TMASHMEM_SUCCESS);

  const auto tiles = grid_edge_tiles(c);
  std::vector<TileJob> jobs;
  for (int q = 0; q < n; ++q)
    for (const auto& t : tiles) jobs.push_back(tile_job(me, q, t, -1));
  DeviceArray<TileJob> jobs_d(jobs);
  DeviceArray<KernelStatus> status(1);
  REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));
  CUDA_CHECK(tile_test::launch_get_reduce(
      op, src_h, dst_h, jobs_d.ptr, static_cast<int>(jobs.size()), status.ptr, 16, kTimeoutNs));
  CUDA_CHECK(cudaDeviceSynchronize());
  ok &= kernel_status_ok(status, "reduce kernel");
  REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));

  // Reference: every PE's tiles, in any order (the generated values make every op exact and
  // order-free), applied to this PE's initial values.
  uint8_t* tensor = want.data() + kGuard;
  for (int q = 0; q < n; ++q)
    for (const auto& t : tiles)
      for_each_tile_element(c, t.data(), [&](uint64_t, bool inside, const int64_t* e) {
        if (!inside) return;
        const uint64_t off = element_offset(c.desc, c.elem, e);
        uint64_t acc = load_bits(tensor + off, c.elem);
        acc = apply_op(op, c.desc.dtype, acc,
                       load_bits(src_bytes[static_cast<size_t>(q)].data() + off, c.elem));
        std::memcpy(tensor + off, &acc, c.elem);
      });
  ok &= device_same_bytes(dst, want,
                          std::string("reduce ") + op_name(op) + " " + c.name + ": destination");
  views.views.clear();
  CHECK(tmashmem_tensor_destroy(v) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_tensor_destroy(src.tensor) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(dst) == TMASHMEM_SUCCESS);
  return ok;
}

// ---------------------------------------------------------------------------------------
// Put with signal

LayoutParams layout_of(const Case& c) {
  LayoutParams l{};
  l.rank = c.desc.rank;
  l.elem_bytes = c.elem;
  for (uint32_t i = 0; i < 5; ++i) {
    l.dims[i] = c.desc.dims[i];
    l.box[i] = i < c.desc.rank ? c.desc.box[i] : 1;
    if (i < 4) l.strides[i] = c.desc.byte_strides[i];
  }
  return l;
}

// Every PE writes its tiles with ordinary stores, then tma_put_tile_signal's them into its
// slot on every PE; every PE's consumer kernel waits for all signals and checks the data on
// the device, and the host checks the signals, the data and the guards afterwards.
bool run_signal(const Case& c, uint32_t round) {
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  INFO("put with signal, case: " << c.name);
  bool ok = true;
  const size_t dst_bytes = c.slot_bytes * static_cast<size_t>(n);
  uint8_t* dst = static_cast<uint8_t*>(tmashmem_calloc(dst_bytes, 1));
  uint64_t* signal = static_cast<uint64_t*>(tmashmem_calloc(static_cast<size_t>(n), 8));
  REQUIRE(tmashmem_test::all_ranks(dst != nullptr && signal != nullptr));
  Views views;
  views.add_slots(dst, c, n);
  tmashmem_tensor_handle_t dst_h;
  REQUIRE(tmashmem_tensor_handle(views.views[static_cast<size_t>(me)], &dst_h) == TMASHMEM_SUCCESS);
  const LayoutParams layout = layout_of(c);
  std::vector<std::vector<int32_t>> tiles;
  for (const auto& t : edge_tiles(c))
    if (writable(t)) tiles.push_back(t);
  std::vector<TileJob> jobs, shapes;
  for (const auto& t : tiles) {
    TileJob j{};
    for (int i = 0; i < 5; ++i) j.coords[i] = t[static_cast<size_t>(i)];
    j.get_pe = -1;
    j.out_index = -1;
    shapes.push_back(j);
    for (int q = 0; q < n; ++q) {
      j.put_pe = (me + q) % n;  // start with a different peer on every PE
      jobs.push_back(j);
    }
  }
  DeviceArray<TileJob> jobs_d(jobs), shapes_d(shapes);
  DeviceArray<uint64_t> expected_d(std::vector<uint64_t>(static_cast<size_t>(n), tiles.size()));
  DeviceArray<KernelStatus> status(1);
  REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));
  tmashmem_ctx_t ctx;
  REQUIRE(tmashmem_device_ctx(&ctx) == TMASHMEM_SUCCESS);
  CUDA_CHECK(tile_test::launch_put_signal(ctx, dst_h, layout, jobs_d.ptr,
                                          static_cast<int>(jobs.size()), signal, round, 8));
  CUDA_CHECK(tile_test::launch_consume(dst + kGuard, c.slot_bytes, layout, shapes_d.ptr,
                                       static_cast<int>(shapes.size()), signal, expected_d.ptr, n,
                                       round, status.ptr, kTimeoutNs));
  CUDA_CHECK(cudaDeviceSynchronize());
  ok &= kernel_status_ok(status, "consumer kernel");
  REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));

  std::vector<uint64_t> sig(static_cast<size_t>(n));
  CUDA_CHECK(cudaMemcpy(sig.data(), signal, sig.size() * 8, cudaMemcpyDeviceToHost));
  for (int p = 0; p < n; ++p) CHECK(sig[static_cast<size_t>(p)] == tiles.size());
  std::vector<uint8_t> want(dst_bytes, 0);
  for (int p = 0; p < n; ++p) {
    uint8_t* slot = want.data() + static_cast<size_t>(p) * c.slot_bytes + kGuard;
    for (const auto& t : tiles)
      for_each_tile_element(c, t.data(), [&](uint64_t, bool inside, const int64_t* e) {
        if (!inside) return;
        uint64_t lin = 0;
        for (int i = static_cast<int>(c.desc.rank) - 1; i >= 0; --i)
          lin = lin * c.desc.dims[i] + static_cast<uint64_t>(e[i]);
        const uint64_t off = element_offset(c.desc, c.elem, e);
        for (uint32_t b = 0; b < c.elem; ++b)
          slot[off + b] = tile_test::pattern_byte(p, lin, b, round);
      });
  }
  ok &= device_same_bytes(dst, want, c.name + ": signalled destination");
  views.destroy_checked();
  CHECK(tmashmem_free(signal) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(dst) == TMASHMEM_SUCCESS);
  return ok;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The test cases

TEST_CASE("tile: get and put of every dtype at ranks 1..5, all PEs exchanging at every edge") {
  Runtime rt;
  std::mt19937_64 rng = rt.require_up(0x7117);
  int index = 0;
  for (uint32_t dtype = 0; dtype < TMASHMEM_DTYPE_COUNT; ++dtype)
    for (uint32_t rank = 1; rank <= 5; ++rank, ++index) {
      const uint32_t swizzle = static_cast<uint32_t>(index % 4);
      const bool nan_fill = is_float(dtype) && index % 3 == 0;
      Case c = make_case(rng, dtype, rank, swizzle, nan_fill, index % 2 == 0, true);
      CHECK(run_exchange(c, rng(), false));
    }
}

TEST_CASE("tile: every swizzle with several box shapes") {
  Runtime rt;
  std::mt19937_64 rng = rt.require_up(0x5e1e);
  const uint32_t dtypes[] = {TMASHMEM_DTYPE_U8, TMASHMEM_DTYPE_F16, TMASHMEM_DTYPE_F32,
                             TMASHMEM_DTYPE_U64};
  for (uint32_t swizzle = 0; swizzle <= 3; ++swizzle)
    for (uint32_t rank = 1; rank <= 5; ++rank)
      for (int shape = 0; shape < 2; ++shape) {
        Case c = make_case(rng, dtypes[(swizzle + rank + static_cast<uint32_t>(shape)) % 4], rank,
                           swizzle, false, shape == 0, true);
        CHECK(run_exchange(c, rng(), false));
      }
}

TEST_CASE("tile: element strides skip elements in gets") {
  Runtime rt;
  std::mt19937_64 rng = rt.require_up(0xe5);
  for (uint32_t rank = 2; rank <= 5; ++rank)
    for (uint32_t dtype : {TMASHMEM_DTYPE_U16, TMASHMEM_DTYPE_F32}) {
      Case c = make_case(rng, dtype, rank, 0, false, false, false, 3);
      CHECK(run_exchange(c, rng(), true));
    }
}

TEST_CASE("tile: reduce of every supported op and dtype, all PEs into all PEs at once") {
  Runtime rt;
  std::mt19937_64 rng = rt.require_up(0x4ed);
  int index = 0;
  for (int o = 0; o < 8; ++o)
    for (uint32_t dtype = 0; dtype < TMASHMEM_DTYPE_COUNT; ++dtype) {
      const ReduceOpId op = static_cast<ReduceOpId>(o);
      if (!reduce_supported(op, dtype)) continue;
      for (int repeat = 0; repeat < 2; ++repeat, ++index) {
        const uint32_t rank = 1 + static_cast<uint32_t>(index % 5);
        Case c = make_case(rng, dtype, rank, static_cast<uint32_t>(rng() % 4), false,
                           rng() % 2 == 0, true);
        CHECK(run_reduce(op, c, rng()));
      }
    }
}

TEST_CASE("tile: a PE that sees a put's signal sees the whole tile") {
  Runtime rt;
  std::mt19937_64 rng = rt.require_up(0x5167);
  uint32_t round = 1;
  for (uint32_t rank = 1; rank <= 5; ++rank)
    for (uint32_t dtype : {TMASHMEM_DTYPE_U8, TMASHMEM_DTYPE_F32, TMASHMEM_DTYPE_U64}) {
      Case c = make_case(rng, dtype, rank, 0, false, rng() % 2 == 0, true);
      CHECK(run_signal(c, round++));
    }
}

TEST_CASE("tile: cluster multicast delivers one read to every CTA, clusters of 2 and 4") {
  Runtime rt;
  std::mt19937_64 rng = rt.require_up(0x3c);
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  for (int cluster : {2, 4})
    for (int shape = 0; shape < 3; ++shape) {
      const uint32_t dtype = shape == 0   ? TMASHMEM_DTYPE_F32
                             : shape == 1 ? TMASHMEM_DTYPE_F16
                                          : TMASHMEM_DTYPE_U8;
      Case c = make_case(rng, dtype, 2 + static_cast<uint32_t>(shape), shape == 1 ? 3 : 0, false,
                         shape != 2, false);
      INFO("cluster " << cluster << ", case: " << c.name);
      const uint64_t case_seed = rng();
      const Source src = upload_source(c, copy_images(c, case_seed, "mc"));
      const std::vector<std::vector<uint8_t>>& src_bytes = src.images;
      const int n_clusters = 3;
      const auto tiles = edge_tiles(c);
      std::vector<TileJob> jobs;
      for (int k = 0; k < n_clusters * cluster; ++k) {
        jobs.push_back(tile_job((me + k) % n, -1, tiles[rng() % tiles.size()], 0));
      }
      DeviceArray<TileJob> jobs_d(jobs);
      DeviceArray<uint8_t> dump(static_cast<size_t>(n_clusters * cluster * cluster) * c.smem_bytes);
      DeviceArray<KernelStatus> status(1);
      REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));
      CUDA_CHECK(tile_test::launch_multicast(src.handle, jobs_d.ptr, cluster, n_clusters, dump.ptr,
                                             c.smem_bytes, status.ptr, kTimeoutNs));
      CUDA_CHECK(cudaDeviceSynchronize());
      CHECK(kernel_status_ok(status, "multicast kernel"));
      std::vector<uint8_t> got = dump.read();
      size_t bad = 0;
      for (int k = 0; k < n_clusters; ++k)
        for (int r = 0; r < cluster; ++r)
          for (int s = 0; s < cluster; ++s) {
            const TileJob& j = jobs[static_cast<size_t>(k * cluster + s)];
            bad += tile_errors(
                c, got.data() + static_cast<size_t>((k * cluster + r) * cluster + s) * c.smem_bytes,
                j.coords, src_bytes[static_cast<size_t>(j.get_pe)]);
          }
      if (bad) std::printf("[PE %d] multicast %s: %zu wrong elements\n", me, c.name.c_str(), bad);
      CHECK(bad == 0);
      REQUIRE(tmashmem_test::all_ranks(tmashmem_barrier_all() == TMASHMEM_SUCCESS));
      CHECK(tmashmem_tensor_destroy(src.tensor) == TMASHMEM_SUCCESS);
    }
}

TEST_CASE("tile: DSMEM bulk copy into the next CTA of clusters of 2 and 4") {
  Runtime rt;
  std::mt19937_64 rng = rt.require_up(0xd5);
  for (int cluster : {2, 4})
    for (uint32_t bytes : {16u, 4096u, 16u * (1u + static_cast<uint32_t>(rng() % 2048))}) {
      INFO("cluster " << cluster << ", " << bytes << " bytes");
      const int n_clusters = 4;
      DeviceArray<uint8_t> out(static_cast<size_t>(n_clusters * cluster) * bytes);
      DeviceArray<KernelStatus> status(1);
      CUDA_CHECK(
          tile_test::launch_dsmem(cluster, n_clusters, bytes, out.ptr, status.ptr, kTimeoutNs));
      CUDA_CHECK(cudaDeviceSynchronize());
      CHECK(kernel_status_ok(status, "dsmem kernel"));
      std::vector<uint8_t> got = out.read();
      size_t bad = 0;
      for (int k = 0; k < n_clusters; ++k)
        for (int r = 0; r < cluster; ++r) {
          const int sender = k * cluster + (r - 1 + cluster) % cluster;
          const uint8_t* o = got.data() + static_cast<size_t>(k * cluster + r) * bytes;
          for (uint32_t i = 0; i < bytes; ++i)
            bad += o[i] != tile_test::pattern_byte(sender, i, 0, 0);
        }
      CHECK(bad == 0);
    }
}
