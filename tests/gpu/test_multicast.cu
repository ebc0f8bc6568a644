// The multicast device calls (tmashmem/device/multicast.cuh) through their unicast
// fallback, the path every lent machine takes (the runtime never creates multicast
// objects there; this program turns TMASHMEM_MULTICAST off itself and fails if a
// context still carries a multicast address). Every call at thread, warp and block
// granularity, relaxed and release/acquire, 16-byte aligned and not, against a CPU
// reference over every PE's fresh random data, with guard bytes around each destination.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu_test_util.cuh"

using namespace gpu_test;
using tmashmem::Coop;
using tmashmem::McOrder;
using tmashmem::McReduce;

namespace {

constexpr size_t kGuard = 64;  // guard bytes before and after each destination
constexpr uint8_t kGuardByte = 0xA5;

// ---- values and the CPU reference ----------------------------------------------------

// Element i of the data named by `seed`. Floats are small integers, so that every sum of
// a few of them is exact in any order (multimem and atomics choose their own order).
template <class T>
T value_of(uint64_t seed, size_t i) {
  const uint64_t h = mix64(seed ^ mix64(i));
  if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(h);
  } else {
    const float v = static_cast<float>(static_cast<int>(h % 17) - 8);
    if constexpr (std::is_same<T, __half>::value) return __float2half(v);
    if constexpr (std::is_same<T, __nv_bfloat16>::value) return __float2bfloat16(v);
    if constexpr (std::is_floating_point<T>::value) return static_cast<T>(v);
  }
}

template <class T>
double as_double(T v) {
  if constexpr (std::is_same<T, __half>::value) return __half2float(v);
  if constexpr (std::is_same<T, __nv_bfloat16>::value) return __bfloat162float(v);
  if constexpr (!std::is_same<T, __half>::value && !std::is_same<T, __nv_bfloat16>::value)
    return static_cast<double>(v);
}

template <class T>
T from_double(double v) {
  if constexpr (std::is_same<T, __half>::value) return __float2half(static_cast<float>(v));
  if constexpr (std::is_same<T, __nv_bfloat16>::value)
    return __float2bfloat16(static_cast<float>(v));
  if constexpr (!std::is_same<T, __half>::value && !std::is_same<T, __nv_bfloat16>::value)
    return static_cast<T>(v);
}

template <McReduce Op, class T>
T combine(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    switch (Op) {
      case McReduce::Add:  // wraps, as the GPU's adds do (unsigned: no overflow UB here)
        return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                              static_cast<std::make_unsigned_t<T>>(b));
      case McReduce::Min:
        return b < a ? b : a;
      case McReduce::Max:
        return a < b ? b : a;
      case McReduce::And:
        return a & b;
      case McReduce::Or:
        return a | b;
      case McReduce::Xor:
        return a ^ b;
    }
    return a;
  } else {
    const double x = as_double(a), y = as_double(b);
    return from_double<T>(Op == McReduce::Add   ? x + y
                          : Op == McReduce::Min ? (y < x ? y : x)
                                                : (x < y ? y : x));
  }
}

template <class T>
std::vector<T> make_data(uint64_t seed, size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value_of<T>(seed, i);
  return v;
}

// ---- kernels: each group (thread, warp, block) calls on its own chunk -----------------

template <Coop G>
__device__ void group_range(size_t* first_group, size_t* group_count) {
  if constexpr (G == Coop::Thread) {
    *first_group = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    *group_count = size_t(gridDim.x) * blockDim.x;
  } else if constexpr (G == Coop::Warp) {
    *first_group = blockIdx.x * size_t((blockDim.x + 31) / 32) + threadIdx.x / 32;
    *group_count = size_t(gridDim.x) * ((blockDim.x + 31) / 32);
  } else {
    *first_group = blockIdx.x;
    *group_count = gridDim.x;
  }
}

enum class Call { Store, LdReduce, Red };

