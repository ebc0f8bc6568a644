// The on-stream collectives (tmashmem/collectives.h) against CPU references: every
// collective, every reducing dtype and op, sizes from one element to 256 MiB including
// ragged and misaligned ones, explicit and default CTA counts, both all-reduce
// algorithms; guard bytes around every destination, fresh random data every case (the
// seed is printed by the harness; TMASHMEM_TEST_SEED replays it). The cases run back to
// back without host barriers between them: a collective that returned must not be
// touched by a peer again, so overwriting its buffers at once is part of the test.
// Back-to-back stress, graph capture and the device-callable forms are in
// test_collectives_stress.cu.
#include <cstring>
#include <string>
#include <vector>

#include "collectives_ref.cuh"
#include "gpu_test_util.cuh"

using namespace gpu_test;
using namespace coll_test;

namespace {

constexpr size_t kGuard = 256;
constexpr size_t kLarge = size_t(256) << 20;  // the largest buffer of a case, bytes
constexpr uint64_t kPurposeData = 0xC011, kPurposeGuard = 0x6A4D;

// Symmetric source and destination regions with guards, reused by every case.
struct Buffers {
  uint8_t* src = nullptr;  // kGuard + capacity + kGuard
  uint8_t* dst = nullptr;
  uint64_t* arrays = nullptr;  // alltoallv: 3 x 64 uint64_t
  size_t capacity = 0;
  cudaStream_t stream = nullptr;
  uint64_t round = 0;
};

// Runs one case: background into dest (guards included), `upload` writes src, `call`
// enqueues the collective, then dest is read back and compared with `want` at
// dest offset `dest_offset` (bytes from the region's start after the guard).
template <class Call>
bool run_case(Buffers& b, const std::string& what, uint32_t dtype, size_t elem,
              const std::vector<uint8_t>& src, size_t src_offset, size_t dest_offset,
              const std::vector<uint8_t>& want, Call call) {
  const uint64_t bg = seed_for(kPurposeGuard, mpi_rank(), b.round);
  const size_t span = kGuard + dest_offset + want.size() + kGuard;
  bool ok = GPU_TEST_CUDA(fill_pattern(b.dst, span, bg, 0, b.stream));
  if (!src.empty())
    ok &= GPU_TEST_CUDA(cudaMemcpyAsync(b.src + kGuard + src_offset, src.data(), src.size(),
                                        cudaMemcpyHostToDevice, b.stream));
  const tmashmem_status_t st = call(b.dst + kGuard + dest_offset, b.src + kGuard + src_offset);
  if (st != TMASHMEM_SUCCESS) {
    std::printf("[PE %d] %s: the call failed: %s\n", mpi_rank(), what.c_str(),
                tmashmem_last_error());
    return false;
  }
  std::vector<uint8_t> got(span);
  ok &= GPU_TEST_CUDA(cudaMemcpyAsync(got.data(), b.dst, span, cudaMemcpyDeviceToHost, b.stream));
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(b.stream));
  if (!ok) {
    std::printf("[PE %d] %s: CUDA error (above)\n", mpi_rank(), what.c_str());
    return false;
  }
  size_t bad_guard = 0;
  for (size_t i = 0; i < span; ++i) {
    const bool inside = i >= kGuard + dest_offset && i < kGuard + dest_offset + want.size();
    if (inside || (i >= kGuard && i < kGuard + dest_offset)) continue;
    if (got[i] != pattern_byte(bg, i) && bad_guard++ < 3)
      std::printf("[PE %d] %s: guard byte %zd (relative to dest) overwritten: 0x%02x\n", mpi_rank(),
                  what.c_str(), static_cast<ptrdiff_t>(i - kGuard - dest_offset), got[i]);
  }
  std::vector<uint8_t> data(
      got.begin() + static_cast<ptrdiff_t>(kGuard + dest_offset),
      got.begin() + static_cast<ptrdiff_t>(kGuard + dest_offset + want.size()));
  const bool same = compare(what.c_str(), dtype, elem, data, want);
  ++b.round;
  return same && bad_guard == 0;
}

