// The on-stream collectives (tmashmem/collectives.h), host half: argument checks (before
// anything is enqueued), the symmetry check, the choice of CTAs, algorithm and copy
// engine, and the launch through the device library's table
// (runtime/collectives_kernels.h, device/collectives.cu), in the pattern of
// runtime/on_stream.cpp. Nothing here synchronises the host, and the only allocation is
// the staging region of the first staged call (collective, on the heap: make one such call
// before capturing a graph if the heap may have to grow), so every call can be captured
// into a CUDA graph: the kernel takes its arguments by value and reads its epochs from the
// signal pad when it runs.
#include "tmashmem/collectives.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/collectives_check.h"
#include "runtime/collectives_forms.h"
#include "runtime/collectives_kernels.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/on_stream_checks.h"
#include "runtime/reachable.h"
#include "runtime/runtime.h"
#include "runtime/stream_kernels.h"
#include "tmashmem/device/signal_pad.h"

namespace tmashmem {
namespace {

const CollectiveKernels* g_coll_kernels = nullptr;

static_assert(TMASHMEM_COLL_MAX_SMS == TMASHMEM_SIGNAL_PAD_COLL_SLOTS,
              "one signal-pad slot per CTA of a collective");

// Data per PE per CTA of the default CTA count: the n_sms sweep at 2 and 4 PEs (docs/runs.md,
// "Seventh session") found the fastest counts at 4-8 KiB per CTA for all-reduce, all-gather
// and reduce-scatter from 16 KiB to 1 MiB (32 KiB per CTA was up to 1.7 us slower per call),
// and one CTA best at 4 KiB.
constexpr size_t kBytesPerCta = 8 * 1024;
// What the public calls hand to `run`.
struct Request {
  CollKind kind;
  const char* call;
  void* dest;
  size_t dest_bytes;  // bytes of dest the call touches on this PE
  const void* src;
  size_t src_bytes;
  uint64_t size;  // the call's own size argument (bytes or elements)
  uint32_t dtype = TMASHMEM_DTYPE_U8;
  int op = TMASHMEM_REDUCE_SUM;
  int algo = TMASHMEM_ALLREDUCE_AUTO;
  int root = 0;
  int n_sms = 0;
  size_t per_pe_bytes = 0;  // data per PE that the CTAs split (for the default CTA count)
  size_t piece_bytes = 0;   // what one PE sends each peer (the staged forms' unit)
  const uint64_t* arrays[3] = {nullptr, nullptr, nullptr};  // alltoallv
  bool in_place_ok = false;
};

// The PEs whose collectives share a GPU, as the CTA choices count them: every PE's CTAs on one
// GPU must be resident at once for the handshakes to progress. The most on any GPU of the job,
// so that every PE's default CTA count is the same (the symmetry check compares them).
int pes_sharing_gpu(const Runtime& rt) { return std::max(1, rt.most_pes_per_gpu); }

// Half of this PE's share of the SMs: SMs / (2 x PEs sharing the GPU), with the fewest SMs of
// any PE's GPU. The default CTA count stays within it, and a launch is overlapped only within
// it (so two collectives of every sharing PE fit at one CTA per SM).
int half_share_ctas(const Runtime& rt) {
  return std::max(1, rt.fewest_sms) / (2 * pes_sharing_gpu(rt));
}

// The default CTA count (collectives.h): half of this PE's share of the SMs, at most
// TMASHMEM_COLL_MAX_SMS, and one CTA per kBytesPerCta of data per PE. Half, because the
// collectives' CTAs spend most of their time waiting for memory, and a kernel overlapped
// with them keeps the rest; the share, because PEs sharing one GPU (under MPS) must all
// have their CTAs resident at once for the handshakes to progress.
int default_ctas(const Runtime& rt, size_t per_pe_bytes) {
  int ctas = std::max(1, half_share_ctas(rt));
  ctas = std::min(ctas, TMASHMEM_COLL_MAX_SMS);
  const size_t by_size = std::max<size_t>(1, (per_pe_bytes + kBytesPerCta - 1) / kBytesPerCta);
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(ctas), by_size));
}

