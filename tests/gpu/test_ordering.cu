// Ordering stress: each PE produces 1 MiB of new data per round into the next PE
// and signals it; each PE waits for the previous PE's signal, checks every byte,
// and answers (acknowledges) so the producer may overwrite the buffer. 10,000
// rounds (TMASHMEM_TEST_STRESS_ROUNDS) per variant, data generated on the GPU from
// a per-round seed:
//   put_signal_block                          (put + releasing signal, one call)
//   put_warp + fence + signal_op              (each warp puts a slice)
//   put_warp + fence + signal_op_relaxed      (the same; thread 0 fences again and
//                                              signals without a release)
//   put_nbi + quiet + signal_op               (four threads issue bulk copies)
//   put_signal_nbi                            (one thread, one call)
// A data race (signal visible before the data) shows up as a wrong byte.
#include <vector>

#include "common/constant_dispatch.h"
#include "gpu_test_util.cuh"

using namespace gpu_test;
using tmashmem::Cmp;
using tmashmem::SignalOp;
using tmashmem::Status;

namespace {

constexpr size_t kBytes = size_t(1) << 20;
constexpr size_t kWords = kBytes / 8;
constexpr int kThreads = 256;
constexpr int kNbiIssuers = 4;
constexpr uint32_t kStageBytes = 8192;

enum class Variant {
  PutSignalBlock,
  PutWarpFenceSignal,
  PutWarpFenceRelaxedSignal,
  PutNbiQuietSignal,
  PutSignalNbi
};
constexpr int kVariants = 5;

const char* name(Variant v) {
  constexpr const char* kNames[] = {"put_signal_block", "put_warp + fence + signal_op",
                                    "put_warp + fence + signal_op_relaxed",
                                    "put_nbi + quiet + signal_op", "put_signal_nbi"};
  return kNames[static_cast<int>(v)];  // in Variant's order
}

struct StressResult {
  int status;                 // Status of the wait that failed (Ok when none did)
  int failed_wait;            // 0 none, 1 waiting for the ack, 2 waiting for the data
  unsigned long long rounds;  // rounds completed
  unsigned long long bad_words;
  unsigned long long first_bad_round;
  unsigned long long first_bad_word;
  unsigned long long expected;
  unsigned long long got;
};

__device__ __forceinline__ uint64_t word_of(uint64_t seed, int pe, uint64_t round, uint64_t i) {
  return mix64(seed ^ mix64((uint64_t(pe) << 40) ^ round) ^ i);
}

template <Variant kVariant>
__global__ void __launch_bounds__(kThreads)
    stress_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint64_t* inbox, uint64_t* outbox,
                  uint64_t* data_sig, uint64_t* ack_sig, uint64_t rounds, uint64_t seed,
                  StressResult* result) {
  __shared__ __align__(16) uint8_t stage[kNbiIssuers][kStageBytes];
  __shared__ unsigned long long bad_words;
  __shared__ unsigned long long first_bad;  // (round << 32) | word, the smallest seen
  const int tid = threadIdx.x, me = ctx.my_pe, n = ctx.n_pes;
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const int warp = tid / 32, lane = tid % 32, warps = kThreads / 32;
  if (tid == 0) {
    bad_words = 0;
    first_bad = ~0ull;
    result->status = static_cast<int>(Status::Ok);
    result->failed_wait = 0;
    result->expected = result->got = 0;
  }
  uint64_t r = 0;
  for (; r < rounds; ++r) {
    // Producer: the next PE has consumed round r - 1, so its inbox may be overwritten.
    Status st = Status::Ok;
    if (tid == 0 && r > 0)
      st = tmashmem::signal_wait_until(ctx, ack_sig, Cmp::GE, r, kWaitNs, next);
    if (__syncthreads_or(st != Status::Ok)) {
      if (tid == 0) {
        result->status = static_cast<int>(st);
        result->failed_wait = 1;
      }
      break;
    }
    for (size_t i = tid; i < kWords; i += kThreads) outbox[i] = word_of(seed, me, r, i);
    if constexpr (kVariant == Variant::PutNbiQuietSignal || kVariant == Variant::PutSignalNbi)
      tmashmem::fence_proxy_async_global();  // other threads' writes, read by bulk copies
    __syncthreads();
    const uint64_t value = r + 1;
    if constexpr (kVariant == Variant::PutSignalBlock) {
      tmashmem::put_signal_block(ctx, inbox, outbox, kBytes, data_sig, value, SignalOp::Set, next);
    } else if constexpr (kVariant == Variant::PutWarpFenceSignal) {
      const size_t slice = kWords / warps;
      tmashmem::put_warp(ctx, inbox + warp * slice, outbox + warp * slice, slice, next);
      tmashmem::fence();
      __syncthreads();
      if (tid == 0) tmashmem::signal_op(ctx, data_sig, value, SignalOp::Set, next);
    } else if constexpr (kVariant == Variant::PutWarpFenceRelaxedSignal) {
      // The documented pattern: every thread's puts, a barrier, then the signalling
      // thread's fence (cumulative over what the barrier ordered before it) and a
      // relaxed signal. No thread but 0 fences, so a missing release shows up here.
      const size_t slice = kWords / warps;
      tmashmem::put_warp(ctx, inbox + warp * slice, outbox + warp * slice, slice, next);
      __syncthreads();
      if (tid == 0) {
        tmashmem::fence();
        tmashmem::signal_op_relaxed(ctx, data_sig, value, SignalOp::Set, next);
      }
    } else if constexpr (kVariant == Variant::PutNbiQuietSignal) {
      const size_t slice = kWords / kNbiIssuers;
      if (lane == 0 && warp < kNbiIssuers) {
        tmashmem::put_nbi(ctx, inbox + warp * slice, outbox + warp * slice, slice, next,
                          tmashmem::BulkStage{stage[warp], kStageBytes});
        tmashmem::quiet();
      }
      __syncthreads();
      if (tid == 0) tmashmem::signal_op(ctx, data_sig, value, SignalOp::Set, next);
    } else {
      if (tid == 0)
        tmashmem::put_signal_nbi(ctx, inbox, outbox, kBytes, data_sig, value, SignalOp::Set, next,
                                 tmashmem::BulkStage{stage, sizeof stage});
      __syncthreads();  // outbox is rewritten next round
    }

    // Consumer: round r from the previous PE.
    if (tid == 0) st = tmashmem::signal_wait_until(ctx, data_sig, Cmp::EQ, value, kWaitNs, prev);
    if (__syncthreads_or(st != Status::Ok)) {
      if (tid == 0) {
        result->status = static_cast<int>(st);
        result->failed_wait = 2;
        result->got = tmashmem::signal_fetch(data_sig);
        result->expected = value;
      }
      break;
    }
    unsigned long long bad = 0;
    for (size_t i = tid; i < kWords; i += kThreads) {
      const uint64_t want = word_of(seed, prev, r, i);
      const uint64_t got = inbox[i];
      if (got != want) {
        if (bad == 0) {  // this thread's first mismatch: keep the earliest of the block's
          const unsigned long long key = (r << 32) | i;
          if (atomicMin(&first_bad, key) > key) {
            result->expected = want;  // racy among threads; any recorded mismatch will do
            result->got = got;
          }
        }
        ++bad;
      }
    }
    if (bad) atomicAdd(&bad_words, bad);
    __syncthreads();  // every read of the inbox is done before the producer may overwrite it
    if (tid == 0) tmashmem::signal_op(ctx, ack_sig, value, SignalOp::Set, prev);
  }
  __syncthreads();
  if (tid == 0) {
    result->rounds = r;
    result->bad_words = bad_words;
    result->first_bad_round = first_bad == ~0ull ? 0 : first_bad >> 32;
    result->first_bad_word = first_bad == ~0ull ? 0 : (first_bad & 0xffffffffu);
  }
}

