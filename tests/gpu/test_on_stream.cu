// On-stream operations (tmashmem.h, "On-stream operations"): argument checks with
// clear errors; put/get through the copy engine at odd sizes and misaligned
// offsets with guards; signals and barriers in stream order; the whole sequence
// captured into a CUDA graph and replayed with new data each time; the on-stream
// barrier interleaved with device barriers (they share the signal pad's counters).
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_util.cuh"

using namespace gpu_test;
using tmashmem::Status;

namespace {

constexpr size_t kGuard = 64;

// dst[i] = pattern_byte(*seed ^ salt, i): the seed is read when the kernel runs, so a
// captured graph generates new data on every replay.
__global__ void fill_from_seed_kernel(uint8_t* dst, size_t bytes, const uint64_t* seed,
                                      uint64_t salt) {
  const uint64_t s = *seed ^ salt;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < bytes;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = pattern_byte(s, i);
}

__global__ void sync_all_kernel(const __grid_constant__ tmashmem_ctx_t ctx, int rounds,
                                int* status) {
  Status st = Status::Ok;
  for (int r = 0; r < rounds && st == Status::Ok; ++r) st = tmashmem::sync_all(ctx, kWaitNs);
  if (threadIdx.x == 0 && blockIdx.x == 0) *status = static_cast<int>(st);
}

bool expect_error(tmashmem_status_t got, tmashmem_status_t want, const char* call,
                  const char* must_mention) {
  const std::string message = tmashmem_last_error();
  if (got == want && message.find(must_mention) != std::string::npos) return true;
  std::printf("[PE %d] %s returned %s (%d), expected %s; message: \"%s\" (should mention \"%s\")\n",
              mpi_rank(), call, tmashmem_error_string(got), got, tmashmem_error_string(want),
              message.c_str(), must_mention);
  return false;
}

// Compares [0, span) of `got` with background `bg` except [offset, offset + bytes),
// which must hold pattern `data` from `data_base`.
bool check_bytes(const std::vector<uint8_t>& got, uint64_t bg, size_t offset, size_t bytes,
                 uint64_t data, size_t data_base, const char* what) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool inside = i >= offset && i < offset + bytes;
    const uint8_t want =
        inside ? pattern_byte(data, data_base + (i - offset)) : pattern_byte(bg, i);
    if (got[i] != want && bad++ < 3)
      std::printf("[PE %d] %s: %s byte %zu is 0x%02x, expected 0x%02x\n", mpi_rank(), what,
                  inside ? "data" : "guard", i, got[i], want);
  }
  if (bad) std::printf("[PE %d] %s: %zu wrong bytes\n", mpi_rank(), what, bad);
  return bad == 0;
}

}  // namespace

