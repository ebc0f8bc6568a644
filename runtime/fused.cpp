// Fused communication + GEMM on a stream (tmashmem/fused.h), host half: argument checks
// with messages naming the PE, the value and the fix, the workspace layout, and the launch
// through the device library's table (runtime/fused_kernels.h, device/fused_allgather.cu).
// Like the other on-stream calls (runtime/on_stream.cpp) nothing here synchronises the
// host or allocates, so the calls can be captured into CUDA graphs.
#include <cstdint>
#include <mutex>
#include <string>

#include "runtime/error.h"
#include "runtime/fused_kernels.h"
#include "runtime/runtime.h"
#include "runtime/stream_kernels.h"
#include "tmashmem/fused.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {
namespace {

const FusedKernels* g_fused = nullptr;

// Mirrors include/tmashmem/device/fused/sync.cuh: 256 words of header, then one flag per
// 128-row chunk of the gathered A; the gathered A (if in the workspace) starts at the next
// 1024-byte boundary.
constexpr uint64_t kHeaderWords = 256;
constexpr int kMaxPes = 64;

uint64_t flag_bytes(int64_t m_shard, int n_pes) {
  return (kHeaderWords + static_cast<uint64_t>((m_shard + 127) / 128) * n_pes) * 8;
}
uint64_t gathered_offset(int64_t m_shard, int n_pes) {
  return (flag_bytes(m_shard, n_pes) + 1023) / 1024 * 1024;
}

// [p, p + bytes) inside this PE's symmetric heap.
bool in_heap(const Runtime& rt, const void* p, size_t bytes) {
  const int me = rt.bootstrap->rank();
  return bytes > 0 && rt.heap.translate(p, me) != nullptr &&
         rt.heap.translate(static_cast<const char*>(p) + (bytes - 1), me) != nullptr;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

tmashmem_status_t allgather_matmul(const void* a_shard, const void* b, void* c, void* a_gathered,
                                   int64_t m_shard, int64_t n, int64_t k, int64_t ldb,
                                   int64_t ldc, void* workspace, int comm_sms,
                                   CUstream stream) {
  const char* call = "tmashmem_allgather_matmul_on_stream";
  Runtime& rt = runtime();
  AllgatherMatmulCall args{};
  int ordinal = -1;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    TMASHMEM_TRY(require_initialized(call));
    const int me = rt.bootstrap->rank(), n_pes = rt.bootstrap->size();
    fill_device_ctx(rt, &args.ctx);
    if (n_pes > kMaxPes)
      return set_error(TMASHMEM_ERROR_NOT_SUPPORTED, "%s: %d PEs; the fused calls take at most %d",
                       call, n_pes, kMaxPes);
    if (rt.first_local_pe != 0 || rt.n_local_pes != n_pes)
      return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                       "%s: PE %d: every PE must be on this node and load/store reachable (%d "
                       "PEs, %d here); use a collective library across nodes",
                       call, me, n_pes, rt.n_local_pes);
    for (int s = 0; s < rt.n_local_pes; ++s)
      if (s != rt.my_slot && !rt.reachable[static_cast<size_t>(s)])
        return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                         "%s: PE %d cannot reach PE %d by load/store (no peer access); the "
                         "fused calls need peer access between all PEs",
                         call, me, s);
    if (m_shard <= 0 || n <= 0 || k <= 0 || m_shard * n_pes > INT32_MAX || n > INT32_MAX ||
        k > INT32_MAX)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: m_shard %lld, n %lld, k %lld; each must be positive and "
                       "n_pes * m_shard, n, k below 2^31",
                       call, me, static_cast<long long>(m_shard), static_cast<long long>(n),
                       static_cast<long long>(k));
    if (k % 8 != 0 || n % 8 != 0)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: k %lld and n %lld must be multiples of 8 (TMA moves 16-byte "
                       "rows); pad the matrices",
                       call, me, static_cast<long long>(k), static_cast<long long>(n));
    if (ldb < k || ldb % 8 != 0 || ldc < n || ldc % 8 != 0)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: ldb %lld must be >= k %lld and ldc %lld >= n %lld, both "
                       "multiples of 8",
                       call, me, static_cast<long long>(ldb), static_cast<long long>(k),
                       static_cast<long long>(ldc), static_cast<long long>(n));
    if (a_shard == nullptr || b == nullptr || c == nullptr || workspace == nullptr)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: a_shard %p, b %p, c %p, workspace %p; none may be NULL", call,
                       me, a_shard, b, c, workspace);
    if (!aligned16(a_shard) || !aligned16(b) || !aligned16(c) ||
        (a_gathered && !aligned16(a_gathered)))
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: a_shard %p, b %p, c %p, a_gathered %p must be 16-byte aligned",
                       call, me, a_shard, b, c, a_gathered);
    const size_t shard_bytes = static_cast<size_t>(m_shard * k * 2);
    if (!in_heap(rt, a_shard, shard_bytes))
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: a_shard [%p, +%zu bytes) is not inside the symmetric heap; "
                       "allocate the shard with tmashmem_malloc (peers read it)",
                       call, me, a_shard, shard_bytes);
    const size_t ws_bytes = tmashmem_allgather_matmul_workspace_bytes(m_shard, k, !a_gathered);
    if ((reinterpret_cast<uintptr_t>(workspace) & 1023u) != 0 || !in_heap(rt, workspace, ws_bytes))
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: workspace [%p, +%zu bytes) must be 1024-byte aligned inside "
                       "the symmetric heap; allocate tmashmem_allgather_matmul_workspace_bytes("
                       "%lld, %lld, %d) with tmashmem_calloc",
                       call, me, workspace, ws_bytes, static_cast<long long>(m_shard),
                       static_cast<long long>(k), a_gathered == nullptr ? 1 : 0);
    if (comm_sms < 0)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: comm_sms %d; pass 0 for the default or a positive count", call,
                       me, comm_sms);
    args.a_shard = a_shard;
    args.b = b;
    args.c = c;
    args.a_gathered = a_gathered ? a_gathered
                                 : static_cast<char*>(workspace) + gathered_offset(m_shard, n_pes);
    args.workspace = workspace;
    args.m_shard = static_cast<int>(m_shard);
    args.n = static_cast<int>(n);
    args.k = static_cast<int>(k);
    args.ldb = ldb;
    args.ldc = ldc;
    args.comm_sms = comm_sms;
    ordinal = rt.device_ordinal;
  }
  const StreamKernels* device = stream_kernels();
  if (g_fused == nullptr || device == nullptr)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED, "%s: %s", call, kNoKernelsMessage);
  int previous = -1;
  const CudaOutcome entered = device->enter_device(ordinal, &previous);
  if (entered.code != 0)
    return cuda_error(entered, format_string("%s: making CUDA device %d current", call, ordinal)
                                   .c_str());
  const CudaOutcome done = g_fused->allgather_matmul(args, stream);
  device->leave_device(previous);
  if (done.code == -1)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s: PE %d: %s (m_shard %lld, n %lld, k %lld)",
                     call, args.ctx.my_pe, done.name, static_cast<long long>(m_shard),
                     static_cast<long long>(n), static_cast<long long>(k));
  if (done.code != 0)
    return cuda_error(done, format_string("%s: launching the all-gather GEMM kernel", call).c_str());
  return TMASHMEM_SUCCESS;
}

}  // namespace