template <Variant kVariant>
cudaError_t launch(const tmashmem_ctx_t& ctx, uint64_t* inbox, uint64_t* outbox, uint64_t* sigs,
                   uint64_t rounds, uint64_t seed, StressResult* result) {
  stress_kernel<kVariant>
      <<<1, kThreads>>>(ctx, inbox, outbox, sigs, sigs + 1, rounds, seed, result);
  return cudaGetLastError();
}

void run_stress(Variant variant) {
  Session s;
  REQUIRE(all_ranks(s.ok));
  const uint64_t rounds = env_count("TMASHMEM_TEST_STRESS_ROUNDS", 10000);
  auto* inbox = static_cast<uint64_t*>(tmashmem_malloc(kBytes));
  auto* sigs = static_cast<uint64_t*>(tmashmem_calloc(2, sizeof(uint64_t)));  // data, ack
  uint64_t* outbox = nullptr;
  StressResult* result = nullptr;
  bool ok = inbox != nullptr && sigs != nullptr && GPU_TEST_CUDA(cudaMalloc(&outbox, kBytes)) &&
            GPU_TEST_CUDA(cudaMalloc(&result, sizeof(StressResult)));
  REQUIRE(all_ranks(ok));
  const tmashmem_ctx_t ctx = s.ctx();
  const uint64_t seed = seed_for(30, 0, static_cast<uint64_t>(variant));
  ok &= sync_and_barrier();
  const double t0 = MPI_Wtime();
  ok &= GPU_TEST_CUDA(tmashmem_test::dispatch_constant<kVariants>(
      static_cast<int>(variant), cudaErrorInvalidValue, [&](auto v) {
        return launch<static_cast<Variant>(decltype(v)::value)>(ctx, inbox, outbox, sigs, rounds,
                                                                seed, result);
      }));
  ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
  const double seconds = MPI_Wtime() - t0;
  StressResult res{};
  ok &= GPU_TEST_CUDA(cudaMemcpy(&res, result, sizeof res, cudaMemcpyDeviceToHost));
  if (res.status != static_cast<int>(Status::Ok) || res.rounds != rounds || res.bad_words != 0) {
    std::printf(
        "[PE %d] %s: %llu of %llu rounds, %llu wrong words (first: round %llu, word %llu: "
        "0x%016llx, expected 0x%016llx); wait status %d at %s\n",
        s.me, name(variant), res.rounds, (unsigned long long)rounds, res.bad_words,
        res.first_bad_round, res.first_bad_word, res.got, res.expected, res.status,
        res.failed_wait == 1   ? "the ack"
        : res.failed_wait == 2 ? "the data"
                               : "-");
    ok = false;
  }
  if (s.me == 0)
    std::printf(
        "ordering stress %-30s %d PEs: %llu rounds of %zu bytes in %.2f s (%.1f us/round)\n",
        name(variant), s.n, (unsigned long long)rounds, kBytes, seconds,
        rounds ? seconds * 1e6 / double(rounds) : 0.0);
  ok &= sync_and_barrier();
  CHECK(all_ranks(ok));
  cudaFree(outbox);
  cudaFree(result);
  tmashmem_free(sigs);
  tmashmem_free(inbox);
}

}  // namespace

TEST_CASE("ordering stress: put_signal_block, 1 MiB per round") {
  run_stress(Variant::PutSignalBlock);
}

TEST_CASE("ordering stress: put_warp + fence + signal_op, 1 MiB per round") {
  run_stress(Variant::PutWarpFenceSignal);
}

TEST_CASE("ordering stress: put_warp + fence + signal_op_relaxed, 1 MiB per round") {
  run_stress(Variant::PutWarpFenceRelaxedSignal);
}

TEST_CASE("ordering stress: put_nbi + quiet + signal_op, 1 MiB per round") {
  run_stress(Variant::PutNbiQuietSignal);
}

TEST_CASE("ordering stress: put_signal_nbi, 1 MiB per round") { run_stress(Variant::PutSignalNbi); }
