// On-stream operations (tmashmem.h, "On-stream operations"): argument checks with
// clear errors; put/get through the copy engine at odd sizes and misaligned
// offsets with guards; signals and barriers in stream order; the whole sequence
// captured into a CUDA graph and replayed with new data each time; every signal
// operation and the comparisons with and without a stream-memory-op form, captured
// and replayed with fresh values, checking which form the graph holds; the on-stream
// barrier interleaved with device barriers (they share the signal pad's counters); the
// bounded wait (tmashmem_signal_wait_until_on_stream_timeout) timing out and succeeding.
//
// CMake runs this program twice per PE count: as is (stream memory operations where
// the device has them) and with TMASHMEM_STREAM_MEM_OPS=0 (the kernels everywhere).
#include <cuda.h>
#include <strings.h>

#include <chrono>
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

// dst[i] = src[i] on the SMs, in a kernel that starts after the stream's earlier work.
__global__ void copy_kernel(uint8_t* dst, const uint8_t* src, size_t bytes) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < bytes;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void copy_signals_kernel(uint64_t* dst, const uint64_t* sig, int count) {
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    dst[i] = *static_cast<const volatile uint64_t*>(sig + i);
}

bool cu_ok(CUresult result, const char* what, int line) {
  if (result == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) name = "?";
  std::printf("[PE %d] line %d: %s failed: %s\n", mpi_rank(), line, what, name);
  return false;
}
#define GPU_TEST_CU(call) cu_ok((call), #call, __LINE__)

// Whether the library should use stream memory operations in this run: the device has
// 64-bit ones and TMASHMEM_STREAM_MEM_OPS does not turn them off (the rule of
// device/on_stream.cu, worked out here independently).
bool mem_ops_expected(bool* ok) {
  const char* env = std::getenv("TMASHMEM_STREAM_MEM_OPS");
  if (env != nullptr && (strcasecmp(env, "0") == 0 || strcasecmp(env, "off") == 0)) return false;
  CUdevice device = 0;
  int can = 0;
  *ok &= GPU_TEST_CU(cuDeviceGet(&device, tmashmem_device()));
  *ok &= GPU_TEST_CU(
      cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device));
  return can != 0;
}

// A CUDA graph captured from a stream: begin() starts recording (calls on the stream are
// recorded, not run), end() stops and instantiates it; both are freed with the object.
struct CapturedGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  bool begin(cudaStream_t stream) {
    return GPU_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  }
  // `ok`: whether every call recorded since begin() was accepted.
  bool end(cudaStream_t stream, bool ok) {
    ok &= GPU_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    return ok && GPU_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  }
};

// The stream memory operations a captured graph holds (batch mem-op nodes).
struct MemOpCount {
  int writes = 0;    // CU_STREAM_MEM_OP_WRITE_VALUE_64
  int waits_eq = 0;  // CU_STREAM_MEM_OP_WAIT_VALUE_64, CU_STREAM_WAIT_VALUE_EQ
  int waits_geq = 0;
  int other = 0;  // anything else (a driver may add barriers); reported, not checked
};

bool count_mem_ops(cudaGraph_t graph, MemOpCount* out) {
  *out = MemOpCount();
  size_t n = 0;
  if (!GPU_TEST_CU(cuGraphGetNodes(graph, nullptr, &n))) return false;
  std::vector<CUgraphNode> nodes(n);
  if (n > 0 && !GPU_TEST_CU(cuGraphGetNodes(graph, nodes.data(), &n))) return false;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    if (!GPU_TEST_CU(cuGraphNodeGetType(node, &type))) return false;
    if (type != CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) continue;
    CUDA_BATCH_MEM_OP_NODE_PARAMS params;
    if (!GPU_TEST_CU(cuGraphBatchMemOpNodeGetParams(node, &params))) return false;
    for (unsigned i = 0; i < params.count; ++i) {
      const CUstreamBatchMemOpParams& op = params.paramArray[i];
      const unsigned wait_type = op.waitValue.flags & ~unsigned(CU_STREAM_WAIT_VALUE_FLUSH);
      if (op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64)
        ++out->writes;
      else if (op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 &&
               wait_type == CU_STREAM_WAIT_VALUE_EQ)
        ++out->waits_eq;
      else if (op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 &&
               wait_type == CU_STREAM_WAIT_VALUE_GEQ)
        ++out->waits_geq;
      else
        ++out->other;
    }
  }
  return true;
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
  CapturedGraph graph;
  ok &= graph.begin(stream);
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
  ok = graph.end(stream, ok);
  REQUIRE(all_ranks(ok));

  for (uint64_t replay = 1; replay <= 20; ++replay) {
    const uint64_t seed_value = seed_for(60, 0, replay);
    const uint64_t bg = seed_for(61, s.me, replay), bg_get = seed_for(62, s.me, replay);
    ok &= GPU_TEST_CUDA(cudaMemcpyAsync(seed, &seed_value, 8, cudaMemcpyHostToDevice, stream));
    ok &= GPU_TEST_CUDA(fill_pattern(sym_dst, span, bg, 0, stream));
    ok &= GPU_TEST_CUDA(fill_pattern(local, span, bg_get, 0, stream));
    ok &= GPU_TEST_CUDA(cudaGraphLaunch(graph.exec, stream));
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
  ok &= sync_and_barrier();
  cudaStreamDestroy(stream);
  cudaFree(seed);
  cudaFree(local);
  tmashmem_free(sig);
  tmashmem_free(sym_src);
  tmashmem_free(sym_dst);
}

