// The on-stream collectives under reuse and capture:
//  - 1,000 back-to-back calls (TMASHMEM_TEST_COLL_ROUNDS) of all-reduce, all-gather and
//    all-to-all on one stream, the data regenerated on the GPU before every call and
//    checked on the GPU after it, with no host synchronisation in between: a peer still
//    reading or writing a buffer after the call returned would show up as a wrong element;
//  - the same sequence captured into a CUDA graph and replayed with a new seed each time
//    (the seed is read from device memory when the graph runs);
//  - the same sequence between a user's kernels that use programmatic dependent launch: the
//    kernel before the collectives lets them be scheduled at its start and writes their
//    sources only after a delay, and the check after them is launched overlapped and waits
//    for them with cudaGridDependencySynchronize (docs/collectives.md, "Launch": what an
//    overlapped collective must see, and what a user's overlapped kernel must do).
// Every error records the first bad (round, step, index, expected, seen) on the GPU; the
// host prints it naming the PE (coll_failure.cuh). The device-callable forms:
// test_collectives_device.cu.

#include "coll_failure.cuh"
#include "collectives_ref.cuh"
#include "common/overlapped_launch.cuh"
#include "gpu_test_util.cuh"

using namespace gpu_test;
using namespace coll_test;

namespace {

// src of this PE for one round: `count` i32 values and `bytes` pattern bytes (a2a: n x).
// early_ns > 0: the kernel first lets the next one on the stream be scheduled (programmatic
// dependent launch), then spins that long before it writes: a collective that read its
// source before this grid had finished would see the previous round's data.
__global__ void generate(int32_t* ints, size_t count, uint8_t* bytes, size_t n_bytes,
                         const uint64_t* base, uint64_t round, int me, uint64_t early_ns = 0) {
  if (early_ns > 0) {
    cudaTriggerProgrammaticLaunchCompletion();
    spin_ns(early_ns);
  }
  const uint64_t s = round_seed(*base, round, me);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count || i < n_bytes;
       i += size_t(gridDim.x) * blockDim.x) {
    if (i < count) ints[i] = value_i(s, i);
    if (i < n_bytes) bytes[i] = pattern_byte(s, i);
  }
}

// Launched overlapped (check_overlapped) it may start before the collectives before it have
// finished: it waits for them first, as every overlapped kernel must.
__global__ void check(const int32_t* sum, size_t count, const uint8_t* gathered, size_t ag_bytes,
                      const uint8_t* a2a, size_t a2a_bytes, const uint64_t* base, uint64_t round,
                      int me, int n, Failure* f) {
  cudaGridDependencySynchronize();  // a no-op where the launch was not overlapped
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
  // early_ns > 0: the round's last generate lets the collectives be scheduled early (see
  // generate), and the check is launched overlapped with them.
  bool enqueue(cudaStream_t stream, uint64_t round, int algo, uint64_t early_ns = 0) {
    size_t a2a_total = a2a_bytes * size_t(n);
    generate<<<8, 256, 0, stream>>>(nullptr, 0, a2a_src, a2a_total, base, round, me);
    generate<<<8, 256, 0, stream>>>(ints, count, ag_src, ag_bytes, base, round, me, early_ns);
    bool ok = GPU_TEST_CUDA(cudaGetLastError());
    ok &= GPU_TEST_TM(tmashmem_allreduce_on_stream(sum, ints, count, TMASHMEM_DTYPE_I32,
                                                   TMASHMEM_REDUCE_SUM, algo, 0, stream));
    ok &= GPU_TEST_TM(tmashmem_allgather_on_stream(ag_dst, ag_src, ag_bytes, 2, stream));
    ok &= GPU_TEST_TM(tmashmem_alltoall_on_stream(a2a_dst, a2a_src, a2a_bytes, 0, stream));
    if (early_ns > 0) return ok && check_overlapped(stream, round);
    check<<<8, 256, 0, stream>>>(sum, count, ag_dst, ag_bytes, a2a_dst, a2a_bytes, base, round, me,
                                 n, failure);
    return ok && GPU_TEST_CUDA(cudaGetLastError());
  }

  // The check, launched with programmatic stream serialization.
  bool check_overlapped(cudaStream_t stream, uint64_t round) {
    return GPU_TEST_CUDA(tmashmem_test::launch_overlapped(
        check, dim3(8), dim3(256), 0, stream, static_cast<const int32_t*>(sum), count,
        static_cast<const uint8_t*>(ag_dst), ag_bytes, static_cast<const uint8_t*>(a2a_dst),
        a2a_bytes, static_cast<const uint64_t*>(base), round, me, n, failure));
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

TEST_CASE(
    "collectives: between a user's kernels with programmatic dependent launch, the one before "
    "writing their sources late and the one after launched overlapped") {
  StressFixture f;
  REQUIRE(f.ready);
  Stress& t = f.t;
  const uint64_t base = seed_for(0x9D1A, 0);
  bool ok = GPU_TEST_CUDA(cudaMemcpy(t.base, &base, sizeof base, cudaMemcpyHostToDevice));
  // 20 us: several collectives' launch latencies, so an early read would see old data.
  const uint64_t rounds = env_count("TMASHMEM_TEST_COLL_ROUNDS", 1000) / 5, early_ns = 20000;
  for (uint64_t r = 0; r < rounds && ok; ++r)
    ok &= t.enqueue(f.stream, r, 1 + static_cast<int>(r % 2), early_ns);
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(f.stream));
  ok &= t.result("overlapped with the user's kernels");
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