template <Call C, McReduce Op, class T, Coop G, McOrder O>
__global__ void multicast_kernel(const __grid_constant__ tmashmem_ctx_t ctx, T* dest, const T* src,
                                 size_t count, size_t chunk) {
  size_t g = 0, groups = 0;
  group_range<G>(&g, &groups);
  for (size_t c = g; c * chunk < count; c += groups) {
    const size_t n = count - c * chunk < chunk ? count - c * chunk : chunk;
    if constexpr (C == Call::Store)
      tmashmem::multicast_store<T, G, O>(ctx, dest + c * chunk, src + c * chunk, n);
    if constexpr (C == Call::LdReduce)
      tmashmem::multicast_ld_reduce<Op, T, G, O>(ctx, dest + c * chunk, src + c * chunk, n);
    if constexpr (C == Call::Red)
      tmashmem::multicast_red<Op, T, G, O>(ctx, dest + c * chunk, src + c * chunk, n);
  }
}

// ---- one case ---------------------------------------------------------------------------

// Turns multicast off before init whatever the caller's environment says: this program
// tests the fallback, and the lent machines must never create multicast objects.
struct FallbackSession : Session {
  static bool force_unicast() {
    setenv("TMASHMEM_MULTICAST", "off", 1);
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
    setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
    return true;
  }
  FallbackSession() : Session() {}
};
const bool kForced = FallbackSession::force_unicast();

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Counts the guard bytes of [0, kGuard) and [kGuard + bytes, 2 kGuard + bytes) that changed.
size_t bad_guards(const uint8_t* region, size_t bytes) {
  size_t bad = 0;
  for (size_t i = 0; i < kGuard; ++i) bad += region[i] != kGuardByte;
  for (size_t i = 0; i < kGuard; ++i) bad += region[kGuard + bytes + i] != kGuardByte;
  return bad;
}