void register_fused_kernels(const FusedKernels* kernels) { g_fused = kernels; }

}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

size_t tmashmem_allgather_matmul_workspace_bytes(int64_t m_shard, int64_t k,
                                                 int gathered_in_workspace) {
  const int n_pes = tmashmem_n_pes();
  if (n_pes <= 0 || m_shard <= 0 || k <= 0) return 0;
  if (!gathered_in_workspace) return static_cast<size_t>(flag_bytes(m_shard, n_pes));
  return static_cast<size_t>(gathered_offset(m_shard, n_pes) +
                             static_cast<uint64_t>(m_shard) * n_pes * static_cast<uint64_t>(k) * 2);
}

void* tmashmem_allgather_matmul_gathered(void* workspace, int64_t m_shard) {
  const int n_pes = tmashmem_n_pes();
  if (workspace == nullptr || n_pes <= 0 || m_shard <= 0) return nullptr;
  return static_cast<char*>(workspace) + gathered_offset(m_shard, n_pes);
}

tmashmem_status_t tmashmem_allgather_matmul_on_stream(const void* a_shard, const void* b, void* c,
                                                      void* a_gathered, int64_t m_shard, int64_t n,
                                                      int64_t k, int64_t ldb, int64_t ldc,
                                                      void* workspace, int comm_sms,
                                                      tmashmem_stream_t stream) {
  return allgather_matmul(a_shard, b, c, a_gathered, m_shard, n, k, ldb, ldc, workspace, comm_sms,
                          stream);
}

}  // extern "C"
#pragma GCC visibility pop
