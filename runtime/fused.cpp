// Fused communication + GEMM on a stream (tmashmem/fused.h), host half: argument checks
// with messages naming the PE, the value and the fix, the workspace layout, and the launch
// through the device library's table (runtime/fused_kernels.h, device/fused_allgather.cu).
// Like the other on-stream calls (runtime/on_stream.cpp) nothing here synchronises the
// host or allocates, so the calls can be captured into CUDA graphs.
#include "tmashmem/fused.h"

#include <cstdint>
#include <mutex>
#include <string>

#include "runtime/error.h"
#include "runtime/fused_kernels.h"
#include "runtime/runtime.h"
#include "runtime/stream_kernels.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {
namespace {

const FusedKernels* g_fused = nullptr;
constexpr int kMaxPes = 64;

// The workspace layouts come from the device library: without it nothing can run.
tmashmem_status_t require_kernels(const char* call) {
  if (g_fused == nullptr || stream_kernels() == nullptr)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED, "%s: %s", call, kNoKernelsMessage);
  return TMASHMEM_SUCCESS;
}

// The all-gather's workspace: the kernels' signal words, then (when a_gathered is NULL) the
// buffer the peers' rows land in, from the next 1024-byte boundary. 0 without the device
// library.
uint64_t gathered_offset(int64_t m_shard, int n_pes) {
  return g_fused ? (g_fused->allgather_signal_bytes(m_shard, n_pes) + 1023) / 1024 * 1024 : 0;
}
uint64_t workspace_bytes(int64_t m_shard, int64_t k, int n_pes, bool gathered_in_workspace) {
  if (g_fused == nullptr) return 0;
  if (!gathered_in_workspace) return g_fused->allgather_signal_bytes(m_shard, n_pes);
  return gathered_offset(m_shard, n_pes) +
         static_cast<uint64_t>(m_shard) * n_pes * static_cast<uint64_t>(k) * 2;
}

// [p, p + bytes) inside this PE's symmetric heap.
bool in_heap(const Runtime& rt, const void* p, size_t bytes) {
  const int me = rt.bootstrap->rank();
  return bytes > 0 && rt.heap.translate(p, me) != nullptr &&
         rt.heap.translate(static_cast<const char*>(p) + (bytes - 1), me) != nullptr;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// A symmetric operand `name`: [p, p + bytes) inside this PE's heap (`why`: what peers do with it).
tmashmem_status_t check_in_heap(const Runtime& rt, const char* call, int me, const char* name,
                                const void* p, size_t bytes, const char* why) {
  if (in_heap(rt, p, bytes)) return TMASHMEM_SUCCESS;
  return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                   "%s: PE %d: %s [%p, +%zu bytes) is not inside the symmetric heap; allocate it "
                   "with tmashmem_malloc (%s)",
                   call, me, name, p, bytes, why);
}

// The call that sizes a workspace, with its arguments: `sizer(a, b, c)`. The message that
// names it is formatted only when the check fails (the checks run on every call).
struct WorkspaceSizer {
  const char* sizer;
  long long a, b;
  int c;
};

// The workspace: `bytes`, 16-byte aligned inside this PE's heap.
tmashmem_status_t check_workspace(const Runtime& rt, const char* call, int me, const void* ws,
                                  size_t bytes, const WorkspaceSizer& sizing) {
  if (aligned16(ws) && in_heap(rt, ws, bytes)) return TMASHMEM_SUCCESS;
  return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                   "%s: PE %d: workspace [%p, +%zu bytes) must be 16-byte aligned inside the "
                   "symmetric heap; allocate %s(%lld, %lld, %d) with tmashmem_calloc",
                   call, me, ws, bytes, sizing.sizer, sizing.a, sizing.b, sizing.c);
}

// The fused kernels need every PE on this node and load/store reachable. Under the lock.
tmashmem_status_t check_job(const Runtime& rt, const char* call, int max_pes) {
  const int me = rt.bootstrap->rank(), n_pes = rt.bootstrap->size();
  if (n_pes > max_pes)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED, "%s: %d PEs; this call takes at most %d", call,
                     n_pes, max_pes);
  if (rt.first_local_pe != 0 || rt.n_local_pes != n_pes)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                     "%s: PE %d: every PE must be on this node and load/store reachable (%d PEs, "
                     "%d here); use a collective library across nodes",
                     call, me, n_pes, rt.n_local_pes);
  for (int s = 0; s < rt.n_local_pes; ++s)
    if (s != rt.my_slot && !rt.reachable[static_cast<size_t>(s)])
      return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                       "%s: PE %d cannot reach PE %d by load/store (no peer access); the fused "
                       "calls need peer access between all PEs",
                       call, me, s);
  return TMASHMEM_SUCCESS;
}