template <Call C, McReduce Op, class T, Coop G, McOrder O>
bool run_case(const FallbackSession& s, const char* name, size_t shift_elements, uint64_t round,
              size_t chunk_elements) {
  const int me = s.me, n = s.n;
  // Elements per call: by group (or chunk_elements, even).
  const size_t chunk = chunk_elements      ? chunk_elements
                       : G == Coop::Thread ? 24
                       : G == Coop::Warp   ? 256
                                           : 1024;
  // An even count (16-bit floats go in pairs) of at least three calls, different every run.
  const size_t count = std::max<size_t>(2000, 3 * chunk) + 2 * (mix64(run_seed() ^ round) % 700);
  const size_t bytes = count * sizeof(T);
  const size_t shift = shift_elements * sizeof(T);   // 0: 16-byte aligned; else not
  const size_t region = 2 * kGuard + shift + bytes;  // guard | shift | data | guard
  const uint64_t purpose = 0x4d43 + uint64_t(C) * 64 + uint64_t(Op) * 8 + uint64_t(G) + round * 512;
  bool ok = true;

  // Store: PE w writes segment w of every PE's copy. LdReduce: each PE reduces every PE's
  // copy of `sym` into local memory. Red: each PE reduces into every PE's copy of `sym`.
  const size_t segments = C == Call::Store ? size_t(n) : 1;
  auto* sym = static_cast<uint8_t*>(tmashmem_malloc(region * segments));
  uint8_t* local = nullptr;
  T* src_dev = nullptr;
  ok &= all_ranks(sym != nullptr);
  if (!ok) return false;
  ok &= GPU_TEST_CUDA(cudaMalloc(&local, region));
  ok &= GPU_TEST_CUDA(cudaMalloc(&src_dev, bytes + 16));
  const tmashmem_ctx_t ctx = s.ctx();
  if (ctx.mc_base != 0) {
    std::printf(
        "[PE %d] %s: the context carries a multicast address; this test runs only the "
        "fallback (TMASHMEM_MULTICAST=off)\n",
        me, name);
    ok = false;
  }

  const std::vector<T> mine = make_data<T>(seed_for(purpose, me), count);
  std::vector<uint8_t> fill(region * segments, kGuardByte);
  std::vector<T> init;
  if (C == Call::LdReduce)  // every PE's source data sits in its own copy of sym
    std::memcpy(fill.data() + kGuard + shift, mine.data(), bytes);
  if (C == Call::Red) {
    init = make_data<T>(seed_for(purpose + 1, me), count);
    std::memcpy(fill.data() + kGuard + shift, init.data(), bytes);
  }
  ok &= GPU_TEST_CUDA(cudaMemcpy(sym, fill.data(), fill.size(), cudaMemcpyHostToDevice));
  ok &= GPU_TEST_CUDA(cudaMemset(local, kGuardByte, region));
  // The local source at the same offset mod 16 as the destination.
  T* src = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(src_dev) + (shift & 15));
  ok &= GPU_TEST_CUDA(cudaMemcpy(src, mine.data(), bytes, cudaMemcpyHostToDevice));
  ok &= sync_and_barrier();

  T* dest = nullptr;
  const T* from = src;
  if (C == Call::Store) dest = reinterpret_cast<T*>(sym + size_t(me) * region + kGuard + shift);
  if (C == Call::LdReduce) {
    dest = reinterpret_cast<T*>(local + kGuard + shift);
    from = reinterpret_cast<const T*>(sym + kGuard + shift);
  }
  if (C == Call::Red) dest = reinterpret_cast<T*>(sym + kGuard + shift);
  multicast_kernel<C, Op, T, G, O>
      <<<8, 80>>>(ctx, dest, from, count, chunk);  // 2.5 warps: a partial one
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  ok &= sync_and_barrier();

  // The reference, from every PE's data regenerated here.
  std::vector<uint8_t> got(C == Call::LdReduce ? region : region * segments);
  ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), C == Call::LdReduce ? local : sym, got.size(),
                                 cudaMemcpyDeviceToHost));
  size_t bad = 0, guards = 0;
  for (size_t seg = 0; seg < (C == Call::Store ? segments : 1); ++seg) {
    const uint8_t* r = got.data() + seg * region;
    guards += bad_guards(r, shift + bytes);
    for (size_t i = 0; i < shift; ++i) guards += r[kGuard + i] != kGuardByte;
    std::vector<T> expect;
    if (C == Call::Store) expect = make_data<T>(seed_for(purpose, static_cast<int>(seg)), count);
    if (C == Call::LdReduce) {
      expect = make_data<T>(seed_for(purpose, 0), count);
      for (int pe = 1; pe < n; ++pe) {
        const std::vector<T> other = make_data<T>(seed_for(purpose, pe), count);
        for (size_t i = 0; i < count; ++i) expect[i] = combine<Op, T>(expect[i], other[i]);
      }
    }
    if (C == Call::Red) {
      expect = init;
      for (int pe = 0; pe < n; ++pe) {
        const std::vector<T> other = make_data<T>(seed_for(purpose, pe), count);
        for (size_t i = 0; i < count; ++i) expect[i] = combine<Op, T>(expect[i], other[i]);
      }
    }
    for (size_t i = 0; i < count; ++i) {
      T v;
      std::memcpy(&v, r + kGuard + shift + i * sizeof(T), sizeof(T));
      if (!same_bits(v, expect[i])) ++bad;
    }
  }
  if (bad || guards)
    std::printf(
        "[PE %d] %s (shift %zu, %zu elements): %zu wrong elements, %zu guard bytes "
        "changed\n",
        me, name, shift_elements, count, bad, guards);
  ok &= bad == 0 && guards == 0;
  ok &= sync_and_barrier();  // nobody frees while another PE still reads
  cudaFree(local);
  cudaFree(src_dev);
  ok &= GPU_TEST_TM(tmashmem_free(sym));
  return ok;
}

// Both alignments: 16-byte aligned (vector accesses) and one word off (word accesses).
template <Call C, McReduce Op, class T, Coop G, McOrder O = McOrder::Relaxed>
bool both_alignments(const FallbackSession& s, const char* name, uint64_t round,
                     size_t chunk_elements = 0) {
  constexpr size_t kWordElements = sizeof(T) == 2 ? 2 : 1;
  bool ok = run_case<C, Op, T, G, O>(s, name, 0, round, chunk_elements);
  ok &= run_case<C, Op, T, G, O>(s, name, kWordElements, round + 1, chunk_elements);
  return ok;
}

