// Device atomics on peer memory (tmashmem/device/atomic.cuh): every thread of
// every PE hits every PE's counters at once with fetch_add, add, compare_swap,
// swap, fetch_and/or/xor, 32- and 64-bit, signed and unsigned; the final values
// and every returned value are checked against what an atomic execution allows.
#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu_test_util.cuh"

using namespace gpu_test;

namespace {

constexpr int kThreads = 64;
constexpr int kMaxPes = 8;
constexpr int kCasRounds = 4;

struct Counters {
  uint64_t add64;
  int32_t add32;
  uint64_t red64;
  int32_t red32;
  int64_t cas64;
  uint32_t cas32;
  uint64_t swap64;
  uint32_t swap32;
  uint64_t or64[kMaxPes];  // [source PE]: its threads set their bit
  uint32_t or32[kMaxPes];
  uint64_t and64[kMaxPes];  // [source PE]: start all ones, its threads clear their bit
  uint32_t and32[kMaxPes];
  uint64_t xor64;
  uint32_t xor32;
};

// What each thread got back, by target PE.
struct Returned {
  uint64_t add64[kMaxPes][kThreads];
  int32_t add32[kMaxPes][kThreads];
  uint64_t swap64[kMaxPes][kThreads];
  uint32_t swap32[kMaxPes][kThreads];
  uint64_t or64[kMaxPes][kThreads];
  uint32_t or32[kMaxPes][kThreads];
  uint64_t and64[kMaxPes][kThreads];
  uint32_t and32[kMaxPes][kThreads];
  int cas_failures_seen_wrong[kMaxPes][kThreads];
};

__host__ __device__ uint64_t swap_value(int pe, int tid) {
  return (uint64_t(pe + 1) << 32) | uint64_t(tid + 1);
}
__host__ __device__ uint64_t xor_mask(uint64_t seed, int pe, int tid) {
  return mix64(seed ^ (uint64_t(pe) << 16) ^ uint64_t(tid));
}

__global__ void atomics_kernel(const __grid_constant__ tmashmem_ctx_t ctx, Counters* c, Returned* r,
                               uint64_t seed) {
  const int tid = threadIdx.x, me = ctx.my_pe, n = ctx.n_pes;
  for (int k = 0; k < n; ++k) {
    const int q = (me + k) % n;
    r->add64[q][tid] = tmashmem::atomic_fetch_add(ctx, &c->add64, uint64_t(1), q);
    r->add32[q][tid] = tmashmem::atomic_fetch_add(ctx, &c->add32, int32_t(1), q);
    tmashmem::atomic_add(ctx, &c->red64, uint64_t(tid + 1), q);
    tmashmem::atomic_add(ctx, &c->red32, int32_t(-(tid + 1)), q);
    int wrong = 0;
    for (int i = 0; i < kCasRounds; ++i) {
      int64_t seen64 = tmashmem::g(ctx, &c->cas64, q);
      for (;;) {
        const int64_t old = tmashmem::atomic_compare_swap(ctx, &c->cas64, seen64, seen64 + 1, q);
        if (old == seen64) break;
        seen64 = old;
      }
      uint32_t seen32 = tmashmem::g(ctx, &c->cas32, q);
      for (;;) {
        const uint32_t old = tmashmem::atomic_compare_swap(ctx, &c->cas32, seen32, seen32 + 1u, q);
        if (old == seen32) break;
        if (old < seen32) ++wrong;  // the counter only grows
        seen32 = old;
      }
    }
    r->cas_failures_seen_wrong[q][tid] = wrong;
    r->swap64[q][tid] = tmashmem::atomic_swap(ctx, &c->swap64, swap_value(me, tid), q);
    r->swap32[q][tid] =
        tmashmem::atomic_swap(ctx, &c->swap32, static_cast<uint32_t>(swap_value(me, tid)), q);
    r->or64[q][tid] = tmashmem::atomic_fetch_or(ctx, &c->or64[me], uint64_t(1) << tid, q);
    r->and64[q][tid] = tmashmem::atomic_fetch_and(ctx, &c->and64[me], ~(uint64_t(1) << tid), q);
    if (tid < 32) {
      r->or32[q][tid] = tmashmem::atomic_fetch_or(ctx, &c->or32[me], 1u << tid, q);
      r->and32[q][tid] = tmashmem::atomic_fetch_and(ctx, &c->and32[me], ~(1u << tid), q);
    }
    tmashmem::atomic_fetch_xor(ctx, &c->xor64, xor_mask(seed, me, tid), q);
    tmashmem::atomic_fetch_xor(ctx, &c->xor32, static_cast<uint32_t>(xor_mask(seed, me, tid)), q);
  }
}

// Values every PE returned for operations on this PE, gathered by source PE.
template <class T>
std::vector<T> gather_for_me(const T (&mine)[kMaxPes][kThreads], int n) {
  std::vector<T> send(size_t(n) * kThreads), recv(size_t(n) * kThreads);
  for (int q = 0; q < n; ++q)
    std::copy(mine[q], mine[q] + kThreads, send.begin() + ptrdiff_t(q) * kThreads);
  MPI_Alltoall(send.data(), kThreads * int(sizeof(T)), MPI_BYTE, recv.data(),
               kThreads * int(sizeof(T)), MPI_BYTE, MPI_COMM_WORLD);
  return recv;
}

bool expect(bool condition, const char* what) {
  if (!condition) std::printf("[PE %d] %s\n", mpi_rank(), what);
  return condition;
}

}  // namespace

