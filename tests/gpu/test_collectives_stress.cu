// The collectives under reuse and capture, and their device-callable form:
//  - 1,000 back-to-back calls (TMASHMEM_TEST_COLL_ROUNDS) of all-reduce, all-gather and
//    all-to-all on one stream, the data regenerated on the GPU before every call and
//    checked on the GPU after it, with no host synchronisation in between: a peer still
//    reading or writing a buffer after the call returned would show up as a wrong element;
//  - the same sequence captured into a CUDA graph and replayed with a new seed each time
//    (the seed is read from device memory when the graph runs);
//  - a test kernel that computes, runs allgather_block, computes on the gathered slice,
//    runs allreduce_block, and checks, on its own CollState (and in every third round the
//    low-latency forms on its own CollLl), for several rounds.
// Every error records the first bad (round, step, index, expected, seen) on the GPU; the
// host prints it naming the PE.
#include <string>
#include <vector>

#include "collectives_ref.cuh"
#include "gpu_test_util.cuh"

using namespace gpu_test;
using namespace coll_test;

namespace {

// The first wrong element seen by a check kernel.
struct Failure {
  unsigned long long count;
  unsigned long long round, step, index, expected, seen;
};

__device__ void record(Failure* f, uint64_t round, int step, uint64_t index, uint64_t expected,
                       uint64_t seen) {
  if (atomicAdd(&f->count, 1ull) == 0) {
    f->round = round;
    f->step = static_cast<unsigned long long>(step);
    f->index = index;
    f->expected = expected;
    f->seen = seen;
  }
}

const char* step_name(unsigned long long step) {
  static const char* const names[] = {
      "allreduce i32 sum",          "allgather bytes", "alltoall bytes", "device allgather_block",
      "device allreduce_block max", "tile all-gather", "tile reduce"};
  return step < 7 ? names[step] : "?";
}

bool report(const Failure& f, const char* what) {
  if (f.count == 0) return true;
  std::printf(
      "[PE %d] %s: %llu wrong elements; first in round %llu, %s, index %llu: expected %llu, "
      "seen %llu\n",
      mpi_rank(), what, f.count, f.round, step_name(f.step), f.index, f.expected, f.seen);
  return false;
}

// Launches a checking kernel with `launch(failure)` (a zeroed device Failure it fills),
// waits for it and reports what it found as `what`.
template <class Launch>
bool run_checked_kernel(const char* what, Launch launch) {
  Failure* failure = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&failure, sizeof(Failure)));
  ok = ok && GPU_TEST_CUDA(cudaMemset(failure, 0, sizeof(Failure)));
  if (!ok) return false;
  launch(failure);
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
  Failure f{};
  ok &= GPU_TEST_CUDA(cudaMemcpy(&f, failure, sizeof f, cudaMemcpyDeviceToHost));
  ok &= report(f, what);
  cudaFree(failure);
  return ok;
}

// The seed of (round, pe): a function of a base read from device memory at run time.
__host__ __device__ inline uint64_t round_seed(uint64_t base, uint64_t round, int pe) {
  return mix64(base ^ mix64(round * 1000003ull + uint64_t(pe)));
}

// src of this PE for one round: `count` i32 values and `bytes` pattern bytes (a2a: n x).
__global__ void generate(int32_t* ints, size_t count, uint8_t* bytes, size_t n_bytes,
                         const uint64_t* base, uint64_t round, int me) {
  const uint64_t s = round_seed(*base, round, me);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count || i < n_bytes;
       i += size_t(gridDim.x) * blockDim.x) {
    if (i < count) ints[i] = value_i(s, i);
    if (i < n_bytes) bytes[i] = pattern_byte(s, i);
  }
}

__global__ void check(const int32_t* sum, size_t count, const uint8_t* gathered, size_t ag_bytes,
                      const uint8_t* a2a, size_t a2a_bytes, const uint64_t* base, uint64_t round,
                      int me, int n, Failure* f) {
  const uint64_t b = *base;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t want = 0;
    for (int q = 0; q < n; ++q) want += static_cast<uint32_t>(value_i(round_seed(b, round, q), i));
    if (static_cast<uint32_t>(sum[i]) != want) record(f, round, 0, i, want, uint32_t(sum[i]));
  }
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < ag_bytes * size_t(n);
       i += size_t(gridDim.x) * blockDim.x) {
    const int q = static_cast<int>(i / ag_bytes);
    const uint8_t want = pattern_byte(round_seed(b, round, q), i % ag_bytes);
    if (gathered[i] != want) record(f, round, 1, i, want, gathered[i]);
  }
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < a2a_bytes * size_t(n);
       i += size_t(gridDim.x) * blockDim.x) {
    const int p = static_cast<int>(i / a2a_bytes);  // the sender
    const uint8_t want =
        pattern_byte(round_seed(b, round, p), size_t(me) * a2a_bytes + i % a2a_bytes);
    if (a2a[i] != want) record(f, round, 2, i, want, a2a[i]);
  }
}

struct Stress {
  int32_t* ints = nullptr;
  int32_t* sum = nullptr;
  uint8_t* ag_src = nullptr;
  uint8_t* ag_dst = nullptr;
  uint8_t* a2a_src = nullptr;
  uint8_t* a2a_dst = nullptr;
  uint64_t* base = nullptr;  // device memory: the seed base of the running rounds
  Failure* failure = nullptr;
  size_t count = 4096 + 3, ag_bytes = 1000, a2a_bytes = 777;
  int me = 0, n = 1;