// Runs `launch` (an entry of the device library's fused table) with the runtime's device
// current. A planner rejection (code -1) is INVALID_VALUE with the planner's sentence. The
// caller checked require_kernels under the lock (the table is registered once, statically).
template <class Launch>
tmashmem_status_t launch_fused(const char* call, int me, int ordinal, Launch launch) {
  const StreamKernels* device = stream_kernels();
  int previous = -1;
  const CudaOutcome entered = device->enter_device(ordinal, &previous);
  if (entered.code != 0)
    return cuda_error(entered,
                      format_string("%s: making CUDA device %d current", call, ordinal).c_str());
  const CudaOutcome done = launch(*g_fused);
  device->leave_device(previous);
  if (done.code == -1)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s: PE %d: %s", call, me, done.name);
  if (done.code != 0)
    return cuda_error(done, format_string("%s: launching the fused kernel", call).c_str());
  return TMASHMEM_SUCCESS;
}

uint64_t rs_workspace_bytes(int64_t m_shard, int64_t n, int n_pes, int mode) {
  return g_fused ? g_fused->reduce_scatter_bytes(m_shard, n, n_pes, mode) : 0;
}

tmashmem_status_t matmul_reduce_scatter(const void* a, const void* b, void* c_shard, int64_t m,
                                        int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                        void* workspace, int mode, CUstream stream) {
  const char* call = "tmashmem_matmul_reduce_scatter_on_stream";
  Runtime& rt = runtime();
  MatmulReduceScatterCall args{};
  int ordinal = -1, me = -1;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    TMASHMEM_TRY(require_initialized(call));
    TMASHMEM_TRY(require_kernels(call));
    me = rt.bootstrap->rank();
    const int n_pes = rt.bootstrap->size();
    TMASHMEM_TRY(check_job(rt, call, 8));
    fill_device_ctx(rt, &args.ctx);
    if (mode != TMASHMEM_REDUCE_SCATTER_FAST && mode != TMASHMEM_REDUCE_SCATTER_DETERMINISTIC)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: mode %d; pass TMASHMEM_REDUCE_SCATTER_FAST (0) or "
                       "TMASHMEM_REDUCE_SCATTER_DETERMINISTIC (1)",
                       call, me, mode);
    if (m <= 0 || n <= 0 || k <= 0 || m % n_pes != 0 || m > INT32_MAX || n > INT32_MAX ||
        k > INT32_MAX)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: m %lld, n %lld, k %lld; each must be positive, below 2^31, and "
                       "m a multiple of the %d PEs (each owns m / n_pes rows)",
                       call, me, static_cast<long long>(m), static_cast<long long>(n),
                       static_cast<long long>(k), n_pes);
    if (k % 8 != 0 || n % 8 != 0 || lda < k || lda % 8 != 0 || ldb < k || ldb % 8 != 0 || ldc < n ||
        ldc % 8 != 0)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: k %lld, n %lld, lda %lld, ldb %lld, ldc %lld; k and n must be "
                       "multiples of 8, lda and ldb >= k and ldc >= n, all multiples of 8",
                       call, me, static_cast<long long>(k), static_cast<long long>(n),
                       static_cast<long long>(lda), static_cast<long long>(ldb),
                       static_cast<long long>(ldc));
    if (a == nullptr || b == nullptr || c_shard == nullptr || workspace == nullptr)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: a %p, b %p, c_shard %p, workspace %p; none may be NULL", call,
                       me, a, b, c_shard, workspace);
    if (!aligned16(a) || !aligned16(b) || !aligned16(c_shard))
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: a %p, b %p, c_shard %p must be 16-byte aligned", call, me, a, b,
                       c_shard);
    const int64_t ms = m / n_pes;
    const size_t shard_bytes = static_cast<size_t>(((ms - 1) * ldc + n) * 2);
    TMASHMEM_TRY(
        check_in_heap(rt, call, me, "c_shard", c_shard, shard_bytes, "peers write into it"));
    TMASHMEM_TRY(check_workspace(rt, call, me, workspace, rs_workspace_bytes(ms, n, n_pes, mode),
                                 {"tmashmem_matmul_reduce_scatter_workspace_bytes",
                                  static_cast<long long>(m), static_cast<long long>(n), mode}));
    args = MatmulReduceScatterCall{args.ctx, a,      b,   c_shard, workspace, int(m),
                                   int(n),   int(k), lda, ldb,     ldc,       mode};
    ordinal = rt.device_ordinal;
  }
  return launch_fused(call, me, ordinal,
                      [&](const FusedKernels& f) { return f.matmul_reduce_scatter(args, stream); });
}