std::vector<uint8_t> pattern(uint64_t seed, size_t first, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = pattern_byte(seed, first + i);
  return v;
}

std::string name(const char* call, const char* dtype, const char* op, size_t size, int n_sms,
                 size_t misalign, const char* extra = "") {
  char text[256];
  std::snprintf(text, sizeof text, "%s %s%s%s size %zu n_sms %d misalign %zu%s", call, dtype,
                *op ? " " : "", op, size, n_sms, misalign, extra);
  return text;
}

struct Fixture {
  Session s;
  Buffers b;
  bool ready = false;
  Fixture() {
    if (!s.ok) return;
    b.capacity = kLarge + 64;
    b.src = static_cast<uint8_t*>(tmashmem_malloc(b.capacity + 2 * kGuard));
    b.dst = static_cast<uint8_t*>(tmashmem_malloc(b.capacity + 2 * kGuard));
    b.arrays = static_cast<uint64_t*>(tmashmem_calloc(3 * 64, sizeof(uint64_t)));
    ready = b.src && b.dst && b.arrays && GPU_TEST_CUDA(cudaStreamCreate(&b.stream));
  }
  ~Fixture() {
    if (b.stream) cudaStreamDestroy(b.stream);
    if (tmashmem_initialized()) {
      sync_and_barrier();
      tmashmem_free(b.arrays);
      tmashmem_free(b.dst);
      tmashmem_free(b.src);
    }
  }
  std::vector<uint64_t> seeds() const {
    std::vector<uint64_t> v;
    for (int q = 0; q < s.n; ++q) v.push_back(seed_for(kPurposeData, q, b.round));
    return v;
  }
};

// 262144 - 16: near the largest piece the staged forms take (256 KiB per peer).
const std::vector<size_t> kByteSizes = {1,    3,         16,          100,
                                        4093, 65536 + 5, 262144 - 16, (size_t(1) << 20) | 7};

}  // namespace

TEST_CASE("collectives: all-gather, all-to-all, broadcast of raw bytes match the reference") {
  Fixture f;
  REQUIRE(all_ranks(f.ready));
  const int n = f.s.n, me = f.s.me;
  bool ok = true;
  std::vector<size_t> sizes = kByteSizes;
  sizes.push_back(kLarge / size_t(n) - 13);  // ragged; all-gather: almost 256 MiB of dest
  for (size_t bytes : sizes) {
    for (size_t mis : {size_t(0), size_t(3)}) {
      if (mis && bytes > (size_t(1) << 20)) continue;
      for (int n_sms : {0, 3}) {
        if (n_sms && bytes > (size_t(16) << 20)) continue;  // the largest: default CTAs only
        const auto seeds = f.seeds();
        std::vector<uint8_t> want;
        for (int q = 0; q < n; ++q) {
          const auto part = pattern(seeds[q], 0, bytes);
          want.insert(want.end(), part.begin(), part.end());
        }
        ok &=
            run_case(f.b, name("allgather", "bytes", "", bytes, n_sms, mis), 0, 1,
                     pattern(seeds[me], 0, bytes), mis + 1, mis, want, [&](uint8_t* d, uint8_t* s) {
                       return tmashmem_allgather_on_stream(d, s, bytes, n_sms, f.b.stream);
                     });
        if (bytes * size_t(n) > kLarge) continue;
        const auto seeds2 = f.seeds();
        std::vector<uint8_t> want2;
        for (int p = 0; p < n; ++p) {
          const auto part = pattern(seeds2[p], size_t(me) * bytes, bytes);
          want2.insert(want2.end(), part.begin(), part.end());
        }
        ok &= run_case(f.b, name("alltoall", "bytes", "", bytes, n_sms, mis), 0, 1,
                       pattern(seeds2[me], 0, bytes * size_t(n)), mis, mis + 5, want2,
                       [&](uint8_t* d, uint8_t* s) {
                         return tmashmem_alltoall_on_stream(d, s, bytes, n_sms, f.b.stream);
                       });
        const int root = static_cast<int>((bytes + f.b.round) % size_t(n));
        const auto seeds3 = f.seeds();
        ok &= run_case(f.b, name("broadcast", "bytes", "", bytes, n_sms, mis, " root"), 0, 1,
                       pattern(seeds3[me], 0, bytes), mis, 2 * mis, pattern(seeds3[root], 0, bytes),
                       [&](uint8_t* d, uint8_t* s) {
                         return tmashmem_broadcast_on_stream(d, s, bytes, root, n_sms, f.b.stream);
                       });
      }
    }
  }
  CHECK(all_ranks(ok));
}