// A case: a name, and what runs it on a session (fresh data from `round` on).
struct McCase {
  bool (*run)(const FallbackSession&, const char*, uint64_t);
  const char* name;
};

// Runs `cases` in one session, every PE agreeing on each result; skipped where some PE is
// not load/store reachable.
void run_cases(uint64_t first_round, std::initializer_list<McCase> cases) {
  FallbackSession s;
  REQUIRE(all_ranks(s.ok && kForced));
  if (!all_ranks(tmashmem::all_reachable(s.ctx()))) {
    tmashmem_test::mark_skipped("needs every PE load/store reachable");
    return;
  }
  uint64_t round = first_round;
  for (const McCase& c : cases) {
    INFO(c.name);
    CHECK(all_ranks(c.run(s, c.name, round)));
    round += 1000;
  }
}

// ---- every (op, type) pair the ISA has, each call kind ------------------------------------

using AllTypes =
    std::tuple<uint32_t, int32_t, uint64_t, int64_t, float, double, __half, __nv_bfloat16>;
constexpr McReduce kOps[] = {McReduce::Add, McReduce::Min, McReduce::Max,
                             McReduce::And, McReduce::Or,  McReduce::Xor};
const char* const kOpNames[] = {"add", "min", "max", "and", "or", "xor"};
const char* const kTypeNames[] = {"u32", "s32", "u64", "s64", "f32", "f64", "f16", "bf16"};
const char* const kGroupNames[] = {"thread", "warp", "block"};

template <Call C, McReduce Op, class T>
constexpr bool call_exists() {
  if constexpr (C == Call::Store) return Op == McReduce::Add;  // a store has no op: once
  if constexpr (C == Call::LdReduce) return tmashmem::detail::ld_reduce_exists<Op, T>();
  if constexpr (C == Call::Red) return tmashmem::detail::red_exists<Op, T>();
  return false;
}

// Combination number I of call kind C: type I / 36, op (I / 6) % 6, group (I / 2) % 3,
// relaxed or ordered (I % 2); both alignments, where the ISA has the (op, type) pair.
// Counts the combinations it ran in `ran`.
template <Call C, size_t I>
bool run_combination(const FallbackSession& s, uint64_t round, int* ran) {
  using T = std::tuple_element_t<I / 36, AllTypes>;
  constexpr McReduce Op = kOps[(I / 6) % 6];
  if constexpr (!call_exists<C, Op, T>()) {
    return true;
  } else {
    ++*ran;
    constexpr Coop G = static_cast<Coop>((I / 2) % 3);
    constexpr bool ordered = I % 2 == 1;
    constexpr McOrder O = !ordered              ? McOrder::Relaxed
                          : C == Call::LdReduce ? McOrder::Acquire
                                                : McOrder::Release;
    const char* kind = C == Call::Store ? "store" : C == Call::LdReduce ? "ld_reduce" : "red";
    const std::string name = std::string(kind) + " " +
                             (C == Call::Store ? "" : std::string(kOpNames[(I / 6) % 6]) + " ") +
                             kTypeNames[I / 36] + " " + kGroupNames[static_cast<int>(G)] +
                             (ordered ? (O == McOrder::Acquire ? " acquire" : " release") : "");
    return both_alignments<C, Op, T, G, O>(s, name.c_str(), round + 2 * I);
  }
}

template <Call C, size_t... I>
bool run_combinations(const FallbackSession& s, uint64_t round, int* ran,
                      std::index_sequence<I...>) {
  return (run_combination<C, I>(s, round, ran) & ...);
}

// The pairs of the table in docs/multicast.md, times 3 groups and 2 orders: 8 types to
// store; 31 (op, type) pairs for ld_reduce; 27 for red.
constexpr int kExpectedCombinations[] = {8 * 6, 31 * 6, 27 * 6};