// Whether a collective of `ctas` CTAs may share the GPU with the one after it on its stream
// (TMASHMEM_COLL_PDL; device/driver_launch.h): such a kernel lets the next be scheduled early
// (next_trigger), and only such a call is launched overlapped with the one before it. Every
// PE sharing the GPU must still get its CTAs resident for the handshakes to progress; with
// both sides of every overlap within SMs / (2 x sharing PEs) CTAs, two collectives of every
// PE fit at one CTA per SM.
bool fits_twice(const Runtime& rt, int ctas) {
  return rt.config.coll_pdl && ctas <= half_share_ctas(rt);
}

// Whether a call's kernel is launched overlapped with the grid before it on `stream`: where it
// fits twice, and not on the default and per-thread streams, where it was not measured.
bool overlap_launch(bool fits, tmashmem_stream_t stream) {
  return fits && stream != nullptr && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD;
}

// Where a call's kernel lets the next collective on `stream` be scheduled (CollTrigger), once it
// fits twice (`fits`, from fits_twice): right after its wait where the stream is being captured
// into a graph, else after its step. Measured on one H100 under MPS (docs/runs.md, "Twenty-fourth
// session"), the trigger after the step against the one at the start, every kind at 4 KiB - 256
// KiB: enqueued 1.03-1.26x as fast (medians 1.15 at 2 PEs, 1.08 at 4), in a graph 0.87-1.03x (0.94,
// 0.97). An enqueued launch that the trigger releases slows the running kernel's own first steps; a
// graph's launches are prepared ahead and gain from starting early. The legacy stream is never
// captured.
tmashmem_status_t next_trigger(bool fits, const char* call, tmashmem_stream_t stream,
                               CollTrigger* out) {
  *out = CollTrigger::None;
  if (!fits) return TMASHMEM_SUCCESS;
  *out = CollTrigger::AfterStep;
  if (stream == nullptr || stream == CU_STREAM_LEGACY) return TMASHMEM_SUCCESS;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = driver().cuStreamIsCapturing(stream, &capture);
  if (r != CUDA_SUCCESS)
    return cuda_error(
        r,
        format_string("%s: cuStreamIsCapturing(stream %p)", call, static_cast<void*>(stream))
            .c_str(),
        __FILE__, __LINE__, kLiveStreamFix);
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) *out = CollTrigger::AtStart;
  return TMASHMEM_SUCCESS;
}

int resolve_algo(int requested, size_t bytes, int n_pes) {
  if (requested != TMASHMEM_ALLREDUCE_AUTO) return requested;
  size_t limit = TMASHMEM_ALLREDUCE_ONE_SHOT_BYTES;
  if (n_pes > 2) limit = limit * 2 / static_cast<size_t>(n_pes);
  return bytes <= limit ? TMASHMEM_ALLREDUCE_ONE_SHOT : TMASHMEM_ALLREDUCE_TWO_SHOT;
}

