// On-stream operations (tmashmem.h, "On-stream operations"), host half: argument checks,
// address translation and the CUDA stream memory operations, against the runtime's state
// under one acquisition of its lock per call. The kernels and the copy-engine transfers
// are the device library's (runtime/stream_kernels.h, device/on_stream.cu).
//
// Each call reads what it needs under the lock, then releases it before it enqueues: a
// stream wait may block in the driver (and on the emulated driver, blocks the calling
// thread), and other threads' tmashmem calls must not wait for it. Nothing here
// synchronises the host or allocates, so every call can be captured into a CUDA graph;
// stream memory operations carry their address and value in the captured node.
//
// Stream memory operations go through the runtime's driver table (runtime/driver.h) in the
// runtime's context, made current for the duration of the signal calls (ContextScope).
// The checks every call shares (range, reachability, stream) are runtime/on_stream_checks.h.
#include <cstdint>
#include <mutex>
#include <string>

#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/on_stream_checks.h"
#include "runtime/reachable.h"
#include "runtime/runtime.h"
#include "runtime/stream_kernels.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {
namespace {

const StreamKernels* g_kernels = nullptr;

constexpr const char* kMemOpsFix =
    "pass a stream of the device tmashmem_init chose (tmashmem_device()), or set "
    "TMASHMEM_STREAM_MEM_OPS=0 to use the library's kernels instead";

// Runs `enqueue` (one entry of the device library's table) with the runtime's device
// current for the CUDA runtime; `what` names the step in an error.
template <typename Enqueue>
tmashmem_status_t on_device(const char* call, int ordinal, const std::string& what,
                            Enqueue enqueue) {
  const StreamKernels* k = g_kernels;
  if (k == nullptr)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED, "%s: %s: %s", call, what.c_str(),
                     kNoKernelsMessage);
  int previous = -1;
  const CudaOutcome entered = k->enter_device(ordinal, &previous);
  if (entered.code != 0)
    return cuda_error(entered, format_string("%s: making CUDA device %d current (cudaGetDevice, "
                                             "cudaSetDevice)",
                                             call, ordinal)
                                   .c_str());
  const CudaOutcome done = enqueue(*k);
  k->leave_device(previous);
  if (done.code != 0) return cuda_error(done, format_string("%s: %s", call, what.c_str()).c_str());
  return TMASHMEM_SUCCESS;
}

// What a signal call learns under the lock: the checked address of its signal (this PE's
// copy for a wait, `pe`'s for a signal op), whether it may use stream memory operations,
// and the runtime's device. `context` keeps the runtime's context current until the call
// returns (ContextScope).
struct SignalCall {
  ContextScope context;
  void* sig = nullptr;
  bool mem_ops = false;
  int ordinal = -1;
};

// The one lock scope of a signal call: the initialisation check and the runtime's context
// (ContextScope), the stream (check_stream), whether the device runs stream memory
// operations (when `want_mem_ops` and TMASHMEM_STREAM_MEM_OPS is on), then the call's own
// `checks(rt)`, which fill *c. The lock is released before the call enqueues anything.
template <typename Checks>
tmashmem_status_t check_signal_call(const char* call, CUstream stream, bool want_mem_ops,
                                    SignalCall* c, Checks checks) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  TMASHMEM_TRY(c->context.enter(rt, call));
  TMASHMEM_TRY(check_stream(rt, call, stream));
  if (want_mem_ops && rt.config.stream_mem_ops)
    TMASHMEM_TRY(device_has_mem_ops(rt, call, &c->mem_ops));
  TMASHMEM_TRY(checks(static_cast<const Runtime&>(rt)));
  c->ordinal = rt.device_ordinal;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t barrier_all_on_stream(CUstream stream) {
  const char* call = "tmashmem_barrier_all_on_stream";
  Runtime& rt = runtime();
  tmashmem_ctx_t ctx;
  int ordinal = -1;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    TMASHMEM_TRY(require_initialized(call));
    TMASHMEM_TRY(check_stream(rt, call, stream));
    fill_device_ctx(rt, &ctx);
    if (!every_pe_reachable(rt))
      return set_error(
          TMASHMEM_ERROR_NOT_SUPPORTED,
          "%s: the device barrier needs every PE load/store reachable from every other "
          "(%d PEs, %d on this node); use tmashmem_barrier_all on the host instead",
          call, ctx.n_pes, ctx.n_local_pes);
    ordinal = rt.device_ordinal;
  }
  return on_device(call, ordinal, "launching the barrier kernel",
                   [&](const StreamKernels& k) { return k.barrier_all(ctx, stream); });
}

