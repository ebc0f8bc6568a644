// Signals (tmashmem/device/signal.cuh): signal_op Set and Add into every PE,
// signal_wait_until for every comparison (satisfied: Status::Ok; never satisfied
// with a timeout: Status::Timeout after at least the timeout), a wait satisfied
// later by another PE, and put_signal / put_signal_warp / put_signal_nbi data.
#include <cstring>
#include <vector>

#include "gpu_test_util.cuh"

using namespace gpu_test;
using tmashmem::Cmp;
using tmashmem::SignalOp;
using tmashmem::Status;

namespace {

constexpr int kMaxPes = 64;
constexpr int kAdders = 3;

__host__ __device__ uint64_t set_value(uint64_t seed, int from, int to) {
  return (mix64(seed ^ (uint64_t(from) << 8) ^ uint64_t(to)) >> 8) | (uint64_t(1) << 40);
}
__host__ __device__ uint64_t add_value(uint64_t seed, int from, int adder) {
  return mix64(seed ^ (uint64_t(from) << 20) ^ uint64_t(adder)) >> 40;
}

template <bool kRelaxed>
__device__ void update(const tmashmem_ctx_t& ctx, uint64_t* sig, uint64_t value, SignalOp op,
                       int pe) {
  if constexpr (kRelaxed)
    tmashmem::signal_op_relaxed(ctx, sig, value, op, pe);
  else
    tmashmem::signal_op(ctx, sig, value, op, pe);
}

// Thread 0 sets every PE's sigs[me]; then kAdders threads add to it.
template <bool kRelaxed>
__global__ void set_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint64_t* sigs,
                           uint64_t seed) {
  for (int q = 0; q < ctx.n_pes; ++q)
    update<kRelaxed>(ctx, &sigs[ctx.my_pe], set_value(seed, ctx.my_pe, q), SignalOp::Set, q);
}
template <bool kRelaxed>
__global__ void add_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint64_t* sigs,
                           uint64_t seed) {
  for (int q = 0; q < ctx.n_pes; ++q)
    update<kRelaxed>(ctx, &sigs[ctx.my_pe], add_value(seed, ctx.my_pe, threadIdx.x), SignalOp::Add,
                     q);
}

// Sets then adds into every PE's slot for this PE, with signal_op or
// signal_op_relaxed; checks every slot on this PE. Returns the values now there.
std::vector<uint64_t> set_and_add(bool relaxed, uint64_t* sigs, const tmashmem_ctx_t& ctx,
                                  uint64_t seed, int me, int n, bool* ok) {
  const char* call = relaxed ? "signal_op_relaxed" : "signal_op";
  if (relaxed)
    set_kernel<true><<<1, 1>>>(ctx, sigs, seed);
  else
    set_kernel<false><<<1, 1>>>(ctx, sigs, seed);
  *ok &= GPU_TEST_CUDA(cudaGetLastError());
  *ok &= sync_and_barrier();
  std::vector<uint64_t> got(kMaxPes);
  *ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), sigs, kMaxPes * 8, cudaMemcpyDeviceToHost));
  for (int p = 0; p < n; ++p)
    if (got[size_t(p)] != set_value(seed, p, me)) {
      std::printf("[PE %d] %s Set from PE %d: 0x%llx, expected 0x%llx\n", me, call, p,
                  (unsigned long long)got[size_t(p)], (unsigned long long)set_value(seed, p, me));
      *ok = false;
    }
  *ok &= sync_and_barrier();

  if (relaxed)
    add_kernel<true><<<1, kAdders>>>(ctx, sigs, seed);
  else
    add_kernel<false><<<1, kAdders>>>(ctx, sigs, seed);
  *ok &= GPU_TEST_CUDA(cudaGetLastError());
  *ok &= sync_and_barrier();
  *ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), sigs, kMaxPes * 8, cudaMemcpyDeviceToHost));
  std::vector<uint64_t> now(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    uint64_t want = set_value(seed, p, me);
    for (int a = 0; a < kAdders; ++a) want += add_value(seed, p, a);
    now[size_t(p)] = want;
    if (got[size_t(p)] != want) {
      std::printf("[PE %d] %s Add from PE %d: 0x%llx, expected 0x%llx\n", me, call, p,
                  (unsigned long long)got[size_t(p)], (unsigned long long)want);
      *ok = false;
    }
  }
  return now;
}

struct WaitResult {
  int status;
  unsigned long long elapsed_ns;
};