tmashmem_status_t check_request(const Runtime& rt, const Request& q) {
  const char* call = q.call;
  const int n = rt.bootstrap->size();
  if (!every_pe_reachable(rt) || n > static_cast<int>(TMASHMEM_SIGNAL_PAD_COLL_PES))
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                     "%s: the collectives need every PE load/store reachable from every other and "
                     "at most %u PEs (%d PEs, %d on this node); run the job on one node with peer "
                     "access between its GPUs",
                     call, TMASHMEM_SIGNAL_PAD_COLL_PES, n, rt.n_local_pes);
  if (q.n_sms < 0 || q.n_sms > TMASHMEM_COLL_MAX_SMS)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: n_sms %d is out of range; pass 1..%d CTAs, or 0 for the default", call,
                     q.n_sms, TMASHMEM_COLL_MAX_SMS);
  if (q.kind == CollKind::ReduceScatter || q.kind == CollKind::Allreduce)
    TMASHMEM_TRY(coll_check_reduction(call, q.dtype, q.op));
  if (q.kind == CollKind::Allreduce && q.algo != TMASHMEM_ALLREDUCE_AUTO &&
      q.algo != TMASHMEM_ALLREDUCE_ONE_SHOT && q.algo != TMASHMEM_ALLREDUCE_TWO_SHOT)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: algo %d is not an all-reduce algorithm; pass TMASHMEM_ALLREDUCE_AUTO "
                     "(%d), _ONE_SHOT (%d) or _TWO_SHOT (%d)",
                     call, q.algo, TMASHMEM_ALLREDUCE_AUTO, TMASHMEM_ALLREDUCE_ONE_SHOT,
                     TMASHMEM_ALLREDUCE_TWO_SHOT);
  if (q.kind == CollKind::Broadcast && (q.root < 0 || q.root >= n))
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: root %d is out of range; pass a PE in [0, %d) (tmashmem_n_pes())", call,
                     q.root, n);
  if (q.dest_bytes == 0 && q.src_bytes == 0) return TMASHMEM_SUCCESS;
  const size_t align = q.kind == CollKind::ReduceScatter || q.kind == CollKind::Allreduce
                           ? coll_dtype_bytes(q.dtype)
                           : 1;
  const CollBuffer dest{"dest", q.dest, q.dest_bytes}, src{"src", q.src, q.src_bytes};
  if (q.dest_bytes) TMASHMEM_TRY(coll_check_buffer(rt, call, dest, align));
  if (q.src_bytes) TMASHMEM_TRY(coll_check_buffer(rt, call, src, align));
  if (q.dest_bytes && q.src_bytes && !(q.in_place_ok && q.dest == q.src))
    TMASHMEM_TRY(coll_check_disjoint(call, dest, src));
  if (q.kind == CollKind::Alltoallv) {
    static const char* const names[3] = {"send_counts", "send_offsets", "recv_offsets"};
    for (int i = 0; i < 3; ++i) {
      const CollBuffer a{names[i], q.arrays[i], static_cast<size_t>(n) * sizeof(uint64_t)};
      TMASHMEM_TRY(coll_check_buffer(rt, call, a, sizeof(uint64_t)));
      if (q.dest_bytes) TMASHMEM_TRY(coll_check_disjoint(call, a, dest));
    }
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t run(const Request& q, tmashmem_stream_t stream) {
  Runtime& rt = runtime();
  CollArgs args{};
  int ordinal = -1;
  bool overlap = false;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    TMASHMEM_TRY(check_initialized(q.call));
    TMASHMEM_TRY(check_request(rt, q));
    const int n = rt.bootstrap->size();
    const int algo = q.kind == CollKind::Allreduce ? resolve_algo(q.algo, q.per_pe_bytes, n) : 0;
    int ctas = q.n_sms > 0 ? q.n_sms : default_ctas(rt, q.per_pe_bytes);
    // The LL form first, where it applies; else the staged form, where it applies.
    const CollFormQuery form{q.kind, algo, n, q.piece_bytes, ctas, q.n_sms > 0};
    const int low_latency = coll_low_latency_ctas(rt, form);
    const int staged = low_latency > 0 ? 0 : coll_staged_ctas(form, rt.config.coll_staged);
    if (low_latency > 0) ctas = low_latency;
    if (staged > 0) ctas = staged;
    // Every argument that decides what the kernels do, with pointers as heap offsets
    // (what agrees across PEs).
    CollArg checked[kMaxCollArgs] = {
        // the first kCommonArgs, for every kind
        {"dest (heap offset)", coll_heap_offset(rt, q.dest)},
        {"src (heap offset)", coll_heap_offset(rt, q.src)},
        {"size", q.size},
        {"dtype", q.dtype},
        {"op", static_cast<uint64_t>(q.op)},
        {"algo", static_cast<uint64_t>(algo)},
        {"root", static_cast<uint64_t>(q.root)},
        {"CTAs (n_sms, or its default)", static_cast<uint64_t>(ctas)},
    };
    constexpr size_t kCommonArgs = 8;
    size_t n_checked = kCommonArgs;
    if (q.kind == CollKind::Alltoallv) {
      checked[n_checked++] = {"dest_bytes", q.dest_bytes};
      checked[n_checked++] = {"src_bytes", q.src_bytes};
      checked[n_checked++] = {"send_counts (heap offset)", coll_heap_offset(rt, q.arrays[0])};
      checked[n_checked++] = {"send_offsets (heap offset)", coll_heap_offset(rt, q.arrays[1])};
      checked[n_checked++] = {"recv_offsets (heap offset)", coll_heap_offset(rt, q.arrays[2])};
    }
    TMASHMEM_TRY(coll_check_symmetric(rt, q.call, checked, n_checked));
    if (q.dest_bytes == 0 && q.src_bytes == 0) return TMASHMEM_SUCCESS;  // nothing to move
    if (low_latency > 0) {
      args.ll_state = rt.coll_low_latency;
      args.low_latency = 1;
      args.ll_bytes = kCollLowLatencyBytes;
    }
    if (staged > 0) {
      TMASHMEM_TRY(coll_staging_region(rt, q.call, &args.staging));
      args.staged = 1;
      args.staging_slot_bytes = coll_staging_slot_size(n);
    }

    fill_device_ctx(rt, &args.ctx);
    args.kind = q.kind;
    args.dtype = q.dtype;
    args.op = q.op;
    args.algo = algo;
    args.push = q.kind == CollKind::Allgather || q.kind == CollKind::Alltoall ||
                q.kind == CollKind::Alltoallv;
    args.root = q.root;
    args.n_blocks = ctas;
    args.dest = q.dest;
    args.src = q.src;
    args.size = q.size;
    args.dest_bytes = q.dest_bytes;
    args.src_bytes = q.src_bytes;
    args.send_counts = q.arrays[0];
    args.send_offsets = q.arrays[1];
    args.recv_offsets = q.arrays[2];
    args.timeout_ns = static_cast<uint64_t>(rt.config.bootstrap_timeout_ms) * 1000000ull;
    ordinal = rt.device_ordinal;
    const bool fits = fits_twice(rt, ctas);
    TMASHMEM_TRY(next_trigger(fits, q.call, stream, &args.next_trigger));
    overlap = overlap_launch(fits, stream);
  }
  const StreamKernels* device = stream_kernels();
  const CollectiveKernels* k = g_coll_kernels;
  if (device == nullptr || k == nullptr)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED, "%s: launching the collective kernel: %s",
                     q.call, kNoKernelsMessage);
  int previous = -1;
  const CudaOutcome entered = device->enter_device(ordinal, &previous);
  if (entered.code != 0)
    return cuda_error(entered, format_string("%s: making CUDA device %d current (cudaGetDevice, "
                                             "cudaSetDevice)",
                                             q.call, ordinal)
                                   .c_str());
  const CudaOutcome done = k->launch(args, stream, overlap);
  device->leave_device(previous);
  if (done.code != 0)
    return cuda_error(done, format_string("%s: launching the collective kernel (%d CTA%s)", q.call,
                                          args.n_blocks, args.n_blocks == 1 ? "" : "s")
                                .c_str());
  return TMASHMEM_SUCCESS;
}

