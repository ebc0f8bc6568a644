// The collectives' device-callable forms inside user kernels, each on its own state:
//  - a test kernel that computes, runs allgather_block, computes on the gathered slice,
//    runs allreduce_block, and checks, on its own CollState (and in every third round the
//    low-latency forms on its own CollLl), for several rounds;
//  - tile steps: a TMA get/put all-gather and a TMA reduce into a rotating owner;
//  - low-latency steps across the end of the LL flags' period (2^31 epochs), on a state
//    whose slot counter the test sets near it and whose regions it fills with stale lines
//    that carry the flags of the steps after it: they must be zeroed in time.
// Every error records the first bad (round, step, index, expected, seen) on the GPU; the
// host prints it naming the PE (coll_failure.cuh).
#include <vector>

#include "coll_failure.cuh"
#include "collectives_ref.cuh"
#include "gpu_test_util.cuh"

using namespace gpu_test;
using namespace coll_test;

namespace {

constexpr int kDeviceCtas = 4;
constexpr uint32_t kScratch = 32 * 1024;  // four bulk issuers of 8 KiB (copy.cuh)

// Per round: x = f(round, me) (this CTA's slice), all-gather of x, y = sum_q (q + 1) x_q + me
// on this CTA's slice, all-reduce max of y, check. Rounds cycle through the direct forms
// with SM copies, with bulk copies, and the low-latency forms (on `ll`).
__global__ void compute_and_communicate(const __grid_constant__ tmashmem_ctx_t ctx,
                                        tmashmem::CollState st, tmashmem::CollLl ll, int32_t* x,
                                        int32_t* gathered, int32_t* y, int32_t* z, size_t count,
                                        int rounds, uint64_t base, uint64_t timeout_ns,
                                        Failure* f) {
  extern __shared__ uint8_t smem[];
  const tmashmem::CollScratch scratch{tmashmem::align_smem<16>(smem), kScratch};
  const int b = static_cast<int>(blockIdx.x), parts = static_cast<int>(gridDim.x);
  const int me = ctx.my_pe, n = ctx.n_pes;
  const tmashmem::CollSlice sl = tmashmem::coll_slice(count * 4, b, parts);
  const size_t lo = sl.offset / 4, hi = (sl.offset + sl.len) / 4;
  for (int r = 0; r < rounds; ++r) {
    const tmashmem::CollCopy how = r % 3 == 1 ? tmashmem::CollCopy::Bulk : tmashmem::CollCopy::Sm;
    const bool low_latency = r % 3 == 2;
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
      x[i] = value_i(round_seed(base, uint64_t(r), me), i);
    tmashmem::Status s =
        low_latency ? tmashmem::allgather_ll_block(ctx, ll, b, gathered, x, count * 4, b, parts,
                                                   timeout_ns, "test allgather_ll_block")
                    : tmashmem::allgather_block(ctx, st, b, gathered, x, count * 4, b, parts,
                                                tmashmem::CollMode::Push, how, scratch, timeout_ns,
                                                "test allgather_block");
    if (s != tmashmem::Status::Ok) {
      if (threadIdx.x == 0) record(f, uint64_t(r), 3, ~0ull, 0, static_cast<uint64_t>(s));
      return;
    }
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      uint32_t acc = static_cast<uint32_t>(me);
      for (int q = 0; q < n; ++q) {
        const uint32_t want = static_cast<uint32_t>(value_i(round_seed(base, uint64_t(r), q), i));
        const uint32_t seen = static_cast<uint32_t>(gathered[size_t(q) * count + i]);
        if (seen != want) record(f, uint64_t(r), 3, size_t(q) * count + i, want, seen);
        acc += uint32_t(q + 1) * seen;
      }
      y[i] = static_cast<int32_t>(acc);
    }
    if (low_latency)
      s = tmashmem::coll_reduce_ll_block<TMASHMEM_DTYPE_I32, tmashmem::RedOp::Max>(
          ctx, ll, b, z, y, count, 0, b, parts, timeout_ns, "test allreduce LL block");
    else
      s = tmashmem::allreduce_block<TMASHMEM_DTYPE_I32, tmashmem::RedOp::Max>(
          ctx, st, b, z, y, count, tmashmem::AllreduceAlgo::OneShot, b, parts, how, scratch,
          timeout_ns, "test allreduce_block");
    if (s != tmashmem::Status::Ok) {
      if (threadIdx.x == 0) record(f, uint64_t(r), 4, ~0ull, 0, static_cast<uint64_t>(s));
      return;
    }
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      uint32_t common = 0;
      for (int q = 0; q < n; ++q)
        common +=
            uint32_t(q + 1) * static_cast<uint32_t>(value_i(round_seed(base, uint64_t(r), q), i));
      int32_t want = static_cast<int32_t>(common);  // p = 0
      for (int p = 1; p < n; ++p) {
        const int32_t v = static_cast<int32_t>(common + uint32_t(p));
        want = v > want ? v : want;
      }
      if (z[i] != want) record(f, uint64_t(r), 4, i, uint32_t(want), uint32_t(z[i]));
    }
  }
}

}  // namespace