TEST_CASE("collectives: all-to-all with variable blocks (MoE shape) matches the reference") {
  Fixture f;
  REQUIRE(all_ranks(f.ready));
  const int n = f.s.n, me = f.s.me;
  bool ok = true;
  for (size_t max_count : {size_t(1), size_t(37), size_t(5000), size_t(300000)}) {
    for (int n_sms : {0, 2}) {
      // count(p, q): bytes PE p sends to PE q, from a seed every PE shares (some are 0).
      const uint64_t cs = seed_for(0xC0C0, 0, f.b.round);
      auto count = [&](int p, int q) {
        return static_cast<uint64_t>(hash32(cs, uint64_t(p) * 64 + uint64_t(q)) % (max_count + 1));
      };
      std::vector<uint64_t> arrays(3 * 64, 0);  // send_counts, send_offsets, recv_offsets
      uint64_t src_bytes = 0, dest_bytes = 0;
      for (int q = 0; q < n; ++q) {
        arrays[size_t(q)] = count(me, q);
        arrays[64 + size_t(q)] = src_bytes + 3;  // a gap of 3 bytes before each block
        src_bytes += count(me, q) + 3;
        arrays[128 + size_t(q)] = dest_bytes;
        dest_bytes += count(q, me);
      }
      ok &= GPU_TEST_CUDA(cudaMemcpyAsync(f.b.arrays, arrays.data(), arrays.size() * 8,
                                          cudaMemcpyHostToDevice, f.b.stream));
      const auto seeds = f.seeds();
      std::vector<uint8_t> want;
      for (int p = 0; p < n; ++p) {
        uint64_t soff = 0;  // PE p's send offset for me
        for (int q = 0; q < me; ++q) soff += count(p, q) + 3;
        const auto part = pattern(seeds[p], soff + 3, count(p, me));
        want.insert(want.end(), part.begin(), part.end());
      }
      const uint64_t src_cap = src_bytes + 8;
      ok &= run_case(f.b, name("alltoallv", "bytes", "", max_count, n_sms, 0), 0, 1,
                     pattern(seeds[me], 0, src_cap), 0, 0, want, [&](uint8_t* d, uint8_t* s) {
                       // dest_bytes and src_bytes must agree on every PE: the largest any PE uses.
                       return tmashmem_alltoallv_on_stream(d, kLarge / 4, s, kLarge / 4, f.b.arrays,
                                                           f.b.arrays + 64, f.b.arrays + 128, n_sms,
                                                           f.b.stream);
                     });
    }
  }
  CHECK(all_ranks(ok));
}