// putmem (to_peer) and getmem: `symmetric` is checked and translated to `pe`.
tmashmem_status_t copy_on_stream(const char* call, bool to_peer, void* dest, const void* src,
                                 size_t bytes, int pe, CUstream stream) {
  Runtime& rt = runtime();
  void* remote = nullptr;
  int ordinal = -1;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    TMASHMEM_TRY(require_initialized(call));
    TMASHMEM_TRY(check_stream(rt, call, stream));
    TMASHMEM_TRY(check_pe(rt, call, pe));
    if (bytes == 0) return TMASHMEM_SUCCESS;
    if (to_peer && src == nullptr)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: src is NULL with bytes = %zu; pass the local data to copy", call,
                       bytes);
    if (!to_peer && dest == nullptr)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: dest is NULL with bytes = %zu; pass local memory to copy into", call,
                       bytes);
    TMASHMEM_TRY(
        translate(rt, call, to_peer ? "dest" : "src", to_peer ? dest : src, bytes, pe, &remote));
    ordinal = rt.device_ordinal;
  }
  void* to = to_peer ? remote : dest;
  const void* from = to_peer ? src : remote;
  return on_device(call, ordinal,
                   format_string("cudaMemcpyAsync(%p <- %p, %zu bytes)", to, from, bytes),
                   [&](const StreamKernels& k) { return k.copy(to, from, bytes, stream); });
}

tmashmem_status_t signal_op_on_stream(uint64_t* sig, uint64_t value, int op, int pe,
                                      CUstream stream) {
  const char* call = "tmashmem_signal_op_on_stream";
  SignalCall c;
  const auto checks = [&](const Runtime& rt) {
    TMASHMEM_TRY(check_pe(rt, call, pe));
    TMASHMEM_TRY(check_signal(call, sig));
    if (op != TMASHMEM_SIGNAL_SET && op != TMASHMEM_SIGNAL_ADD)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: op %d is not a signal operation; pass TMASHMEM_SIGNAL_SET (%d) or "
                       "TMASHMEM_SIGNAL_ADD (%d)",
                       call, op, TMASHMEM_SIGNAL_SET, TMASHMEM_SIGNAL_ADD);
    return translate(rt, call, "sig", sig, sizeof(uint64_t), pe, &c.sig);
  };
  TMASHMEM_TRY(check_signal_call(call, stream, true, &c, checks));
  void* remote = c.sig;
  if (op == TMASHMEM_SIGNAL_SET && c.mem_ops) {
    // Release: the write runs once the stream's earlier work is complete, and with
    // CU_STREAM_WRITE_VALUE_DEFAULT it is preceded by a system-wide memory fence scoped
    // to the stream (like __threadfence_system()), so that work's writes, local or
    // through peer mappings, are visible everywhere before the new value is. The
    // write is one 64-bit store, never torn. ADD stays a kernel: CUDA has no atomic
    // read-modify-write stream memory operation.
    const CUresult r = driver().cuStreamWriteValue64(stream, reinterpret_cast<CUdeviceptr>(remote),
                                                     value, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS)
      return cuda_error(
          r,
          format_string("%s: cuStreamWriteValue64(stream %p, address %p (PE %d's copy of sig "
                        "%p), value %llu, CU_STREAM_WRITE_VALUE_DEFAULT)",
                        call, static_cast<void*>(stream), remote, pe, static_cast<void*>(sig),
                        static_cast<unsigned long long>(value))
              .c_str(),
          __FILE__, __LINE__, kMemOpsFix);
    return TMASHMEM_SUCCESS;
  }
  return on_device(call, c.ordinal, "launching the signal kernel", [&](const StreamKernels& k) {
    return k.signal_op(static_cast<uint64_t*>(remote), value, op, stream);
  });
}

tmashmem_status_t signal_wait_until_on_stream(uint64_t* sig, int cmp, uint64_t value,
                                              CUstream stream) {
  const char* call = "tmashmem_signal_wait_until_on_stream";
  SignalCall c;
  const auto checks = [&](const Runtime& rt) { return check_wait(rt, call, sig, cmp, &c.sig); };
  TMASHMEM_TRY(check_signal_call(call, stream, true, &c, checks));
  void* local = c.sig;

  // The comparisons cuStreamWaitValue64 can express. Its GEQ is cyclic,
  // (int64_t)(*sig - operand) >= 0, which is the unsigned *sig >= operand whenever the
  // two are less than 2^63 apart (tmashmem.h states the contract). GT v is GEQ v + 1,
  // except for v = UINT64_MAX (never true unsigned). GE 0 is always true unsigned but
  // not cyclic (a signal >= 2^63 fails it), so it takes the kernel, which returns at
  // once. NE, LT and LE have no stream-memory-op form.
  bool use_mem_op = false;
  unsigned int flags = 0;
  uint64_t operand = value;
  if (c.mem_ops) {
    if (cmp == TMASHMEM_CMP_EQ) {
      use_mem_op = true;
      flags = CU_STREAM_WAIT_VALUE_EQ;
    } else if (cmp == TMASHMEM_CMP_GE && value != 0) {
      use_mem_op = true;
      flags = CU_STREAM_WAIT_VALUE_GEQ;
    } else if (cmp == TMASHMEM_CMP_GT && value != UINT64_MAX) {
      use_mem_op = true;
      flags = CU_STREAM_WAIT_VALUE_GEQ;
      operand = value + 1;
    }
  }
  if (use_mem_op) {
    // Acquire: the wait completes only after the value is in this GPU's memory, and
    // the signalling PE made its earlier writes visible system-wide before it wrote
    // the value (a fenced stream write or a releasing atomic), so they are in memory
    // too. The stream's later work starts after the wait: kernels begin with a fresh
    // L1 and copies read memory, so both see those writes. No CU_STREAM_WAIT_VALUE_FLUSH:
    // that flag orders remote writes that arrive unfenced (GPUDirect RDMA from a NIC);
    // tmashmem signals come only from GPUs of load/store-reachable PEs, which fence.
    const CUresult r =
        driver().cuStreamWaitValue64(stream, reinterpret_cast<CUdeviceptr>(local), operand, flags);
    if (r != CUDA_SUCCESS)
      return cuda_error(
          r,
          format_string("%s: cuStreamWaitValue64(stream %p, address %p (sig), value %llu, %s)",
                        call, static_cast<void*>(stream), local,
                        static_cast<unsigned long long>(operand),
                        flags == CU_STREAM_WAIT_VALUE_EQ ? "CU_STREAM_WAIT_VALUE_EQ"
                                                         : "CU_STREAM_WAIT_VALUE_GEQ")
              .c_str(),
          __FILE__, __LINE__, kMemOpsFix);
    return TMASHMEM_SUCCESS;
  }
  return on_device(call, c.ordinal, "launching the signal-wait kernel",
                   [&](const StreamKernels& k) {
                     return k.signal_wait(static_cast<const uint64_t*>(local), cmp, value, stream);
                   });
}