TEST_CASE("collectives: device building blocks between a kernel's own computations") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  const size_t count = 10000 + 7;
  auto* x = static_cast<int32_t*>(tmashmem_malloc(count * 4));
  auto* gathered = static_cast<int32_t*>(tmashmem_malloc(count * 4 * size_t(s.n)));
  auto* y = static_cast<int32_t*>(tmashmem_malloc(count * 4));
  auto* z = static_cast<int32_t*>(tmashmem_malloc(count * 4));
  void* state = tmashmem_calloc(1, tmashmem::coll_state_bytes(kDeviceCtas));
  // Each CTA's slice of x (and of y) is its piece for every peer.
  const size_t piece = tmashmem::coll_slice(count * 4, 0, kDeviceCtas).len;
  const size_t ll_bytes = tmashmem::coll_ll_state_bytes(kDeviceCtas, s.n, piece);
  void* ll_state = tmashmem_calloc(1, ll_bytes);
  REQUIRE(all_ranks(x && gathered && y && z && state && ll_state));
  const tmashmem_ctx_t ctx = s.ctx();
  const tmashmem::CollState st = tmashmem::coll_state(state, kDeviceCtas);
  const tmashmem::CollLl ll = tmashmem::coll_ll_state(ll_state, ll_bytes, kDeviceCtas, s.n);
  const int rounds = 20;
  bool ok = run_checked_kernel("device building blocks", [&](Failure* failure) {
    compute_and_communicate<<<kDeviceCtas, 256, kScratch + 16>>>(
        ctx, st, ll, x, gathered, y, z, count, rounds, seed_for(0xDE5, 0), kWaitNs, failure);
  });
  ok &= sync_and_barrier();
  tmashmem_free(ll_state);
  tmashmem_free(state);
  tmashmem_free(z);
  tmashmem_free(y);
  tmashmem_free(gathered);
  tmashmem_free(x);
  CHECK(all_ranks(ok));
}