TEST_CASE("collectives: reduce-scatter and all-reduce, every dtype and op, match the reference") {
  Fixture f;
  REQUIRE(all_ranks(f.ready));
  const int n = f.s.n, me = f.s.me;
  bool ok = true;
  const uint32_t dtypes[] = {TMASHMEM_DTYPE_F32, TMASHMEM_DTYPE_F16, TMASHMEM_DTYPE_BF16,
                             TMASHMEM_DTYPE_I32};
  const int ops[] = {TMASHMEM_REDUCE_SUM, TMASHMEM_REDUCE_MIN, TMASHMEM_REDUCE_MAX};
  const std::vector<size_t> counts = {1, 2, 7, 100, 1023, 4096 + 3, 65536 + 17, 300001};
  for (uint32_t dt : dtypes) {
    const size_t es = elem_bytes(dt);
    for (int op : ops) {
      for (size_t count : counts) {
        const int n_sms = count % 2 ? 0 : 5;
        const size_t mis = count == 1023 ? es : 0;  // element-aligned, not 16-byte aligned
        auto seeds = f.seeds();
        ok &= run_case(f.b, name("reduce_scatter", dtype_name(dt), op_name(op), count, n_sms, mis),
                       dt, es, make_input(dt, seeds[me], 0, count * size_t(n)), mis, mis,
                       reduce_reference(dt, op, seeds, size_t(me) * count, count),
                       [&](uint8_t* d, uint8_t* s) {
                         return tmashmem_reduce_scatter_on_stream(
                             d, s, count, static_cast<tmashmem_dtype_t>(dt), op, n_sms, f.b.stream);
                       });
        for (int algo :
             {TMASHMEM_ALLREDUCE_AUTO, TMASHMEM_ALLREDUCE_ONE_SHOT, TMASHMEM_ALLREDUCE_TWO_SHOT}) {
          seeds = f.seeds();
          const char* an = algo == 0 ? " auto" : algo == 1 ? " one-shot" : " two-shot";
          ok &= run_case(f.b, name("allreduce", dtype_name(dt), op_name(op), count, n_sms, mis, an),
                         dt, es, make_input(dt, seeds[me], 0, count), mis, mis,
                         reduce_reference(dt, op, seeds, 0, count), [&](uint8_t* d, uint8_t* s) {
                           return tmashmem_allreduce_on_stream(d, s, count,
                                                               static_cast<tmashmem_dtype_t>(dt),
                                                               op, algo, n_sms, f.b.stream);
                         });
        }
      }
    }
  }
  // 256 MiB: f32 sums (256 MiB exactly) and bf16 sums (3 elements short: ragged), both
  // algorithms; reduce-scatter of as much src.
  for (uint32_t dt : {uint32_t(TMASHMEM_DTYPE_F32), uint32_t(TMASHMEM_DTYPE_BF16)}) {
    const size_t count = kLarge / elem_bytes(dt) - (dt == TMASHMEM_DTYPE_BF16 ? 3 : 0);
    for (int algo : {TMASHMEM_ALLREDUCE_ONE_SHOT, TMASHMEM_ALLREDUCE_TWO_SHOT}) {
      const auto seeds = f.seeds();
      ok &= run_case(
          f.b, name("allreduce", dtype_name(dt), "sum", count, 0, 0, " 256 MiB"), dt,
          elem_bytes(dt), make_input(dt, seeds[me], 0, count), 0, 0,
          reduce_reference(dt, TMASHMEM_REDUCE_SUM, seeds, 0, count), [&](uint8_t* d, uint8_t* s) {
            return tmashmem_allreduce_on_stream(d, s, count, static_cast<tmashmem_dtype_t>(dt),
                                                TMASHMEM_REDUCE_SUM, algo, 0, f.b.stream);
          });
    }
    const size_t rs_count = count / size_t(n);
    const auto seeds = f.seeds();
    ok &=
        run_case(f.b, name("reduce_scatter", dtype_name(dt), "sum", rs_count, 0, 0, " 256 MiB"), dt,
                 elem_bytes(dt), make_input(dt, seeds[me], 0, rs_count * size_t(n)), 0, 0,
                 reduce_reference(dt, TMASHMEM_REDUCE_SUM, seeds, size_t(me) * rs_count, rs_count),
                 [&](uint8_t* d, uint8_t* s) {
                   return tmashmem_reduce_scatter_on_stream(d, s, rs_count,
                                                            static_cast<tmashmem_dtype_t>(dt),
                                                            TMASHMEM_REDUCE_SUM, 0, f.b.stream);
                 });
  }
  CHECK(all_ranks(ok));
}