// wait i: signal_wait_until(sigs[from[i]], cmp[i], value[i], timeout[i]).
__global__ void wait_kernel(const __grid_constant__ tmashmem_ctx_t ctx, const uint64_t* sigs,
                            const int* from, const int* cmp, const uint64_t* value,
                            const uint64_t* timeout, WaitResult* out, int n_waits) {
  for (int i = threadIdx.x; i < n_waits; i += blockDim.x) {
    const uint64_t t0 = tmashmem::detail::global_timer_ns();
    const Status st = tmashmem::signal_wait_until(ctx, &sigs[from[i]], static_cast<Cmp>(cmp[i]),
                                                  value[i], timeout[i], from[i]);
    out[i].elapsed_ns = tmashmem::detail::global_timer_ns() - t0;
    out[i].status = static_cast<int>(st);
  }
}

// Spins ~`delay_ns`, signals the next PE, then waits for the previous PE's signal.
__global__ void relay_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint64_t* sig,
                             uint64_t value, uint64_t delay_ns, int* status) {
  const int next = (ctx.my_pe + 1) % ctx.n_pes, prev = (ctx.my_pe + ctx.n_pes - 1) % ctx.n_pes;
  gpu_test::spin_ns(delay_ns);
  tmashmem::signal_op(ctx, sig, value, SignalOp::Set, next);
  *status = static_cast<int>(tmashmem::signal_wait_until(ctx, sig, Cmp::EQ, value, kWaitNs, prev));
}

enum class PutKind { Thread, Warp, Nbi };

// Puts `bytes` of `src` into the next PE's `dest` with a signal, waits for the
// previous PE's. Launched with 48 threads (a full and a partial warp).
template <PutKind kKind>
__global__ void put_signal_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint8_t* dest,
                                  const uint8_t* src, size_t bytes, uint64_t* sig, uint64_t add,
                                  uint64_t wait_for, int* status) {
  __shared__ __align__(16) uint8_t stage[2048];
  const int next = (ctx.my_pe + 1) % ctx.n_pes, prev = (ctx.my_pe + ctx.n_pes - 1) % ctx.n_pes;
  if constexpr (kKind == PutKind::Thread) {
    if (threadIdx.x == 0)
      tmashmem::put_signal(ctx, dest, src, bytes, sig, add, SignalOp::Add, next);
  } else if constexpr (kKind == PutKind::Warp) {
    if (threadIdx.x < 32)
      tmashmem::put_signal_warp(ctx, dest, src, bytes, sig, add, SignalOp::Add, next);
  } else {
    if (threadIdx.x == 0)
      tmashmem::put_signal_nbi(ctx, dest, src, bytes, sig, add, SignalOp::Add, next,
                               tmashmem::BulkStage{stage, sizeof stage});
  }
  if (threadIdx.x == 0)
    *status =
        static_cast<int>(tmashmem::signal_wait_until(ctx, sig, Cmp::EQ, wait_for, kWaitNs, prev));
}

