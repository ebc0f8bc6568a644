// Device barriers (tmashmem/device/barrier.cuh): 10,000 back-to-back rounds
// (TMASHMEM_TEST_BARRIER_ROUNDS) in which every block of every PE writes a
// per-round value into every PE, passes a barrier, checks every value written by
// every block of every PE, and passes a second barrier before the next round
// overwrites them. Several grid and block shapes (multi-dimensional, a partial
// warp, a single thread), barrier_all and sync_all, consecutive launches sharing
// the signal pad's counters; cooperative launches guarantee co-residency. Each shape runs
// both cross-PE steps: the one the context picks (the peer epochs: no multicast here)
// and the multicast count, forced, whose multimem.red then takes multicast_red's
// unicast fan-out (ctx.mc_base is 0 on every lent machine).
#include <algorithm>
#include <vector>

#include "gpu_test_util.cuh"

using namespace gpu_test;
using tmashmem::Status;
using tmashmem::detail::BarrierExchange;

namespace {

constexpr int kMaxSlots = 64 * 16;  // PEs x blocks

struct BarrierResult {
  int status;
  unsigned long long rounds;
  unsigned long long bad;
  unsigned long long first_bad_round;
  int first_bad_slot;
};

__device__ __forceinline__ uint64_t slot_value(uint64_t seed, uint64_t round, int pe, int block) {
  return mix64(seed ^ (round << 20) ^ (uint64_t(pe) << 8) ^ uint64_t(block));
}

template <BarrierExchange E>
__global__ void barrier_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint64_t* slots,
                               uint64_t rounds, uint64_t seed, int full_barrier,
                               BarrierResult* results) {
  const int blocks = static_cast<int>(gridDim.x * gridDim.y * gridDim.z);
  const int b = static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  const unsigned tid = tmashmem::detail::block_thread_rank();
  const unsigned threads = tmashmem::detail::block_thread_count();
  const int me = ctx.my_pe, n = ctx.n_pes, n_slots = n * blocks;
  auto barrier = [&]() {
    // FromContext is exactly barrier_all / sync_all.
    return full_barrier ? tmashmem::detail::complete_and_barrier<E>(ctx, kWaitNs)
                        : tmashmem::detail::grid_barrier<E>(ctx, kWaitNs, false);
  };
  unsigned long long bad_total = 0, first_bad_round = 0;
  int first_bad_slot = -1;
  Status st = Status::Ok;
  uint64_t r = 0;
  for (; r < rounds; ++r) {
    // Every block writes its value for this round into every PE (spread over threads).
    for (int q = static_cast<int>(tid); q < n; q += static_cast<int>(threads))
      tmashmem::p(ctx, &slots[me * blocks + b], slot_value(seed, r, me, b), q);
    if ((st = barrier()) != Status::Ok) break;
    int bad = 0, first = -1;
    for (int i = static_cast<int>(tid); i < n_slots; i += static_cast<int>(threads))
      if (slots[i] != slot_value(seed, r, i / blocks, i % blocks)) {
        if (first < 0) first = i;
        ++bad;
      }
    const int block_bad = __syncthreads_count(bad != 0);
    if (block_bad && bad && first_bad_slot < 0) {
      first_bad_slot = first;
      first_bad_round = r;
    }
    bad_total += static_cast<unsigned long long>(bad);
    if ((st = barrier()) != Status::Ok) break;  // all checks done before anyone writes again
  }
  // Per thread: fold into the block's result with atomics.
  BarrierResult* out = &results[b];
  if (tid == 0) {
    out->status = static_cast<int>(st);
    out->rounds = r;
  }
  if (bad_total) {
    atomicAdd(&out->bad, bad_total);
    out->first_bad_round = first_bad_round;  // any thread's first finding will do
    out->first_bad_slot = first_bad_slot;
  }
}

struct Shape {
  dim3 grid;
  dim3 block;
  int full_barrier;
  uint64_t rounds_divisor;  // rounds = TMASHMEM_TEST_BARRIER_ROUNDS / divisor
  const char* what;
};

}  // namespace