namespace {

// One signal per kind of update and wait. The previous PE updates this PE's signal k
// (after putting payload k into this PE's dst segment k); this PE waits, then copies the
// segment on the SMs. Forms with stream memory operations on: SET = write, ADD = kernel;
// EQ, GE, GT = wait; NE, LE (and GE 0) = kernel.
enum SignalIndex { kSetEq, kAddGe, kSetGt, kSetNe, kSetLe, kSignals };
constexpr uint64_t kResetLe = ~uint64_t(0);  // signal kSetLe rests at UINT64_MAX, the others at 0

// The values the previous PE sends to `receiver` in capture `capture`: fresh every run
// and every capture, known to both PEs.
struct SignalValues {
  uint64_t v[kSignals];
};
SignalValues values_for(int receiver, uint64_t capture) {
  SignalValues x;
  x.v[kSetEq] = seed_for(70, receiver, capture) | 1;         // any value but the reset 0
  x.v[kAddGe] = (seed_for(71, receiver, capture) >> 2) | 1;  // < 2^62: within 2^63 of 0
  x.v[kSetGt] = (seed_for(72, receiver, capture) >> 2) | 2;  // waited for as GT v - 1
  x.v[kSetNe] = seed_for(73, receiver, capture) | 1;         // waited for as NE 0
  x.v[kSetLe] = seed_for(74, receiver, capture) >> 1;        // waited for as LE v (< rest)
  return x;
}

}  // namespace