TEST_CASE("device atomics: every thread of every PE on every PE's counters") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  REQUIRE(s.n <= kMaxPes);
  auto* counters = static_cast<Counters*>(tmashmem_malloc(sizeof(Counters)));
  REQUIRE(all_ranks(counters != nullptr));
  Returned* returned = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&returned, sizeof(Returned)));
  const uint64_t seed = seed_for(10, 0);
  const tmashmem_ctx_t ctx = s.ctx();

  for (int repeat = 0; repeat < 3; ++repeat) {
    Counters init{};
    for (int p = 0; p < kMaxPes; ++p) {
      init.and64[p] = ~uint64_t(0);
      init.and32[p] = ~0u;
    }
    ok &= GPU_TEST_CUDA(cudaMemcpy(counters, &init, sizeof init, cudaMemcpyHostToDevice));
    ok &= GPU_TEST_CUDA(cudaMemset(returned, 0, sizeof(Returned)));
    ok &= sync_and_barrier();
    atomics_kernel<<<1, kThreads>>>(ctx, counters, returned, seed);
    ok &= GPU_TEST_CUDA(cudaGetLastError());
    ok &= sync_and_barrier();

    Counters got;
    std::vector<Returned> r(1);
    ok &= GPU_TEST_CUDA(cudaMemcpy(&got, counters, sizeof got, cudaMemcpyDeviceToHost));
    ok &= GPU_TEST_CUDA(cudaMemcpy(r.data(), returned, sizeof(Returned), cudaMemcpyDeviceToHost));
    const uint64_t total = uint64_t(s.n) * kThreads;
    const int64_t tri = int64_t(kThreads) * (kThreads + 1) / 2;

    // Final values.
    ok &= expect(got.add64 == total, "fetch_add u64: final value wrong");
    ok &= expect(got.add32 == int32_t(total), "fetch_add s32: final value wrong");
    ok &= expect(got.red64 == uint64_t(s.n * tri), "add u64: final value wrong");
    ok &= expect(got.red32 == int32_t(-s.n * tri), "add s32: final value wrong");
    ok &= expect(got.cas64 == int64_t(total * kCasRounds), "compare_swap s64: lost updates");
    ok &= expect(got.cas32 == uint32_t(total * kCasRounds), "compare_swap u32: lost updates");
    uint64_t want_xor64 = 0;
    uint32_t want_xor32 = 0;
    for (int p = 0; p < s.n; ++p) {
      ok &= expect(got.or64[p] == ~uint64_t(0), "fetch_or u64: a bit is missing");
      ok &= expect(got.or32[p] == ~0u, "fetch_or u32: a bit is missing");
      ok &= expect(got.and64[p] == 0, "fetch_and u64: a bit survived");
      ok &= expect(got.and32[p] == 0, "fetch_and u32: a bit survived");
      for (int t = 0; t < kThreads; ++t) {
        want_xor64 ^= xor_mask(seed, p, t);
        want_xor32 ^= static_cast<uint32_t>(xor_mask(seed, p, t));
      }
    }
    ok &= expect(got.xor64 == want_xor64, "fetch_xor u64: final value wrong");
    ok &= expect(got.xor32 == want_xor32, "fetch_xor u32: final value wrong");

    // Values returned to this PE's threads (bit ops: own bit not yet set / not yet cleared).
    for (int q = 0; q < s.n; ++q) {
      for (int t = 0; t < kThreads; ++t) {
        ok &= expect(((r[0].or64[q][t] >> t) & 1) == 0, "fetch_or u64 returned its own bit set");
        ok &=
            expect(((r[0].and64[q][t] >> t) & 1) == 1, "fetch_and u64 returned its own bit clear");
        if (t < 32) {
          ok &= expect(((r[0].or32[q][t] >> t) & 1) == 0, "fetch_or u32 returned its own bit set");
          ok &= expect(((r[0].and32[q][t] >> t) & 1) == 1,
                       "fetch_and u32 returned its own bit clear");
        }
        ok &= expect(r[0].cas_failures_seen_wrong[q][t] == 0,
                     "compare_swap returned a value below one seen");
      }
    }

    // Values returned by operations on this PE's counters, from every PE.
    std::vector<uint64_t> add64 = gather_for_me(r[0].add64, s.n);
    std::vector<int32_t> add32 = gather_for_me(r[0].add32, s.n);
    std::sort(add64.begin(), add64.end());
    std::sort(add32.begin(), add32.end());
    for (uint64_t i = 0; i < total; ++i) {
      ok &= expect(add64[i] == i, "fetch_add u64: returned values are not 0..N-1");
      ok &= expect(add32[i] == int32_t(i), "fetch_add s32: returned values are not 0..N-1");
      if (!ok) break;
    }
    // swap: the returned values plus the final one are the initial 0 plus every value.
    std::vector<uint64_t> swap64 = gather_for_me(r[0].swap64, s.n);
    std::vector<uint32_t> swap32 = gather_for_me(r[0].swap32, s.n);
    swap64.push_back(got.swap64);
    swap32.push_back(got.swap32);
    std::vector<uint64_t> want64 = {0};
    std::vector<uint32_t> want32 = {0};
    for (int p = 0; p < s.n; ++p)
      for (int t = 0; t < kThreads; ++t) {
        want64.push_back(swap_value(p, t));
        want32.push_back(static_cast<uint32_t>(swap_value(p, t)));
      }
    std::sort(swap64.begin(), swap64.end());
    std::sort(swap32.begin(), swap32.end());
    std::sort(want64.begin(), want64.end());
    std::sort(want32.begin(), want32.end());
    ok &= expect(swap64 == want64, "swap u64: values lost or duplicated");
    ok &= expect(swap32 == want32, "swap u32: values lost or duplicated");
    ok &= sync_and_barrier();
  }
  CHECK(all_ranks(ok));
  cudaFree(returned);
  tmashmem_free(counters);
}