// The staged forms' guard reads every peer's Ready of the slot's previous step. A direct
// broadcast (one CTA: its piece is too big for a staged slot) whose non-roots would
// announce to nobody, then small staged calls on the same slot: before the fix, the
// root's guard waited for Ready entries the non-roots never stored, and the kernel
// trapped at its timeout (seen at 4 PEs; the same sequence hangs at 2).
TEST_CASE("collectives: a staged call right after a direct broadcast on the same slots") {
  Fixture f;
  REQUIRE(all_ranks(f.ready));
  const int n = f.s.n, me = f.s.me;
  bool ok = true;
  const size_t big = 200 * 1024, small = 4096 + 16;
  for (int round = 0; round < 2 * n; ++round) {
    const int root = round % n;
    const auto seeds = f.seeds();
    ok &= run_case(f.b, name("broadcast", "bytes", "", big, 1, 0, " (direct)"), 0, 1,
                   pattern(seeds[me], 0, big), 0, 0, pattern(seeds[root], 0, big),
                   [&](uint8_t* d, uint8_t* s) {
                     return tmashmem_broadcast_on_stream(d, s, big, root, 1, f.b.stream);
                   });
    const auto seeds2 = f.seeds();
    std::vector<uint8_t> want;
    for (int q = 0; q < n; ++q) {
      const auto part = pattern(seeds2[q], 0, small);
      want.insert(want.end(), part.begin(), part.end());
    }
    ok &= run_case(f.b, name("allgather", "bytes", "", small, 1, 0, " (staged)"), 0, 1,
                   pattern(seeds2[me], 0, small), 0, 0, want, [&](uint8_t* d, uint8_t* s) {
                     return tmashmem_allgather_on_stream(d, s, small, 1, f.b.stream);
                   });
    const auto seeds3 = f.seeds();
    ok &= run_case(
        f.b, name("broadcast", "bytes", "", small, 1, 0, " (staged under COLL_STAGED=all)"), 0, 1,
        pattern(seeds3[me], 0, small), 0, 0, pattern(seeds3[(root + 1) % n], 0, small),
        [&](uint8_t* d, uint8_t* s) {
          return tmashmem_broadcast_on_stream(d, s, small, (root + 1) % n, 1, f.b.stream);
        });
  }
  CHECK(all_ranks(ok));
}

TEST_CASE("collectives: a buffer outside the heap is refused on the GPU build too") {
  Fixture f;
  REQUIRE(all_ranks(f.ready));
  uint8_t* local = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&local, 4096));
  const tmashmem_status_t st = tmashmem_allgather_on_stream(f.b.dst, local, 16, 0, f.b.stream);
  const std::string m = tmashmem_last_error();
  if (st != TMASHMEM_ERROR_INVALID_VALUE || m.find("symmetric heap") == std::string::npos) {
    std::printf("[PE %d] allgather with a cudaMalloc src returned %d: %s\n", mpi_rank(), st,
                m.c_str());
    ok = false;
  }
  cudaFree(local);
  CHECK(all_ranks(ok));
}