  bool alloc(int me_, int n_) {
    me = me_, n = n_;
    ints = static_cast<int32_t*>(tmashmem_malloc(count * 4));
    sum = static_cast<int32_t*>(tmashmem_malloc(count * 4));
    ag_src = static_cast<uint8_t*>(tmashmem_malloc(ag_bytes));
    ag_dst = static_cast<uint8_t*>(tmashmem_malloc(ag_bytes * size_t(n)));
    a2a_src = static_cast<uint8_t*>(tmashmem_malloc(a2a_bytes * size_t(n)));
    a2a_dst = static_cast<uint8_t*>(tmashmem_malloc(a2a_bytes * size_t(n)));
    bool ok = ints && sum && ag_src && ag_dst && a2a_src && a2a_dst;
    ok &= GPU_TEST_CUDA(cudaMalloc(&base, sizeof(uint64_t)));
    ok &= GPU_TEST_CUDA(cudaMalloc(&failure, sizeof(Failure)));
    ok &= GPU_TEST_CUDA(cudaMemset(failure, 0, sizeof(Failure)));
    return ok;
  }
  void release() {
    cudaFree(base);
    cudaFree(failure);
    for (void* p :
         {static_cast<void*>(a2a_dst), static_cast<void*>(a2a_src), static_cast<void*>(ag_dst),
          static_cast<void*>(ag_src), static_cast<void*>(sum), static_cast<void*>(ints)})
      tmashmem_free(p);
  }

  // One round on `stream`: generate, the three collectives, check. `algo` alternates.
  bool enqueue(cudaStream_t stream, uint64_t round, int algo) {
    size_t a2a_total = a2a_bytes * size_t(n);
    generate<<<8, 256, 0, stream>>>(ints, count, ag_src, ag_bytes, base, round, me);
    generate<<<8, 256, 0, stream>>>(nullptr, 0, a2a_src, a2a_total, base, round, me);
    bool ok = GPU_TEST_CUDA(cudaGetLastError());
    ok &= GPU_TEST_TM(tmashmem_allreduce_on_stream(sum, ints, count, TMASHMEM_DTYPE_I32,
                                                   TMASHMEM_REDUCE_SUM, algo, 0, stream));
    ok &= GPU_TEST_TM(tmashmem_allgather_on_stream(ag_dst, ag_src, ag_bytes, 2, stream));
    ok &= GPU_TEST_TM(tmashmem_alltoall_on_stream(a2a_dst, a2a_src, a2a_bytes, 0, stream));
    check<<<8, 256, 0, stream>>>(sum, count, ag_dst, ag_bytes, a2a_dst, a2a_bytes, base, round, me,
                                 n, failure);
    return ok && GPU_TEST_CUDA(cudaGetLastError());
  }

  bool result(const char* what) {
    Failure f{};
    bool ok = GPU_TEST_CUDA(cudaMemcpy(&f, failure, sizeof f, cudaMemcpyDeviceToHost));
    return ok && report(f, what);
  }
};

}  // namespace

// A Stress set-up with its own stream (collective; `ready` agrees on every PE).
struct StressFixture {
  Session s;
  Stress t;
  cudaStream_t stream = nullptr;
  bool ready = false;
  StressFixture() {
    if (!all_ranks(s.ok) || !all_ranks(t.alloc(s.me, s.n))) return;
    ready = all_ranks(GPU_TEST_CUDA(cudaStreamCreate(&stream)));
  }
  // The end of a case (collective): the stream, a barrier, the buffers; `ok` and the barrier.
  bool finish(bool ok) {
    cudaStreamDestroy(stream);
    ok &= sync_and_barrier();
    t.release();
    return ok;
  }
};

TEST_CASE("collectives: 1,000 back-to-back calls with data changing every call") {
  StressFixture f;
  REQUIRE(f.ready);
  Stress& t = f.t;
  const uint64_t base = seed_for(0x57E55, 0);
  bool ok = GPU_TEST_CUDA(cudaMemcpy(t.base, &base, sizeof base, cudaMemcpyHostToDevice));
  const uint64_t rounds = env_count("TMASHMEM_TEST_COLL_ROUNDS", 1000);
  for (uint64_t r = 0; r < rounds && ok; ++r)
    ok &= t.enqueue(f.stream, r, 1 + static_cast<int>(r % 2));  // one-shot, two-shot, ...
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(f.stream));
  ok &= t.result("back-to-back");
  CHECK(all_ranks(f.finish(ok)));
}

TEST_CASE("collectives: captured into a CUDA graph and replayed with new data") {
  StressFixture f;
  REQUIRE(f.ready);
  Stress& t = f.t;
  cudaStream_t stream = f.stream;
  // Two rounds per graph (round numbers 0 and 1, both algorithms); the base changes per replay.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool ok = GPU_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  ok &= t.enqueue(stream, 0, TMASHMEM_ALLREDUCE_ONE_SHOT);
  ok &= t.enqueue(stream, 1, TMASHMEM_ALLREDUCE_TWO_SHOT);
  ok &= GPU_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  REQUIRE(all_ranks(ok));
  ok &= GPU_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  const int replays = 50;
  for (int r = 0; r < replays && ok; ++r) {
    const uint64_t base = seed_for(0x6A4F, 0, uint64_t(r));
    // Pageable host memory: cudaMemcpyAsync returns once the value is staged, so the
    // local variable may go out of scope.
    ok &=
        GPU_TEST_CUDA(cudaMemcpyAsync(t.base, &base, sizeof base, cudaMemcpyHostToDevice, stream));
    ok &= GPU_TEST_CUDA(cudaGraphLaunch(exec, stream));
  }
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
  ok &= t.result("graph replay");
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  CHECK(all_ranks(f.finish(ok)));
}

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