TEST_CASE("on-stream ops: argument errors name the problem, before and after init") {
  uint64_t dummy[2] = {0, 0};
  bool ok = true;
  ok &= expect_error(tmashmem_barrier_all_on_stream(nullptr), TMASHMEM_ERROR_NOT_INITIALIZED,
                     "barrier_all_on_stream before init", "tmashmem_init");
  ok &=
      expect_error(tmashmem_putmem_on_stream(dummy, dummy, 8, 0, nullptr),
                   TMASHMEM_ERROR_NOT_INITIALIZED, "putmem_on_stream before init", "tmashmem_init");
  ok &= expect_error(tmashmem_signal_op_on_stream(dummy, 1, TMASHMEM_SIGNAL_SET, 0, nullptr),
                     TMASHMEM_ERROR_NOT_INITIALIZED, "signal_op_on_stream before init",
                     "tmashmem_init");
  {
    Session s;
    REQUIRE(all_ranks(s.ok));
    auto* sym = static_cast<uint64_t*>(tmashmem_malloc(4096));
    REQUIRE(all_ranks(sym != nullptr));
    uint64_t* local = nullptr;
    ok &= GPU_TEST_CUDA(cudaMalloc(&local, 4096));
    ok &=
        expect_error(tmashmem_putmem_on_stream(sym, local, 64, s.n, nullptr),
                     TMASHMEM_ERROR_INVALID_VALUE, "putmem_on_stream(pe = n_pes)", "out of range");
    ok &= expect_error(tmashmem_getmem_on_stream(local, sym, 64, -1, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "getmem_on_stream(pe = -1)", "out of range");
    ok &= expect_error(tmashmem_putmem_on_stream(local, sym, 64, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "putmem_on_stream(dest not symmetric)",
                       "symmetric heap");
    ok &= expect_error(tmashmem_putmem_on_stream(sym, nullptr, 64, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "putmem_on_stream(src NULL)", "src");
    ok &= expect_error(tmashmem_getmem_on_stream(nullptr, sym, 64, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "getmem_on_stream(dest NULL)", "dest");
    ok &= expect_error(tmashmem_putmem_on_stream(sym, local, size_t(1) << 50, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "putmem_on_stream(past the heap)",
                       "symmetric heap");
    ok &= GPU_TEST_TM(tmashmem_putmem_on_stream(sym, nullptr, 0, 0, nullptr));  // 0 bytes: no-op
    ok &= expect_error(
        tmashmem_signal_op_on_stream(reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(sym) + 4),
                                     1, TMASHMEM_SIGNAL_SET, 0, nullptr),
        TMASHMEM_ERROR_INVALID_VALUE, "signal_op_on_stream(misaligned)", "aligned");
    ok &= expect_error(tmashmem_signal_op_on_stream(sym, 1, 7, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "signal_op_on_stream(op 7)",
                       "TMASHMEM_SIGNAL_SET");
    ok &= expect_error(tmashmem_signal_op_on_stream(local, 1, TMASHMEM_SIGNAL_ADD, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "signal_op_on_stream(sig not symmetric)",
                       "symmetric heap");
    ok &= expect_error(tmashmem_signal_wait_until_on_stream(sym, 9, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "signal_wait_until_on_stream(cmp 9)",
                       "TMASHMEM_CMP_EQ");
    ok &= expect_error(tmashmem_signal_wait_until_on_stream(nullptr, TMASHMEM_CMP_EQ, 0, nullptr),
                       TMASHMEM_ERROR_INVALID_VALUE, "signal_wait_until_on_stream(NULL)", "NULL");
    cudaFree(local);
    ok &= sync_and_barrier();
    tmashmem_free(sym);
  }
  CHECK(all_ranks(ok));
}

TEST_CASE(
    "on-stream put, get, signals and barrier in stream order: odd sizes, misaligned, guarded") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  const size_t span = (size_t(64) << 20) + 2 * kGuard + 32;
  auto* sym_dst = static_cast<uint8_t*>(tmashmem_malloc(span));
  auto* sym_src = static_cast<uint8_t*>(tmashmem_malloc(span));
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(1, sizeof(uint64_t)));
  REQUIRE(all_ranks(sym_dst != nullptr && sym_src != nullptr && sig != nullptr));
  uint8_t* local = nullptr;
  cudaStream_t stream = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&local, span)) &&
            GPU_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  REQUIRE(all_ranks(ok));
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  const size_t shapes[][3] = {{0, 0, 1},
                              {1, 0, 2},
                              {3, 5, 4099},
                              {16, 7, 65536},
                              {0, 0, size_t(1) << 20},
                              {5, 11, (size_t(1) << 20) + 7},
                              {0, 3, size_t(64) << 20}};
  uint64_t round = 0;
  for (const auto& shape : shapes) {
    const size_t so = shape[0], dof = shape[1], bytes = shape[2];
    ++round;
    const uint64_t data = seed_for(50, s.me, round), bg = seed_for(51, s.me, round);
    const uint64_t bg_get = seed_for(52, s.me, round);
    ok &= GPU_TEST_CUDA(fill_pattern(sym_src, span, data, 0, stream));
    ok &= GPU_TEST_CUDA(fill_pattern(sym_dst, span, bg, 0, stream));
    ok &= GPU_TEST_CUDA(fill_pattern(local, span, bg_get, 0, stream));
    // Everything below is stream-ordered; the host only waits at the end.
    ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(stream));
    ok &= GPU_TEST_TM(
        tmashmem_putmem_on_stream(sym_dst + kGuard + dof, sym_src + so, bytes, next, stream));
    ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig, round, TMASHMEM_SIGNAL_SET, next, stream));
    ok &= GPU_TEST_TM(tmashmem_signal_wait_until_on_stream(sig, TMASHMEM_CMP_EQ, round, stream));
    ok &= GPU_TEST_TM(
        tmashmem_getmem_on_stream(local + kGuard + dof, sym_src + so, bytes, prev, stream));
    ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(stream));
    ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
    const size_t checked = kGuard + dof + bytes + kGuard;
    std::vector<uint8_t> got(checked);
    ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), sym_dst, checked, cudaMemcpyDeviceToHost));
    ok &= check_bytes(got, bg, kGuard + dof, bytes, seed_for(50, prev, round), so,
                      "putmem_on_stream");
    ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), local, checked, cudaMemcpyDeviceToHost));
    ok &= check_bytes(got, bg_get, kGuard + dof, bytes, seed_for(50, prev, round), so,
                      "getmem_on_stream");
  }
  CHECK(all_ranks(ok));
  ok &= sync_and_barrier();
  cudaStreamDestroy(stream);
  cudaFree(local);
  tmashmem_free(sig);
  tmashmem_free(sym_src);
  tmashmem_free(sym_dst);
}