// The bounded wait: always the library's kernel (a stream memory operation cannot time out),
// which polls with the device wait's deadline and writes its outcome to `status`.
tmashmem_status_t signal_wait_until_on_stream_timeout(uint64_t* sig, int cmp, uint64_t value,
                                                      uint64_t timeout_ns, int32_t* status,
                                                      CUstream stream) {
  const char* call = "tmashmem_signal_wait_until_on_stream_timeout";
  SignalCall c;
  const auto checks = [&](const Runtime& rt) {
    TMASHMEM_TRY(check_wait(rt, call, sig, cmp, &c.sig));
    if (timeout_ns == 0)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: timeout_ns is 0; pass a bound > 0 (or use "
                       "tmashmem_signal_wait_until_on_stream to wait without one)",
                       call);
    if (status == nullptr)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: status is NULL; pass an int32_t the GPU can write and the host can "
                       "read (cudaHostAlloc with cudaHostAllocMapped, or cudaMallocManaged)",
                       call);
    if ((reinterpret_cast<uintptr_t>(status) & (sizeof(int32_t) - 1)) != 0)
      return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s: status %p is not 4-byte aligned", call,
                       static_cast<void*>(status));
    size_t offset = 0;
    if (rt.heap.offset_of(status, &offset))
      return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                       "%s: status %p is in the symmetric heap (device memory the host cannot "
                       "read); pass mapped host or managed memory",
                       call, static_cast<void*>(status));
    return TMASHMEM_SUCCESS;
  };
  TMASHMEM_TRY(check_signal_call(call, stream, false, &c, checks));
  return on_device(call, c.ordinal, "launching the bounded signal-wait kernel",
                   [&](const StreamKernels& k) {
                     return k.signal_wait_timeout(static_cast<const uint64_t*>(c.sig), cmp, value,
                                                  timeout_ns, status, stream);
                   });
}

}  // namespace

void register_stream_kernels(const StreamKernels* kernels) { g_kernels = kernels; }
const StreamKernels* stream_kernels() { return g_kernels; }

}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

tmashmem_status_t tmashmem_barrier_all_on_stream(tmashmem_stream_t stream) {
  return barrier_all_on_stream(stream);
}

tmashmem_status_t tmashmem_putmem_on_stream(void* dest, const void* src, size_t bytes, int pe,
                                            tmashmem_stream_t stream) {
  return copy_on_stream("tmashmem_putmem_on_stream", true, dest, src, bytes, pe, stream);
}

tmashmem_status_t tmashmem_getmem_on_stream(void* dest, const void* src, size_t bytes, int pe,
                                            tmashmem_stream_t stream) {
  return copy_on_stream("tmashmem_getmem_on_stream", false, dest, src, bytes, pe, stream);
}

tmashmem_status_t tmashmem_signal_op_on_stream(uint64_t* sig, uint64_t value, int op, int pe,
                                               tmashmem_stream_t stream) {
  return signal_op_on_stream(sig, value, op, pe, stream);
}

tmashmem_status_t tmashmem_signal_wait_until_on_stream(uint64_t* sig, int cmp, uint64_t value,
                                                       tmashmem_stream_t stream) {
  return signal_wait_until_on_stream(sig, cmp, value, stream);
}

tmashmem_status_t tmashmem_signal_wait_until_on_stream_timeout(uint64_t* sig, int cmp,
                                                               uint64_t value, uint64_t timeout_ns,
                                                               int32_t* status,
                                                               tmashmem_stream_t stream) {
  return signal_wait_until_on_stream_timeout(sig, cmp, value, timeout_ns, status, stream);
}

}  // extern "C"
#pragma GCC visibility pop