// n * per, or an error naming the call and the sizes when it does not fit in size_t.
tmashmem_status_t times_pes(const char* call, const char* name, size_t per, int n, size_t* out) {
  if (per != 0 && static_cast<size_t>(n) > SIZE_MAX / per)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: %s %zu times %d PEs overflows the address space; pass a smaller size",
                     call, name, per, n);
  *out = per * static_cast<size_t>(n);
  return TMASHMEM_SUCCESS;
}

int n_pes_or_zero() { return tmashmem_n_pes() > 0 ? tmashmem_n_pes() : 0; }

}  // namespace

void register_collective_kernels(const CollectiveKernels* kernels) { g_coll_kernels = kernels; }
const CollectiveKernels* collective_kernels() { return g_coll_kernels; }

}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

tmashmem_status_t tmashmem_allgather_on_stream(void* dest, const void* src, size_t bytes, int n_sms,
                                               tmashmem_stream_t stream) {
  Request q{CollKind::Allgather, "tmashmem_allgather_on_stream", dest, 0, src, bytes, bytes};
  TMASHMEM_TRY(times_pes(q.call, "bytes", bytes, n_pes_or_zero(), &q.dest_bytes));
  q.n_sms = n_sms;
  q.per_pe_bytes = q.piece_bytes = bytes;
  return run(q, stream);
}