TEST_CASE("on-stream ops inside a captured CUDA graph, replayed with new data") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  const size_t bytes = (size_t(1) << 20) + 13, so = 3, dof = 9;
  const size_t span = bytes + 2 * kGuard + 32;
  auto* sym_dst = static_cast<uint8_t*>(tmashmem_malloc(span));
  auto* sym_src = static_cast<uint8_t*>(tmashmem_malloc(span));
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(1, sizeof(uint64_t)));
  REQUIRE(all_ranks(sym_dst != nullptr && sym_src != nullptr && sig != nullptr));
  uint8_t* local = nullptr;
  uint64_t* seed = nullptr;
  cudaStream_t stream = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&local, span)) && GPU_TEST_CUDA(cudaMalloc(&seed, 8)) &&
            GPU_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  REQUIRE(all_ranks(ok));
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  const uint64_t salt_me = mix64(uint64_t(s.me) + 1), salt_prev = mix64(uint64_t(prev) + 1);

  // Capture: new data, barrier, put to the next PE + signal it, wait for the
  // previous PE's signal and reset it, get the previous PE's data, barrier.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ok &= GPU_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  fill_from_seed_kernel<<<64, 256, 0, stream>>>(sym_src, span, seed, salt_me);
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(stream));
  ok &= GPU_TEST_TM(
      tmashmem_putmem_on_stream(sym_dst + kGuard + dof, sym_src + so, bytes, next, stream));
  ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig, 1, TMASHMEM_SIGNAL_ADD, next, stream));
  ok &= GPU_TEST_TM(tmashmem_signal_wait_until_on_stream(sig, TMASHMEM_CMP_EQ, 1, stream));
  ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig, 0, TMASHMEM_SIGNAL_SET, s.me, stream));
  ok &= GPU_TEST_TM(
      tmashmem_getmem_on_stream(local + kGuard + dof, sym_src + so, bytes, prev, stream));
  ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(stream));
  ok &= GPU_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  ok &= ok && GPU_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  REQUIRE(all_ranks(ok));

  for (uint64_t replay = 1; replay <= 20; ++replay) {
    const uint64_t seed_value = seed_for(60, 0, replay);
    const uint64_t bg = seed_for(61, s.me, replay), bg_get = seed_for(62, s.me, replay);
    ok &= GPU_TEST_CUDA(cudaMemcpyAsync(seed, &seed_value, 8, cudaMemcpyHostToDevice, stream));
    ok &= GPU_TEST_CUDA(fill_pattern(sym_dst, span, bg, 0, stream));
    ok &= GPU_TEST_CUDA(fill_pattern(local, span, bg_get, 0, stream));
    ok &= GPU_TEST_CUDA(cudaGraphLaunch(exec, stream));
    ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
    std::vector<uint8_t> got(span);
    char what[64];
    std::snprintf(what, sizeof what, "graph replay %llu: put", (unsigned long long)replay);
    ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), sym_dst, span, cudaMemcpyDeviceToHost));
    ok &= check_bytes(got, bg, kGuard + dof, bytes, seed_value ^ salt_prev, so, what);
    std::snprintf(what, sizeof what, "graph replay %llu: get", (unsigned long long)replay);
    ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), local, span, cudaMemcpyDeviceToHost));
    ok &= check_bytes(got, bg_get, kGuard + dof, bytes, seed_value ^ salt_prev, so, what);
    uint64_t sig_now = 99;
    ok &= GPU_TEST_CUDA(cudaMemcpy(&sig_now, sig, 8, cudaMemcpyDeviceToHost));
    if (sig_now != 0) {
      std::printf("[PE %d] replay %llu: signal is %llu after the reset\n", s.me,
                  (unsigned long long)replay, (unsigned long long)sig_now);
      ok = false;
    }
    // The next replay's first kernel rewrites sym_src, which a peer may still be
    // reading until every PE passed this replay's last barrier: the graph's own
    // closing barrier orders that.
  }
  CHECK(all_ranks(ok));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  ok &= sync_and_barrier();
  cudaStreamDestroy(stream);
  cudaFree(seed);
  cudaFree(local);
  tmashmem_free(sig);
  tmashmem_free(sym_src);
  tmashmem_free(sym_dst);
}

TEST_CASE("on-stream barrier interleaved with device barriers: shared counters stay consistent") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  int* status = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&status, sizeof(int) * 64));
  REQUIRE(all_ranks(ok));
  tmashmem_ctx_t ctx = s.ctx();
  for (int i = 0; i < 50; ++i) {
    // A device barrier kernel (i % 3 + 1 rounds, 2 blocks), then i % 2 + 1 on-stream barriers.
    int rounds = i % 3 + 1;
    int* out = status + i;
    void* args[] = {&ctx, &rounds, &out};
    ok &= GPU_TEST_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(sync_all_kernel),
                                                    dim3(2), dim3(64), args, 0, nullptr));
    for (int j = 0; j <= i % 2; ++j) ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(nullptr));
  }
  ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
  std::vector<int> got(50);
  ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), status, sizeof(int) * 50, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 50; ++i)
    if (got[size_t(i)] != static_cast<int>(Status::Ok)) {
      std::printf("[PE %d] device barrier kernel %d: status %d\n", s.me, i, got[size_t(i)]);
      ok = false;
    }
  CHECK(all_ranks(ok));
  cudaFree(status);
}