template <class T>
T* device_copy(const std::vector<T>& v, bool* ok) {
  T* d = nullptr;
  *ok &= GPU_TEST_CUDA(cudaMalloc(&d, v.size() * sizeof(T)));
  *ok &= GPU_TEST_CUDA(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

TEST_CASE("signal_op Set and Add into every PE; signal_wait_until for every comparison") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  REQUIRE(s.n <= kMaxPes);
  auto* sigs = static_cast<uint64_t*>(tmashmem_calloc(kMaxPes, sizeof(uint64_t)));
  REQUIRE(all_ranks(sigs != nullptr));
  const tmashmem_ctx_t ctx = s.ctx();
  const uint64_t seed = seed_for(20, 0);
  bool ok = true;

  const std::vector<uint64_t> now = set_and_add(false, sigs, ctx, seed, s.me, s.n, &ok);

  // Every comparison, satisfied (no timeout needed, but bounded anyway) and never
  // satisfied (1 ms and 5 ms timeouts), on every PE's slot.
  std::vector<int> from, cmp;
  std::vector<uint64_t> value, timeout;
  std::vector<bool> satisfied;
  for (int p = 0; p < s.n; ++p) {
    const uint64_t v = now[size_t(p)];
    const struct {
      Cmp cmp;
      uint64_t yes, no;
    } cases[] = {{Cmp::EQ, v, v + 1}, {Cmp::NE, v + 1, v}, {Cmp::GT, v - 1, v},
                 {Cmp::GE, v, v + 1}, {Cmp::LT, v + 1, v}, {Cmp::LE, v, v - 1}};
    for (const auto& c : cases) {
      for (int sat = 0; sat < 2; ++sat) {
        from.push_back(p);
        cmp.push_back(static_cast<int>(c.cmp));
        value.push_back(sat ? c.yes : c.no);
        timeout.push_back(sat ? kWaitNs : (cmp.size() % 2 ? 1000000ull : 5000000ull));
        satisfied.push_back(sat == 1);
      }
    }
  }
  const int n_waits = static_cast<int>(from.size());
  int* d_from = device_copy(from, &ok);
  int* d_cmp = device_copy(cmp, &ok);
  uint64_t* d_value = device_copy(value, &ok);
  uint64_t* d_timeout = device_copy(timeout, &ok);
  WaitResult* d_out = nullptr;
  ok &= GPU_TEST_CUDA(cudaMalloc(&d_out, sizeof(WaitResult) * size_t(n_waits)));
  wait_kernel<<<1, 128>>>(ctx, sigs, d_from, d_cmp, d_value, d_timeout, d_out, n_waits);
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
  std::vector<WaitResult> out(static_cast<size_t>(n_waits));
  ok &= GPU_TEST_CUDA(
      cudaMemcpy(out.data(), d_out, sizeof(WaitResult) * out.size(), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n_waits; ++i) {
    const WaitResult& w = out[size_t(i)];
    const int want = static_cast<int>(satisfied[size_t(i)] ? Status::Ok : Status::Timeout);
    bool good = w.status == want;
    if (!satisfied[size_t(i)])
      good &= w.elapsed_ns >= timeout[size_t(i)] && w.elapsed_ns < 5000000000ull;
    if (!good) {
      std::printf(
          "[PE %d] wait %d (slot %d, cmp %d, value 0x%llx, timeout %llu ns): status %d after "
          "%llu ns, expected %d\n",
          s.me, i, from[size_t(i)], cmp[size_t(i)], (unsigned long long)value[size_t(i)],
          (unsigned long long)timeout[size_t(i)], w.status, w.elapsed_ns, want);
      ok = false;
    }
  }
  CHECK(all_ranks(ok));
  cudaFree(d_from);
  cudaFree(d_cmp);
  cudaFree(d_value);
  cudaFree(d_timeout);
  cudaFree(d_out);
  ok &= sync_and_barrier();
  tmashmem_free(sigs);
}

TEST_CASE("signal_op_relaxed Set and Add into every PE") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  REQUIRE(s.n <= kMaxPes);
  auto* sigs = static_cast<uint64_t*>(tmashmem_calloc(kMaxPes, sizeof(uint64_t)));
  REQUIRE(all_ranks(sigs != nullptr));
  bool ok = true;
  set_and_add(true, sigs, s.ctx(), seed_for(21, 0), s.me, s.n, &ok);
  CHECK(all_ranks(ok));
  ok &= sync_and_barrier();
  tmashmem_free(sigs);
}

TEST_CASE("signal_wait_until that can never be satisfied returns Status::Timeout") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(1, sizeof(uint64_t)));
  REQUIRE(all_ranks(sig != nullptr));
  const tmashmem_ctx_t ctx = s.ctx();
  bool ok = true;
  for (uint64_t timeout_ns : {uint64_t(100000), uint64_t(2000000), uint64_t(50000000)}) {
    std::vector<int> from = {0}, cmp = {static_cast<int>(Cmp::EQ)};
    std::vector<uint64_t> value = {0xDEADBEEFull}, timeout = {timeout_ns};
    int* d_from = device_copy(from, &ok);
    int* d_cmp = device_copy(cmp, &ok);
    uint64_t* d_value = device_copy(value, &ok);
    uint64_t* d_timeout = device_copy(timeout, &ok);
    WaitResult* d_out = nullptr;
    ok &= GPU_TEST_CUDA(cudaMalloc(&d_out, sizeof(WaitResult)));
    wait_kernel<<<1, 1>>>(ctx, sig, d_from, d_cmp, d_value, d_timeout, d_out, 1);
    ok &= GPU_TEST_CUDA(cudaGetLastError());
    ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
    WaitResult w{};
    ok &= GPU_TEST_CUDA(cudaMemcpy(&w, d_out, sizeof w, cudaMemcpyDeviceToHost));
    if (w.status != static_cast<int>(Status::Timeout) || w.elapsed_ns < timeout_ns) {
      std::printf("[PE %d] timeout %llu ns: status %d (%s) after %llu ns\n", s.me,
                  (unsigned long long)timeout_ns, w.status,
                  tmashmem::status_name(static_cast<Status>(w.status)), w.elapsed_ns);
      ok = false;
    }
    cudaFree(d_from);
    cudaFree(d_cmp);
    cudaFree(d_value);
    cudaFree(d_timeout);
    cudaFree(d_out);
  }
  CHECK(all_ranks(ok));
  ok &= sync_and_barrier();
  tmashmem_free(sig);
}

