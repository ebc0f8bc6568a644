// Each on-stream call reports only its own CUDA outcome (tmashmem.h, "On-stream
// operations"): an on-stream call that CUDA rejects leaves an error pending in the library's
// CUDA runtime; the next on-stream signal ADD must still return success, and the signal must
// have changed exactly once (a user who retried a failed ADD would add twice).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_test_util.cuh"

using namespace gpu_test;

namespace {

// Makes CUDA reject an on-stream put whose arguments pass the host checks. Tried in turn
// until one is rejected (on the H200 with CUDA 13.0, a pageable source inside a capture and
// the legacy stream beside a capturing non-blocking stream were both accepted): (0) the put on the
// legacy stream while a blocking stream captures (an implicit dependency on a capturing stream);
// (1) the put on a stream whose capture this program's own runtime invalidated (the same implicit
// dependency, made by a cudaMemsetAsync); (2) a pageable source inside a capture. Returns the put's
// status; *how says which.
tmashmem_status_t rejected_put(uint8_t* sym, const uint8_t* device_src, uint8_t* scratch, int pe,
                               const char** how) {
  static std::vector<uint8_t> pageable(4096, 0x5A);
  cudaStream_t cap = nullptr;  // blocking: the legacy stream synchronises with it
  if (cudaStreamCreate(&cap) != cudaSuccess) return TMASHMEM_SUCCESS;
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  for (int attempt = 0; attempt < 3 && st == TMASHMEM_SUCCESS; ++attempt) {
    if (cudaStreamBeginCapture(cap, cudaStreamCaptureModeRelaxed) != cudaSuccess) break;
    if (attempt == 0) {
      *how = "the legacy stream while a blocking stream captures";
      st = tmashmem_putmem_on_stream(sym, device_src, 64, pe, cudaStreamLegacy);
    } else if (attempt == 1) {
      *how = "a stream whose capture was invalidated";
      (void)cudaMemsetAsync(scratch, 0, 64, cudaStreamLegacy);  // invalidates cap's capture
      st = tmashmem_putmem_on_stream(sym, device_src, 64, pe, cap);
    } else {
      *how = "a pageable source inside a capture";
      st = tmashmem_putmem_on_stream(sym, pageable.data(), pageable.size(), pe, cap);
    }
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(cap, &graph);  // after a rejection: an error, and no graph
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // this program's runtime; the library's keeps its own
  }
  cudaStreamSynchronize(cap);
  cudaStreamDestroy(cap);
  (void)cudaGetLastError();
  return st;
}

uint64_t read_own(const uint64_t* sig) {
  uint64_t v = ~uint64_t(0);
  GPU_TEST_CUDA(cudaMemcpy(&v, sig, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace

TEST_CASE("on-stream: after a call CUDA rejects, a signal ADD succeeds and adds exactly once") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* sig = static_cast<uint64_t*>(tmashmem_malloc(sizeof(uint64_t)));
  auto* sym = static_cast<uint8_t*>(tmashmem_malloc(4096));
  REQUIRE(all_ranks(sig != nullptr && sym != nullptr));
  uint8_t *device_src = nullptr, *scratch = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&device_src, 4096));
  ok &= GPU_TEST_CUDA(cudaMalloc(&scratch, 4096));
  ok &= GPU_TEST_CUDA(cudaMemset(sig, 0, sizeof(uint64_t)));
  cudaStream_t stream = nullptr;
  ok &= GPU_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ok &= sync_and_barrier();
  REQUIRE(all_ranks(ok));

  const int next = (s.me + 1) % s.n;
  const uint64_t adds[2] = {5, 7};
  uint64_t expected = 0;
  for (int round = 0; round < 2; ++round) {
    const char* how = "";
    const tmashmem_status_t put = rejected_put(sym, device_src, scratch, s.me, &how);
    if (put != TMASHMEM_ERROR_CUDA) {
      ok = false;
      std::printf("[PE %d] round %d: expected CUDA to reject the put (%s), got %s: %s\n", s.me,
                  round, how, tmashmem_error_string(put), tmashmem_last_error());
    } else if (round == 0 && s.me == 0) {
      std::printf("[PE %d] rejected (%s): %s\n", s.me, how, tmashmem_last_error());
    }
    // The ADD's own outcome is success; the put's pending error is not reported again.
    const tmashmem_status_t add =
        tmashmem_signal_op_on_stream(sig, adds[round], TMASHMEM_SIGNAL_ADD, next, stream);
    if (add != TMASHMEM_SUCCESS) {
      ok = false;
      std::printf("[PE %d] round %d: signal ADD after the rejected put returned %s: %s\n", s.me,
                  round, tmashmem_error_string(add), tmashmem_last_error());
    }
    ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
    ok &= sync_and_barrier();
    expected += adds[round];
    const uint64_t seen = read_own(sig);
    if (seen != expected) {
      ok = false;
      std::printf("[PE %d] round %d: signal is %llu, expected %llu (one ADD of %llu per round)\n",
                  s.me, round, static_cast<unsigned long long>(seen),
                  static_cast<unsigned long long>(expected),
                  static_cast<unsigned long long>(adds[round]));
    }
    ok &= GPU_TEST_TM(tmashmem_barrier_all());
  }
  cudaStreamDestroy(stream);
  cudaFree(device_src);
  cudaFree(scratch);
  ok &= sync_and_barrier();
  tmashmem_free(sym);
  tmashmem_free(sig);
  CHECK(all_ranks(ok));
}