TEST_CASE("device barriers: 10,000 back-to-back rounds with a per-round value check") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* slots = static_cast<uint64_t*>(tmashmem_calloc(kMaxSlots, sizeof(uint64_t)));
  REQUIRE(all_ranks(slots != nullptr));
  BarrierResult* results = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&results, sizeof(BarrierResult) * 16));
  int cooperative = 0;
  ok &= GPU_TEST_CUDA(
      cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, tmashmem_device()));
  REQUIRE(all_ranks(ok && cooperative == 1));
  const tmashmem_ctx_t ctx = s.ctx();
  const uint64_t base_rounds = env_count("TMASHMEM_TEST_BARRIER_ROUNDS", 10000);
  const Shape shapes[] = {
      {dim3(2, 2, 1), dim3(8, 4, 4), 1, 1, "barrier_all, 2x2 blocks of 8x4x4 threads"},
      {dim3(3), dim3(20), 0, 1, "sync_all, 3 blocks of 20 threads"},
      {dim3(1), dim3(1), 1, 20, "barrier_all, 1 block of 1 thread"},
      {dim3(16), dim3(256), 0, 20, "sync_all, 16 blocks of 256 threads"},
  };
  struct Exchange {
    const void* kernel;
    const char* what;
  };
  const Exchange exchanges[] = {
      {reinterpret_cast<const void*>(barrier_kernel<BarrierExchange::FromContext>), "as picked"},
      {reinterpret_cast<const void*>(barrier_kernel<BarrierExchange::MulticastCount>),
       "multicast count (fan-out)"},
  };
  uint64_t launch = 0;
  // Shapes outer, exchanges inner: launches alternate between the two, which share
  // grid_arrived and grid_generation but count cross-PE progress apart.
  for (const Shape& shape : shapes)
    for (const Exchange& exchange : exchanges) {
      const int blocks = static_cast<int>(shape.grid.x * shape.grid.y * shape.grid.z);
      REQUIRE(blocks <= 16);
      REQUIRE(s.n * blocks <= kMaxSlots);
      const uint64_t rounds = std::max<uint64_t>(1, base_rounds / shape.rounds_divisor);
      const uint64_t seed = seed_for(40, 0, ++launch);
      ok &= GPU_TEST_CUDA(cudaMemset(results, 0, sizeof(BarrierResult) * 16));
      ok &= sync_and_barrier();
      const double t0 = MPI_Wtime();
      int full = shape.full_barrier;
      uint64_t* slots_arg = slots;
      uint64_t rounds_arg = rounds, seed_arg = seed;
      void* args[] = {
          const_cast<tmashmem_ctx_t*>(&ctx), &slots_arg, &rounds_arg, &seed_arg, &full, &results};
      ok &= GPU_TEST_CUDA(
          cudaLaunchCooperativeKernel(exchange.kernel, shape.grid, shape.block, args, 0, nullptr));
      ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
      const double seconds = MPI_Wtime() - t0;
      std::vector<BarrierResult> res(static_cast<size_t>(blocks));
      ok &= GPU_TEST_CUDA(cudaMemcpy(res.data(), results, sizeof(BarrierResult) * res.size(),
                                     cudaMemcpyDeviceToHost));
      for (int b = 0; b < blocks; ++b) {
        const BarrierResult& r = res[size_t(b)];
        if (r.status != static_cast<int>(Status::Ok) || r.rounds != rounds || r.bad != 0) {
          std::printf(
              "[PE %d] %s, %s: block %d: %llu of %llu rounds, status %s, %llu wrong values "
              "(first in round %llu, slot %d)\n",
              s.me, shape.what, exchange.what, b, r.rounds, (unsigned long long)rounds,
              tmashmem::status_name(static_cast<Status>(r.status)), r.bad, r.first_bad_round,
              r.first_bad_slot);
          ok = false;
        }
      }
      if (s.me == 0)
        std::printf("device barriers: %-45s %-26s %d PEs: %llu barriers in %.2f s (%.1f us each)\n",
                    shape.what, exchange.what, s.n, 2 * (unsigned long long)rounds, seconds,
                    seconds * 1e6 / double(2 * rounds));
      ok &= sync_and_barrier();
    }
  CHECK(all_ranks(ok));
  cudaFree(results);
  tmashmem_free(slots);
}