template <Call C>
bool every_combination(const FallbackSession& s, const char* name, uint64_t round) {
  constexpr size_t kCombinations = 36 * std::tuple_size<AllTypes>::value;
  int ran = 0;
  bool ok = run_combinations<C>(s, round, &ran, std::make_index_sequence<kCombinations>());
  if (s.me == 0) std::printf("%s: %d combinations, each at both alignments\n", name, ran);
  if (ran != kExpectedCombinations[static_cast<int>(C)]) {
    std::printf("[PE %d] %s: %d combinations ran, the ISA table has %d\n", s.me, name, ran,
                kExpectedCombinations[static_cast<int>(C)]);
    ok = false;
  }
  return ok;
}

}  // namespace

// Every (op, type) pair of each call kind, each at thread, warp and block granularity,
// relaxed and ordered, 16-byte aligned and not.
TEST_CASE("multicast_store through the fallback: every PE's segment on every PE") {
  run_cases(1, {{&every_combination<Call::Store>, "multicast_store, every type"}});
}

// The store fallback's shapes in an 80-thread block: calls of a few 16-byte units (most
// threads, and whole warps, have none), about one unit per thread, and 13 per thread with
// a tail of words.
template <class T, McOrder O>
bool store_shapes(const FallbackSession& s, const char* name, uint64_t round) {
  bool ok = true;
  for (size_t chunk_bytes : {48, 96, 800, 17000})
    ok &= both_alignments<Call::Store, McReduce::Add, T, Coop::Block, O>(s, name, round += 2,
                                                                         chunk_bytes / sizeof(T));
  return ok;
}

TEST_CASE("multicast_store through the fallback: block calls of 3 to 1062 units") {
  run_cases(7,
            {{&store_shapes<uint32_t, McOrder::Relaxed>, "store u32 block, by size"},
             {&store_shapes<__nv_bfloat16, McOrder::Release>, "store bf16 block release, by size"},
             {&store_shapes<double, McOrder::Relaxed>, "store f64 block, by size"}});
}

TEST_CASE("multicast_ld_reduce through the fallback: the reduction over every PE's copy") {
  run_cases(1, {{&every_combination<Call::LdReduce>, "multicast_ld_reduce, every (op, type)"}});
}

TEST_CASE("multicast_red through the fallback: every PE's contribution lands on every PE") {
  run_cases(1, {{&every_combination<Call::Red>, "multicast_red, every (op, type)"}});
}

// ---- tma_put_tile_multicast through the fan-out -----------------------------------------

namespace {

// A 3-D u32 tensor [kTileW, kTileH, n_pes] (innermost first): PE p writes plane z = p of
// every PE's copy, tile by tile. Neither extent is a multiple of the box, so the right and
// bottom tiles are clipped (rows are 400 bytes: whole 16-byte units, nothing padded).
constexpr uint32_t kTileW = 100, kTileH = 37, kBoxW = 32, kBoxH = 8;
constexpr size_t kTensorGuard = 256;  // guard bytes before and after the tensor

__global__ void put_tiles_multicast_kernel(const __grid_constant__ tmashmem_tensor_handle_t t,
                                           const uint32_t* src, int way) {
  __shared__ alignas(128) uint32_t tile[kBoxH][kBoxW];
  const int tiles_x = (kTileW + kBoxW - 1) / kBoxW;
  const int x0 = static_cast<int>(blockIdx.x % tiles_x) * kBoxW;
  const int y0 = static_cast<int>(blockIdx.x / tiles_x) * kBoxH;
  for (unsigned i = threadIdx.x; i < kBoxW * kBoxH; i += blockDim.x) {
    const unsigned x = x0 + i % kBoxW, y = y0 + i / kBoxW;
    // Outside the tensor: never written (clipped); a value that would show if it were.
    tile[i / kBoxW][i % kBoxW] = x < kTileW && y < kTileH ? src[y * kTileW + x] : 0xDEADBEEFu;
  }
  tmashmem::fence_proxy_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) {
    tmashmem::tma_acquire_tensor_maps(t);
    tmashmem::tma_put_tile_multicast(t, {x0, y0, t.my_pe}, tile,
                                     static_cast<tmashmem::TileMulticast>(way));
    tmashmem::bulk_wait_group<0>();
  }
}