namespace {

constexpr int kTileRows = 8, kTileCols = 64;  // one f32 tile: 8 rows of 256 bytes

__host__ __device__ inline float tile_value(uint64_t base, uint64_t round, int pe, int which,
                                            uint64_t i) {
  // Small integers: sums over up to 64 PEs are exact in f32, whatever the order.
  return static_cast<float>(
      static_cast<int>(hash32(round_seed(base, round * 2 + uint64_t(which), pe), i) % 64u) - 32);
}

// Per round, on one CTA and its own two slots: a tile all-gather (each PE's rows of `g`
// pulled with coll_tile_gather: TMA get from the peer, TMA put into this PE's tensor) and
// a tile reduce into a rotating owner's `r` (coll_tile_reduce<add>, TMA reduce), both
// synchronised by coll_exchange, then checked with ordinary loads.
__global__ void tile_collectives(const __grid_constant__ tmashmem_ctx_t ctx, tmashmem::CollState st,
                                 const __grid_constant__ tmashmem_tensor_handle_t g,
                                 const __grid_constant__ tmashmem_tensor_handle_t r, int rounds,
                                 uint64_t base, uint64_t timeout_ns, Failure* f) {
  __shared__ alignas(128) float tile[kTileRows * kTileCols];
  __shared__ tmashmem::Mbarrier bar;
  tmashmem::MbarrierPhase phase;
  const unsigned tid = threadIdx.x;
  const int me = ctx.my_pe, n = ctx.n_pes;
  if (tid == 0) {
    tmashmem::tma_acquire_tensor_maps(g);
    tmashmem::tma_acquire_tensor_maps(r);
    bar.init(1);
  }
  __syncthreads();
  float* gd = reinterpret_cast<float*>(g.data);
  float* rd = reinterpret_cast<float*>(r.data);
  const uint64_t peers = tmashmem::coll_all_peers(ctx);
  const int cells = kTileRows * kTileCols;
  for (int round = 0; round < rounds; ++round) {
    for (int i = static_cast<int>(tid); i < cells; i += blockDim.x)
      gd[size_t(me) * cells + size_t(i)] = tile_value(base, uint64_t(round), me, 0, uint64_t(i));
    int failed = 0;
    auto gather = [&] {
      if (tid == 0) {
        for (int k = 1; k < n; ++k) {
          const int q = tmashmem::coll_peer(ctx, k);
          if (tmashmem::coll_tile_gather(g, me, {0, q * kTileRows}, g, q, {0, q * kTileRows}, tile,
                                         bar, phase, timeout_ns) != tmashmem::Status::Ok)
            failed = 1;
        }
        tmashmem::coll_tile_complete();
      }
    };
    tmashmem::Status s = tmashmem::coll_exchange(
        ctx, st, 0, peers, peers, [] {}, gather, timeout_ns, "test tile all-gather");
    if (__syncthreads_or(failed) || s != tmashmem::Status::Ok) {
      if (tid == 0) record(f, uint64_t(round), 5, ~0ull, 0, 1);
      return;
    }
    for (int i = static_cast<int>(tid); i < n * cells; i += blockDim.x) {
      const float want = tile_value(base, uint64_t(round), i / cells, 0, uint64_t(i % cells));
      if (gd[i] != want)
        record(f, uint64_t(round), 5, uint64_t(i), uint64_t(int64_t(want)),
               uint64_t(int64_t(gd[i])));
    }
    const int owner = round % n;
    auto init = [&] {
      if (me != owner) return;
      for (int i = static_cast<int>(tid); i < cells; i += blockDim.x) rd[i] = 0.0f;
      tmashmem::fence_proxy_async_global();  // before the TMA reduces into it
    };
    auto reduce = [&] {
      for (int i = static_cast<int>(tid); i < cells; i += blockDim.x)
        tile[i] = tile_value(base, uint64_t(round), me, 1, uint64_t(i));
      tmashmem::fence_proxy_async_shared();
      __syncthreads();
      if (tid == 0) {
        tmashmem::coll_tile_reduce<tmashmem::TileReduceOp::add>(r, owner, {0, 0}, tile);
        tmashmem::coll_tile_complete();
      }
    };
    const uint64_t announce = me == owner ? peers : 0;
    const uint64_t visit = me == owner ? 0 : uint64_t(1) << owner;
    s = tmashmem::coll_exchange(ctx, st, 1, announce, visit, init, reduce, timeout_ns,
                                "test tile reduce");
    if (s != tmashmem::Status::Ok) {
      if (tid == 0) record(f, uint64_t(round), 6, ~0ull, 0, 2);
      return;
    }
    if (me == owner)
      for (int i = static_cast<int>(tid); i < cells; i += blockDim.x) {
        float want = 0;
        for (int q = 0; q < n; ++q) want += tile_value(base, uint64_t(round), q, 1, uint64_t(i));
        if (rd[i] != want)
          record(f, uint64_t(round), 6, uint64_t(i), uint64_t(int64_t(want)),
                 uint64_t(int64_t(rd[i])));
      }
  }
}

}  // namespace