tmashmem_status_t allgather_matmul(const void* a_shard, const void* b, void* c, void* a_gathered,
                                   int64_t m_shard, int64_t n, int64_t k, int64_t ldb, int64_t ldc,
                                   void* workspace, int comm_sms, CUstream stream) {
  const char* call = "tmashmem_allgather_matmul_on_stream";
  Runtime& rt = runtime();
  AllgatherMatmulCall args{};
  int ordinal = -1;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    TMASHMEM_TRY(require_initialized(call));
    TMASHMEM_TRY(require_kernels(call));
    const int me = rt.bootstrap->rank(), n_pes = rt.bootstrap->size();
    fill_device_ctx(rt, &args.ctx);
    TMASHMEM_TRY(check_job(rt, call, kMaxPes));
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
    TMASHMEM_TRY(check_in_heap(rt, call, me, "a_shard", a_shard, shard_bytes, "peers read it"));
    // (The public size function takes the lock itself: compute it here.)
    TMASHMEM_TRY(check_workspace(
        rt, call, me, workspace, workspace_bytes(m_shard, k, n_pes, a_gathered == nullptr),
        {"tmashmem_allgather_matmul_workspace_bytes", static_cast<long long>(m_shard),
         static_cast<long long>(k), a_gathered == nullptr ? 1 : 0}));
    if (comm_sms < TMASHMEM_COMM_WARPS)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: PE %d: comm_sms %d; pass 0 for the default, TMASHMEM_COMM_WARPS (%d) "
                       "for the producer warps, or a positive count of copy SMs",
                       call, me, comm_sms, TMASHMEM_COMM_WARPS);
    void* gathered =
        a_gathered ? a_gathered : static_cast<char*>(workspace) + gathered_offset(m_shard, n_pes);
    args = AllgatherMatmulCall{args.ctx,
                               a_shard,
                               b,
                               c,
                               gathered,
                               workspace,
                               int(m_shard),
                               int(n),
                               int(k),
                               ldb,
                               ldc,
                               comm_sms,
                               a_gathered != nullptr ? 1 : 0};
    ordinal = rt.device_ordinal;
  }
  return launch_fused(call, args.ctx.my_pe, ordinal,
                      [&](const FusedKernels& f) { return f.allgather_matmul(args, stream); });
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
  return static_cast<size_t>(workspace_bytes(m_shard, k, n_pes, gathered_in_workspace != 0));
}

size_t tmashmem_matmul_reduce_scatter_workspace_bytes(int64_t m, int64_t n, int mode) {
  const int n_pes = tmashmem_n_pes();
  if (n_pes <= 0 || m <= 0 || n <= 0 || m % n_pes != 0 ||
      (mode != TMASHMEM_REDUCE_SCATTER_FAST && mode != TMASHMEM_REDUCE_SCATTER_DETERMINISTIC))
    return 0;
  return static_cast<size_t>(rs_workspace_bytes(m / n_pes, n, n_pes, mode));
}

tmashmem_status_t tmashmem_matmul_reduce_scatter_on_stream(const void* a, const void* b,
                                                           void* c_shard, int64_t m, int64_t n,
                                                           int64_t k, int64_t lda, int64_t ldb,
                                                           int64_t ldc, void* workspace, int mode,
                                                           tmashmem_stream_t stream) {
  return matmul_reduce_scatter(a, b, c_shard, m, n, k, lda, ldb, ldc, workspace, mode, stream);
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