bool run_tile_multicast(const FallbackSession& s, tmashmem::TileMulticast way, const char* name,
                        uint64_t round) {
  const int me = s.me, n = s.n;
  const size_t plane = size_t(kTileW) * kTileH, extent = plane * size_t(n) * sizeof(uint32_t);
  const size_t region = 2 * kTensorGuard + extent;
  auto* sym = static_cast<uint8_t*>(tmashmem_malloc(region));
  bool ok = all_ranks(sym != nullptr);
  if (!ok) return false;
  uint64_t dims[3] = {kTileW, kTileH, uint64_t(n)};
  uint32_t box[3] = {kBoxW, kBoxH, 1};
  tmashmem_tensor_desc_t d;
  ok &= GPU_TEST_TM(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U32, 3, dims, box));
  tmashmem_tensor_t t = nullptr;
  ok &= all_ranks(GPU_TEST_TM(tmashmem_tensor_view(sym + kTensorGuard, &d, &t)));
  if (!ok) return false;
  tmashmem_tensor_handle_t h;
  ok &= GPU_TEST_TM(tmashmem_tensor_handle(t, &h));
  if (h.has_multicast != 0) {
    std::printf("[PE %d] %s: the tensor has a multicast map; this test runs only the fallback\n",
                me, name);
    ok = false;
  }
  const uint64_t purpose = 0x7469 + round;
  std::vector<uint32_t> mine(plane);
  for (size_t i = 0; i < plane; ++i)
    mine[i] = static_cast<uint32_t>(mix64(seed_for(purpose, me) ^ i));
  uint32_t* src = nullptr;
  ok &= GPU_TEST_CUDA(cudaMalloc(&src, plane * sizeof(uint32_t)));
  ok &=
      GPU_TEST_CUDA(cudaMemcpy(src, mine.data(), plane * sizeof(uint32_t), cudaMemcpyHostToDevice));
  ok &= GPU_TEST_CUDA(cudaMemset(sym, kGuardByte, region));
  ok &= sync_and_barrier();
  const unsigned tiles = ((kTileW + kBoxW - 1) / kBoxW) * ((kTileH + kBoxH - 1) / kBoxH);
  put_tiles_multicast_kernel<<<tiles, 96>>>(h, src, static_cast<int>(way));
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  ok &= sync_and_barrier();

  std::vector<uint8_t> got(region);
  ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), sym, region, cudaMemcpyDeviceToHost));
  size_t guards = 0, bad = 0;
  for (size_t i = 0; i < kTensorGuard; ++i)
    guards += (got[i] != kGuardByte) + (got[kTensorGuard + extent + i] != kGuardByte);
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < plane; ++i) {
      uint32_t v;
      std::memcpy(&v, got.data() + kTensorGuard + (size_t(q) * plane + i) * 4, 4);
      bad += v != static_cast<uint32_t>(mix64(seed_for(purpose, q) ^ i));
    }
  if (bad || guards)
    std::printf("[PE %d] %s: %zu of %zu elements wrong, %zu guard bytes changed\n", me, name, bad,
                plane * size_t(n), guards);
  ok &= bad == 0 && guards == 0;
  ok &= sync_and_barrier();
  cudaFree(src);
  ok &= GPU_TEST_TM(tmashmem_tensor_destroy(t));
  ok &= GPU_TEST_TM(tmashmem_free(sym));
  return ok;
}

bool tile_fan_out(const FallbackSession& s, const char* name, uint64_t round) {
  return run_tile_multicast(s, tmashmem::TileMulticast::FanOut, name, round);
}
// Opted in, but the tensor has no multicast map here: the same fan-out.
bool tile_multicast_map(const FallbackSession& s, const char* name, uint64_t round) {
  return run_tile_multicast(s, tmashmem::TileMulticast::MulticastMap, name, round);
}

}  // namespace

TEST_CASE("tma_put_tile_multicast through the fan-out: every PE's plane on every PE") {
  run_cases(
      61, {{&tile_fan_out, "fan-out (default)"}, {&tile_multicast_map, "multicast map, opted in"}});
}