TEST_CASE("signal_wait_until waits for a signal another PE sends later") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(1, sizeof(uint64_t)));
  int* status = nullptr;
  bool ok = sig != nullptr && GPU_TEST_CUDA(cudaMalloc(&status, sizeof(int)));
  REQUIRE(all_ranks(ok));
  const tmashmem_ctx_t ctx = s.ctx();
  for (int round = 1; round <= 5; ++round) {
    relay_kernel<<<1, 1>>>(ctx, sig, uint64_t(round) * 1000 + 7, 2000000ull * uint64_t(round),
                           status);
    ok &= GPU_TEST_CUDA(cudaGetLastError());
    ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
    int st = -1;
    ok &= GPU_TEST_CUDA(cudaMemcpy(&st, status, sizeof st, cudaMemcpyDeviceToHost));
    if (st != static_cast<int>(Status::Ok)) {
      std::printf("[PE %d] round %d: wait for the previous PE's signal: status %d\n", s.me, round,
                  st);
      ok = false;
    }
    ok &= sync_and_barrier();
  }
  CHECK(all_ranks(ok));
  cudaFree(status);
  tmashmem_free(sig);
}

TEST_CASE("put_signal, put_signal_warp and put_signal_nbi deliver the data with the signal") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  const size_t kSpan = (size_t(1) << 20) + 64;
  auto* dest = static_cast<uint8_t*>(tmashmem_malloc(kSpan));
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(1, sizeof(uint64_t)));
  uint8_t* src = nullptr;
  int* status = nullptr;
  bool ok = dest != nullptr && sig != nullptr && GPU_TEST_CUDA(cudaMalloc(&src, kSpan)) &&
            GPU_TEST_CUDA(cudaMalloc(&status, sizeof(int)));
  REQUIRE(all_ranks(ok));
  const tmashmem_ctx_t ctx = s.ctx();
  const int prev = (s.me + s.n - 1) % s.n;
  uint64_t expected_signal = 0;
  uint64_t round = 0;
  for (PutKind kind : {PutKind::Thread, PutKind::Warp, PutKind::Nbi}) {
    // (source offset, destination offset, bytes): aligned, same residue, different residues.
    const size_t shapes[][3] = {
        {0, 0, 1}, {3, 3, 4099}, {0, 16, 65536}, {5, 2, 30001}, {16, 32, size_t(1) << 20}};
    for (const auto& shape : shapes) {
      const size_t so = shape[0], dof = shape[1], bytes = shape[2];
      ++round;
      const uint64_t background = seed_for(21, s.me, round);
      ok &= GPU_TEST_CUDA(fill_pattern(dest, kSpan, background));
      ok &= GPU_TEST_CUDA(fill_pattern(src, kSpan, seed_for(22, s.me, round)));
      ok &= sync_and_barrier();
      // The signal is added to: after this round it holds the sum of the rounds so far.
      expected_signal += round;
      switch (kind) {
        case PutKind::Thread:
          put_signal_kernel<PutKind::Thread>
              <<<1, 48>>>(ctx, dest + dof, src + so, bytes, sig, round, expected_signal, status);
          break;
        case PutKind::Warp:
          put_signal_kernel<PutKind::Warp>
              <<<1, 48>>>(ctx, dest + dof, src + so, bytes, sig, round, expected_signal, status);
          break;
        case PutKind::Nbi:
          put_signal_kernel<PutKind::Nbi>
              <<<1, 48>>>(ctx, dest + dof, src + so, bytes, sig, round, expected_signal, status);
          break;
      }
      ok &= GPU_TEST_CUDA(cudaGetLastError());
      ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
      int st = -1;
      ok &= GPU_TEST_CUDA(cudaMemcpy(&st, status, sizeof st, cudaMemcpyDeviceToHost));
      std::vector<uint8_t> got(kSpan), want(kSpan);
      ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), dest, kSpan, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < kSpan; ++i) want[i] = pattern_byte(background, i);
      for (size_t i = 0; i < bytes; ++i)
        want[dof + i] = pattern_byte(seed_for(22, prev, round), so + i);
      if (st != static_cast<int>(Status::Ok) || got != want) {
        size_t bad = 0;
        for (size_t i = 0; i < kSpan; ++i) bad += got[i] != want[i];
        std::printf(
            "[PE %d] put_signal kind %d, %zu bytes (src +%zu, dest +%zu): wait status %d, %zu "
            "wrong bytes\n",
            s.me, static_cast<int>(kind), bytes, so, dof, st, bad);
        ok = false;
      }
      ok &= sync_and_barrier();
    }
  }
  CHECK(all_ranks(ok));
  cudaFree(src);
  cudaFree(status);
  tmashmem_free(sig);
  tmashmem_free(dest);
}