tmashmem_status_t tmashmem_reduce_scatter_on_stream(void* dest, const void* src, size_t count,
                                                    tmashmem_dtype_t dtype, int op, int n_sms,
                                                    tmashmem_stream_t stream) {
  const size_t es = coll_dtype_bytes(dtype);
  Request q{CollKind::ReduceScatter, "tmashmem_reduce_scatter_on_stream", dest, 0, src, 0, count};
  if (es != 0 && count > SIZE_MAX / es)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s: count %zu is too large", q.call, count);
  q.dest_bytes = count * es;
  TMASHMEM_TRY(
      times_pes(q.call, "count * element size", q.dest_bytes, n_pes_or_zero(), &q.src_bytes));
  q.dtype = dtype;
  q.op = op;
  q.n_sms = n_sms;
  q.per_pe_bytes = q.piece_bytes = count * es;
  return run(q, stream);
}

tmashmem_status_t tmashmem_allreduce_on_stream(void* dest, const void* src, size_t count,
                                               tmashmem_dtype_t dtype, int op, int algo, int n_sms,
                                               tmashmem_stream_t stream) {
  const size_t es = coll_dtype_bytes(dtype);
  Request q{CollKind::Allreduce, "tmashmem_allreduce_on_stream", dest, 0, src, 0, count};
  if (es != 0 && count > SIZE_MAX / es)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE, "%s: count %zu is too large", q.call, count);
  q.dest_bytes = q.src_bytes = count * es;
  q.dtype = dtype;
  q.op = op;
  q.algo = algo;
  q.n_sms = n_sms;
  q.per_pe_bytes = q.piece_bytes = count * es;
  return run(q, stream);
}

tmashmem_status_t tmashmem_alltoall_on_stream(void* dest, const void* src, size_t bytes, int n_sms,
                                              tmashmem_stream_t stream) {
  Request q{CollKind::Alltoall, "tmashmem_alltoall_on_stream", dest, 0, src, 0, bytes};
  TMASHMEM_TRY(times_pes(q.call, "bytes", bytes, n_pes_or_zero(), &q.dest_bytes));
  q.src_bytes = q.dest_bytes;
  q.n_sms = n_sms;
  q.per_pe_bytes = q.dest_bytes;
  q.piece_bytes = bytes;
  return run(q, stream);
}

tmashmem_status_t tmashmem_alltoallv_on_stream(void* dest, size_t dest_bytes, const void* src,
                                               size_t src_bytes, const uint64_t* send_counts,
                                               const uint64_t* send_offsets,
                                               const uint64_t* recv_offsets, int n_sms,
                                               tmashmem_stream_t stream) {
  Request q{
      CollKind::Alltoallv, "tmashmem_alltoallv_on_stream", dest, dest_bytes, src, src_bytes, 0};
  q.arrays[0] = send_counts;
  q.arrays[1] = send_offsets;
  q.arrays[2] = recv_offsets;
  q.n_sms = n_sms;
  q.per_pe_bytes = src_bytes;
  return run(q, stream);
}

tmashmem_status_t tmashmem_broadcast_on_stream(void* dest, const void* src, size_t bytes, int root,
                                               int n_sms, tmashmem_stream_t stream) {
  Request q{CollKind::Broadcast, "tmashmem_broadcast_on_stream", dest, bytes, src, bytes, bytes};
  q.root = root;
  q.n_sms = n_sms;
  q.per_pe_bytes = q.piece_bytes = bytes;
  q.in_place_ok = true;
  return run(q, stream);
}

}  // extern "C"
#pragma GCC visibility pop