TEST_CASE("collectives: tile steps (TMA get/put all-gather, TMA reduce into the owner)") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  tmashmem_tensor_desc_t dg, dr;
  const uint64_t gdims[2] = {kTileCols, uint64_t(kTileRows) * uint64_t(s.n)};
  const uint64_t rdims[2] = {kTileCols, kTileRows};
  const uint32_t box[2] = {kTileCols, kTileRows};
  bool ok = GPU_TEST_TM(tmashmem_tensor_desc_init(&dg, TMASHMEM_DTYPE_F32, 2, gdims, box));
  ok &= GPU_TEST_TM(tmashmem_tensor_desc_init(&dr, TMASHMEM_DTYPE_F32, 2, rdims, box));
  tmashmem_tensor_t tg = nullptr, tr = nullptr;
  ok &= GPU_TEST_TM(tmashmem_tensor_create(&dg, &tg));
  ok &= GPU_TEST_TM(tmashmem_tensor_create(&dr, &tr));
  void* state = tmashmem_calloc(1, tmashmem::coll_state_bytes(2));
  REQUIRE(all_ranks(ok && state != nullptr));
  tmashmem_tensor_handle_t hg, hr;
  ok &= GPU_TEST_TM(tmashmem_tensor_handle(tg, &hg));
  ok &= GPU_TEST_TM(tmashmem_tensor_handle(tr, &hr));
  ok &= run_checked_kernel("tile steps", [&](Failure* failure) {
    tile_collectives<<<1, 128>>>(s.ctx(), tmashmem::coll_state(state, 2), hg, hr, 20,
                                 seed_for(0x711E, 0), kWaitNs, failure);
  });
  ok &= sync_and_barrier();
  tmashmem_free(state);
  tmashmem_tensor_destroy(tr);
  tmashmem_tensor_destroy(tg);
  CHECK(all_ranks(ok));
}

namespace {

constexpr size_t kLlShort = 16, kLlLong = 8192;  // bytes per PE of the short and long steps
constexpr size_t kLlGuard = 256;                 // poisoned bytes after the gathered ones
constexpr uint8_t kLlPoison = 0xA5;

// Steps of one CTA on slot 0 of `ll`, of epochs first_epoch, first_epoch + 1, ... (the host
// set the slot's counter): an all-gather of kLlShort bytes per PE before epoch long_from,
// of kLlLong from it, fresh data every step, checked with the guard after it. Before every
// long step the last PE waits delay_ns, so that the others poll lines it has not written
// yet: a stale line with the step's flag would pass for its data then.
__global__ void ll_steps(const __grid_constant__ tmashmem_ctx_t ctx, tmashmem::CollLl ll,
                         uint8_t* src, uint8_t* dest, uint64_t first_epoch, uint64_t long_from,
                         int steps, uint64_t base, uint64_t delay_ns, uint64_t timeout_ns,
                         Failure* f) {
  const int me = ctx.my_pe, n = ctx.n_pes;
  const size_t span = size_t(n) * kLlLong + kLlGuard;
  for (int k = 0; k < steps; ++k) {
    const size_t bytes = first_epoch + uint64_t(k) < long_from ? kLlShort : kLlLong;
    const uint64_t seed = round_seed(base, uint64_t(k), me);
    for (size_t i = threadIdx.x; i < kLlLong; i += blockDim.x) src[i] = pattern_byte(seed, i);
    for (size_t i = threadIdx.x; i < span; i += blockDim.x) dest[i] = kLlPoison;
    if (bytes == kLlLong && me == n - 1 && threadIdx.x == 0) spin_ns(delay_ns);
    const tmashmem::Status s = tmashmem::allgather_ll_block(ctx, ll, 0, dest, src, bytes, 0, 1,
                                                            timeout_ns, "test LL step");
    if (s != tmashmem::Status::Ok) {
      if (threadIdx.x == 0) record(f, uint64_t(k), 7, ~0ull, 0, static_cast<uint64_t>(s));
      return;
    }
    for (size_t i = threadIdx.x; i < span; i += blockDim.x) {
      const uint8_t want =
          i < size_t(n) * bytes
              ? pattern_byte(round_seed(base, uint64_t(k), int(i / bytes)), i % bytes)
              : kLlPoison;
      if (dest[i] != want) record(f, uint64_t(k), 7, i, want, dest[i]);
    }
    __syncthreads();  // the checks read dest before the next step poisons it
  }
}

}  // namespace