TEST_CASE(
    "collectives: all-reduce of inexact floats is bit-identical on every PE and within "
    "fp32 rounding of the exact sum") {
  Fixture f;
  REQUIRE(all_ranks(f.ready));
  const int n = f.s.n, me = f.s.me;
  bool ok = true;
  const size_t count = 100003;
  for (int algo : {TMASHMEM_ALLREDUCE_ONE_SHOT, TMASHMEM_ALLREDUCE_TWO_SHOT}) {
    for (uint32_t dt : {uint32_t(TMASHMEM_DTYPE_F32), uint32_t(TMASHMEM_DTYPE_BF16)}) {
      // x = u * 2^k with u in [-1, 1) and k in [-8, 8): sums round in fp32.
      auto value = [&](int pe, size_t i) {
        const uint32_t h = hash32(seed_for(0xF10A7, pe, f.b.round), i);
        const double u = (static_cast<double>(h >> 8) / double(1u << 24)) * 2.0 - 1.0;
        return std::ldexp(u, static_cast<int>(h & 15u) - 8);
      };
      const size_t es = elem_bytes(dt);
      std::vector<uint8_t> in(count * es);
      std::vector<double> stored(size_t(n) * count);  // each PE's inputs as stored
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i) {
          uint8_t bits[4];
          store_value(dt, value(q, i), bits);
          if (q == me) std::memcpy(&in[i * es], bits, es);
          float back;
          if (dt == TMASHMEM_DTYPE_F32) {
            std::memcpy(&back, bits, 4);
          } else {
            uint32_t w = uint32_t(bits[0] | (bits[1] << 8)) << 16;
            std::memcpy(&back, &w, 4);
          }
          stored[size_t(q) * count + i] = back;
        }
      uint8_t* d = f.b.dst + kGuard;
      uint8_t* s = f.b.src + kGuard;
      ok &= GPU_TEST_CUDA(cudaMemcpy(s, in.data(), in.size(), cudaMemcpyHostToDevice));
      ok &= GPU_TEST_TM(tmashmem_allreduce_on_stream(d, s, count, static_cast<tmashmem_dtype_t>(dt),
                                                     TMASHMEM_REDUCE_SUM, algo, 0, f.b.stream));
      ok &= GPU_TEST_CUDA(cudaStreamSynchronize(f.b.stream));
      std::vector<uint8_t> got(count * es), pe0(count * es);
      ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), d, got.size(), cudaMemcpyDeviceToHost));
      pe0 = got;
      MPI_Bcast(pe0.data(), static_cast<int>(pe0.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
      size_t differ = 0, outside = 0;
      for (size_t i = 0; i < count; ++i) {
        if (std::memcmp(&got[i * es], &pe0[i * es], es) != 0 && differ++ < 3)
          std::printf("[PE %d] allreduce %s algo %d: element %zu differs from PE 0's\n", mpi_rank(),
                      dtype_name(dt), algo, i);
        double exact = 0, magnitude = 0;
        for (int q = 0; q < n; ++q) {
          exact += stored[size_t(q) * count + i];
          magnitude += std::fabs(stored[size_t(q) * count + i]);
        }
        float seen;
        if (dt == TMASHMEM_DTYPE_F32) {
          std::memcpy(&seen, &got[i * 4], 4);
        } else {
          uint32_t w = uint32_t(got[i * 2] | (got[i * 2 + 1] << 8)) << 16;
          std::memcpy(&seen, &w, 4);
        }
        // n - 1 fp32 additions, then (bf16) one rounding to 8 significant bits.
        const double bound = double(n) * 0x1p-24 * magnitude +
                             (dt == TMASHMEM_DTYPE_BF16 ? 0x1p-8 * std::fabs(exact) : 0.0) + 1e-30;
        if (std::fabs(double(seen) - exact) > bound && outside++ < 3)
          std::printf("[PE %d] allreduce %s algo %d: element %zu = %.9g, exact %.9g, bound %.3g\n",
                      mpi_rank(), dtype_name(dt), algo, i, double(seen), exact, bound);
      }
      if (differ || outside)
        std::printf(
            "[PE %d] allreduce %s algo %d: %zu elements differ from PE 0, %zu outside the "
            "bound\n",
            mpi_rank(), dtype_name(dt), algo, differ, outside);
      ok &= differ == 0 && outside == 0;
      ++f.b.round;
    }
  }
  CHECK(all_ranks(ok));
}