TEST_CASE(
    "on-stream signals: SET, ADD and waits EQ/GE/GT/NE/LE in a replayed graph, fresh values; "
    "stream memory operations where expected") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  const size_t seg = (size_t(64) << 10) + 5, span = kSignals * seg;
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(kSignals, sizeof(uint64_t)));
  auto* sym_src = static_cast<uint8_t*>(tmashmem_malloc(span));
  auto* sym_dst = static_cast<uint8_t*>(tmashmem_malloc(span));
  REQUIRE(all_ranks(sig != nullptr && sym_src != nullptr && sym_dst != nullptr));
  uint8_t* snap = nullptr;
  uint64_t *sig_snap = nullptr, *seed = nullptr;
  cudaStream_t stream = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&snap, span)) &&
            GPU_TEST_CUDA(cudaMalloc(&sig_snap, kSignals * sizeof(uint64_t))) &&
            GPU_TEST_CUDA(cudaMalloc(&seed, 8)) &&
            GPU_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  REQUIRE(all_ranks(ok));
  const bool mem_ops = mem_ops_expected(&ok);
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  const uint64_t salt_me = mix64(uint64_t(s.me) + 101), salt_prev = mix64(uint64_t(prev) + 101);
  if (s.me == 0)
    std::printf("on-stream signals: stream memory operations %s\n",
                mem_ops ? "expected" : "not expected (kernels)");

  // Outside a graph, with no context current on the calling thread: a SET to itself and
  // an EQ wait work, and the thread's context is left as it was.
  {
    const uint64_t v = seed_for(69, s.me) | 1;
    ok &= GPU_TEST_CU(cuCtxSetCurrent(nullptr));
    ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig, v, TMASHMEM_SIGNAL_SET, s.me, stream));
    ok &= GPU_TEST_TM(tmashmem_signal_wait_until_on_stream(sig, TMASHMEM_CMP_EQ, v, stream));
    ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig, 0, TMASHMEM_SIGNAL_SET, s.me, stream));
    CUcontext current = reinterpret_cast<CUcontext>(1);
    ok &= GPU_TEST_CU(cuCtxGetCurrent(&current));
    if (current != nullptr) {
      std::printf("[PE %d] the signal calls left context %p current, expected none\n", s.me,
                  static_cast<void*>(current));
      ok = false;
    }
    ok &= GPU_TEST_CUDA(cudaSetDevice(tmashmem_device()));
    ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
  }
  const uint64_t rest = kResetLe;
  ok &= GPU_TEST_CUDA(cudaMemcpy(sig + kSetLe, &rest, 8, cudaMemcpyHostToDevice));
  ok &= GPU_TEST_TM(tmashmem_barrier_all());
  REQUIRE(all_ranks(ok));

  for (uint64_t capture = 1; capture <= 3; ++capture) {
    const SignalValues send = values_for(next, capture), want = values_for(s.me, capture);
    const int ops[kSignals] = {TMASHMEM_SIGNAL_SET, TMASHMEM_SIGNAL_ADD, TMASHMEM_SIGNAL_SET,
                               TMASHMEM_SIGNAL_SET, TMASHMEM_SIGNAL_SET};
    const int cmps[kSignals] = {TMASHMEM_CMP_EQ, TMASHMEM_CMP_GE, TMASHMEM_CMP_GT, TMASHMEM_CMP_NE,
                                TMASHMEM_CMP_LE};
    const uint64_t wait_for[kSignals] = {want.v[kSetEq], want.v[kAddGe], want.v[kSetGt] - 1, 0,
                                         want.v[kSetLe]};

    // New payload, barrier; payload k then signal k to the next PE; wait for each signal
    // from the previous PE and copy its payload on the SMs right after; copy the signals;
    // reset them; barrier.
    CapturedGraph graph;
    ok &= graph.begin(stream);
    fill_from_seed_kernel<<<64, 256, 0, stream>>>(sym_src, span, seed, salt_me);
    ok &= GPU_TEST_CUDA(cudaGetLastError());
    ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(stream));
    for (int k = 0; k < kSignals; ++k) {
      ok &= GPU_TEST_TM(
          tmashmem_putmem_on_stream(sym_dst + k * seg, sym_src + k * seg, seg, next, stream));
      ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig + k, send.v[k], ops[k], next, stream));
    }
    for (int k = 0; k < kSignals; ++k) {
      ok &=
          GPU_TEST_TM(tmashmem_signal_wait_until_on_stream(sig + k, cmps[k], wait_for[k], stream));
      copy_kernel<<<32, 256, 0, stream>>>(snap + k * seg, sym_dst + k * seg, seg);
      ok &= GPU_TEST_CUDA(cudaGetLastError());
    }
    // Always true: GE 0 is a kernel even with stream memory operations on.
    ok &=
        GPU_TEST_TM(tmashmem_signal_wait_until_on_stream(sig + kSetNe, TMASHMEM_CMP_GE, 0, stream));
    copy_signals_kernel<<<1, 32, 0, stream>>>(sig_snap, sig, kSignals);
    ok &= GPU_TEST_CUDA(cudaGetLastError());
    for (int k = 0; k < kSignals; ++k)
      ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig + k, k == kSetLe ? kResetLe : 0,
                                                     TMASHMEM_SIGNAL_SET, s.me, stream));
    ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(stream));
    ok = graph.end(stream, ok);
    REQUIRE(all_ranks(ok));

    // What the graph holds: 4 remote SETs + 5 resets as writes, EQ as one wait, GE and
    // GT as GEQ waits; or, with the kernels, no stream memory operation at all.
    MemOpCount count;
    ok &= count_mem_ops(graph.graph, &count);
    const MemOpCount expected = mem_ops ? MemOpCount{9, 1, 2, 0} : MemOpCount{};
    if (count.writes != expected.writes || count.waits_eq != expected.waits_eq ||
        count.waits_geq != expected.waits_geq || (!mem_ops && count.other != 0)) {
      std::printf(
          "[PE %d] capture %llu: the graph holds %d writes, %d EQ waits, %d GEQ waits, "
          "%d other stream memory operations; expected %d, %d, %d%s\n",
          s.me, (unsigned long long)capture, count.writes, count.waits_eq, count.waits_geq,
          count.other, expected.writes, expected.waits_eq, expected.waits_geq,
          mem_ops ? "" : ", 0");
      ok = false;
    } else if (count.other != 0 && s.me == 0) {
      std::printf("capture %llu: the driver added %d other stream memory operations\n",
                  (unsigned long long)capture, count.other);
    }

    for (uint64_t replay = 1; replay <= 8; ++replay) {
      const uint64_t seed_value = seed_for(75, 0, capture * 1000 + replay);
      const uint64_t bg = seed_for(76, s.me, capture * 1000 + replay);
      ok &= GPU_TEST_CUDA(cudaMemcpyAsync(seed, &seed_value, 8, cudaMemcpyHostToDevice, stream));
      ok &= GPU_TEST_CUDA(fill_pattern(sym_dst, span, bg, 0, stream));
      ok &= GPU_TEST_CUDA(fill_pattern(snap, span, bg ^ 1, 0, stream));
      ok &= GPU_TEST_CUDA(cudaMemsetAsync(sig_snap, 0x5a, kSignals * sizeof(uint64_t), stream));
      ok &= GPU_TEST_CUDA(cudaGraphLaunch(graph.exec, stream));
      ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
      std::vector<uint8_t> got(span);
      char what[96];
      std::snprintf(what, sizeof what, "capture %llu replay %llu: payloads read after the waits",
                    (unsigned long long)capture, (unsigned long long)replay);
      ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), snap, span, cudaMemcpyDeviceToHost));
      ok &= check_bytes(got, bg ^ 1, 0, span, seed_value ^ salt_prev, 0, what);
      uint64_t seen[kSignals], now[kSignals];
      ok &= GPU_TEST_CUDA(cudaMemcpy(seen, sig_snap, sizeof seen, cudaMemcpyDeviceToHost));
      ok &= GPU_TEST_CUDA(cudaMemcpy(now, sig, sizeof now, cudaMemcpyDeviceToHost));
      for (int k = 0; k < kSignals; ++k) {
        const uint64_t reset = k == kSetLe ? kResetLe : 0;
        if (seen[k] != want.v[k] || now[k] != reset) {
          std::printf(
              "[PE %d] %s: signal %d was %llu after the waits (expected %llu) and is "
              "%llu after the reset (expected %llu)\n",
              s.me, what, k, (unsigned long long)seen[k], (unsigned long long)want.v[k],
              (unsigned long long)now[k], (unsigned long long)reset);
          ok = false;
        }
      }
    }
    CHECK(all_ranks(ok));
    ok &= sync_and_barrier();
  }
  cudaStreamDestroy(stream);
  cudaFree(seed);
  cudaFree(sig_snap);
  cudaFree(snap);
  tmashmem_free(sym_dst);
  tmashmem_free(sym_src);
  tmashmem_free(sig);
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