TEST_CASE("collectives: low-latency steps across the end of the flags' period") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  const size_t state_bytes = tmashmem::coll_ll_state_bytes(1, s.n, kLlLong);
  void* state = tmashmem_calloc(1, state_bytes);
  auto* src = static_cast<uint8_t*>(tmashmem_malloc(kLlLong));
  auto* dest = static_cast<uint8_t*>(tmashmem_malloc(size_t(s.n) * kLlLong + kLlGuard));
  REQUIRE(all_ranks(state && src && dest));
  const tmashmem::CollLl ll = tmashmem::coll_ll_state(state, state_bytes, 1, s.n);
  // Epoch 2^32 ends a period (where the epoch's own low 32 bits, the flag before the
  // cleaning steps, would be 0): six short steps, the last two the cleaning steps (long
  // ones would overwrite every stale line themselves), then six long ones.
  const uint64_t end = uint64_t(1) << 32, first = end - 4, long_from = end + 2;
  const int steps = 12;
  REQUIRE(tmashmem::coll_ll_cleans(end));
  REQUIRE(tmashmem::coll_ll_cleans(end + 1));
  REQUIRE(!tmashmem::coll_ll_cleans(end - 1));
  REQUIRE(!tmashmem::coll_ll_cleans(end + 2));
  REQUIRE(tmashmem::coll_ll_flag(end + 2) ==
          tmashmem::coll_ll_flag(end + 2 + tmashmem::kCollLlFlagPeriod));
  // Every line of both parities' regions: junk under the flag of the first step after the
  // cleaning steps with that parity (epoch end + 2 + parity), as a line left from a step
  // 2^31 epochs earlier would carry it.
  const size_t region_words = ll.region_bytes / 8;
  std::vector<uint64_t> stale(2 * size_t(s.n) * region_words);
  for (size_t w = 0; w < stale.size(); ++w) {
    const uint64_t parity = w / region_words / size_t(s.n);
    const uint64_t flag = tmashmem::coll_ll_flag(end + 2 + parity);
    stale[w] = (flag << 32) | hash32(0x57A1E, w);
  }
  const uint64_t counter = first - 1;  // the slot's last epoch
  bool ok =
      GPU_TEST_CUDA(cudaMemcpy(ll.lines, stale.data(), stale.size() * 8, cudaMemcpyHostToDevice));
  ok &= GPU_TEST_CUDA(cudaMemcpy(ll.epochs, &counter, sizeof counter, cudaMemcpyHostToDevice));
  REQUIRE(all_ranks(ok));
  REQUIRE(all_ranks(sync_and_barrier()));
  ok = run_checked_kernel("low-latency steps across the flags' period", [&](Failure* failure) {
    ll_steps<<<1, 256>>>(s.ctx(), ll, src, dest, first, long_from, steps, seed_for(0xF1A6, 0),
                         100 * 1000, kWaitNs, failure);
  });
  uint64_t after = 0;
  ok &= GPU_TEST_CUDA(cudaMemcpy(&after, ll.epochs, sizeof after, cudaMemcpyDeviceToHost));
  if (after != first + steps - 1) {
    std::printf("[PE %d] the slot's counter is %llu after the steps; expected %llu\n", s.me,
                static_cast<unsigned long long>(after),
                static_cast<unsigned long long>(first + steps - 1));
    ok = false;
  }
  ok &= sync_and_barrier();
  tmashmem_free(dest);
  tmashmem_free(src);
  tmashmem_free(state);
  CHECK(all_ranks(ok));
}