TEST_CASE("bounded on-stream wait: unsatisfied times out within the bound, satisfied succeeds") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* sig = static_cast<uint64_t*>(tmashmem_calloc(2, sizeof(uint64_t)));
  REQUIRE(all_ranks(sig != nullptr));
  int32_t* status = nullptr;  // written by the GPU, read by the host after the sync
  cudaStream_t stream = nullptr;
  bool ok = GPU_TEST_CUDA(cudaHostAlloc(&status, 2 * sizeof(int32_t), cudaHostAllocMapped)) &&
            GPU_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  REQUIRE(all_ranks(ok));
  status[0] = status[1] = -1;
  const int next = (s.me + 1) % s.n;
  constexpr uint64_t kBoundNs = 200ull * 1000 * 1000;  // 200 ms
  // Nothing ever writes sig[0] = 1: the wait must give up at the bound (plus launch and
  // clock-read granularity; 2 s is far above both), and the stream must go on.
  const auto start = std::chrono::steady_clock::now();
  ok &= GPU_TEST_TM(tmashmem_signal_wait_until_on_stream_timeout(sig, TMASHMEM_CMP_EQ, 1, kBoundNs,
                                                                 &status[0], stream));
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(status[0] == TMASHMEM_ERROR_TIMEOUT);
  CHECK(waited_s >= 0.2);
  CHECK(waited_s < 2.0);
  // The previous PE sets sig[1] on this PE; the bounded wait sees it and reports success.
  ok &= GPU_TEST_TM(tmashmem_barrier_all_on_stream(stream));
  ok &= GPU_TEST_TM(tmashmem_signal_op_on_stream(sig + 1, 7, TMASHMEM_SIGNAL_SET, next, stream));
  ok &= GPU_TEST_TM(tmashmem_signal_wait_until_on_stream_timeout(
      sig + 1, TMASHMEM_CMP_GE, 7, 10ull * 1000 * 1000 * 1000, &status[1], stream));
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
  CHECK(status[1] == TMASHMEM_SUCCESS);
  CHECK(all_ranks(ok));
  ok &= sync_and_barrier();
  cudaStreamDestroy(stream);
  cudaFreeHost(status);
  tmashmem_free(sig);
}
