// Each runtime's face to the shared benchmark code: `Runtime` (host: init, symmetric memory,
// launches) and its device half `Device`, the calls kernels.cuh makes. PERF_NVSHMEM selects
// NVSHMEM's (unique-id bootstrap, the id broadcast over MPI; built only when
// TMASHMEM_NVSHMEM_HOME names an install: it needs -rdc and NVSHMEM's device library), else
// tmashmem's, with PtxDevice: bare PTX signals for the ping-pong.
#pragma once

#include <cuda_runtime.h>

#include <string>

#ifdef PERF_NVSHMEM
#define PERF_TMASHMEM 0
#include <nvshmem.h>
#include <nvshmemx.h>
#else
#define PERF_TMASHMEM 1
#include "tmashmem/device.cuh"
#include "tmashmem/tmashmem.h"
#endif
#include "tools/perf/harness.cuh"

namespace perf {

// The collectives of the coll test (perf_coll.cuh), in its order; kCollNames are its ops.
enum class Coll { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };
inline const char* const kCollNames[] = {"allreduce", "allgather", "reducescatter", "alltoall",
                                         "broadcast"};

#if PERF_TMASHMEM
inline void tm_check(tmashmem_status_t st, const char* what) {
  if (st != TMASHMEM_SUCCESS)
    die(std::string(what) + ": " + tmashmem_error_string(st) + ": " + tmashmem_last_error());
}

struct TmDevice {
  tmashmem::Ctx ctx;
  static constexpr bool kSyncAllCompletesStores = true;  // p() stores are visible after sync_all
  __device__ int my_pe() const { return ctx.my_pe; }
  __device__ int n_pes() const { return ctx.n_pes; }
  template <bool kPut>
  __device__ void block(char* dst, const char* src, size_t n, int pe) const {
    if constexpr (kPut)
      tmashmem::putmem_block(ctx, dst, src, n, pe);
    else
      tmashmem::getmem_block(ctx, dst, src, n, pe);
  }
  // blockDim.x issuers per CTA, each with its own part and its own staging.
  __device__ Range nbi_share(Range cta) const {
    const Range r = share(cta.end - cta.begin, threadIdx.x, blockDim.x);
    return {cta.begin + r.begin, cta.begin + r.end};
  }
  template <bool kPut>
  __device__ void nbi(char* dst, const char* src, size_t n, int pe, unsigned char* smem,
                      uint32_t stage_bytes) const {
    const tmashmem::BulkStage stage{smem + size_t(threadIdx.x) * stage_bytes, stage_bytes};
    if constexpr (kPut)
      tmashmem::putmem_nbi(ctx, dst, src, n, pe, stage);
    else
      tmashmem::getmem_nbi(ctx, dst, src, n, pe, stage);
  }
  __device__ void quiet_cta() const { tmashmem::quiet(); }
  __device__ void quiet() const { tmashmem::quiet(); }
  __device__ void p(uint64_t* dst, uint64_t v, int pe) const { tmashmem::p(ctx, dst, v, pe); }
  __device__ void put(char* dst, const char* src, size_t n, int pe) const {
    tmashmem::putmem(ctx, dst, src, n, pe);
  }
  template <bool kAdd>
  __device__ void put_signal(char* dst, const char* src, size_t n, uint64_t* sig, uint64_t v,
                             int pe) const {
    tmashmem::put_signal(ctx, dst, src, n, sig, v,
                         kAdd ? tmashmem::SignalOp::Add : tmashmem::SignalOp::Set, pe);
  }
  __device__ void put_signal_block(char* dst, const char* src, size_t n, uint64_t* sig, uint64_t v,
                                   int pe) const {
    tmashmem::put_signal_block(ctx, dst, src, n, sig, v, tmashmem::SignalOp::Set, pe);
  }
  __device__ void signal(uint64_t* sig, uint64_t v, int pe) const {
    tmashmem::signal_op(ctx, sig, v, tmashmem::SignalOp::Set, pe);
  }
  __device__ void signal_relaxed(uint64_t* sig, uint64_t v, int pe) const {
    tmashmem::signal_op_relaxed(ctx, sig, v, tmashmem::SignalOp::Set, pe);
  }
  // timeout_ns == 0 waits forever.
  __device__ bool wait_ge(const uint64_t* sig, uint64_t v, uint64_t timeout_ns, int from) const {
    return tmashmem::signal_wait_until(ctx, sig, tmashmem::Cmp::GE, v, timeout_ns, from) ==
           tmashmem::Status::Ok;
  }
  __device__ bool barrier_all(uint64_t timeout_ns) const {
    return tmashmem::barrier_all(ctx, timeout_ns) == tmashmem::Status::Ok;
  }
  __device__ bool sync_all(uint64_t timeout_ns) const {
    return tmashmem::sync_all(ctx, timeout_ns) == tmashmem::Status::Ok;
  }
  __device__ uint64_t read_local(const uint64_t* p) const { return tmashmem::g(ctx, p, ctx.my_pe); }
};

// The signal and the wait of a ping-pong as single PTX operations of the benchmark's own
// (the library's calls are not used), to price each ordering choice beside signal_op_relaxed
// + signal_wait_until in the same kernel: a volatile store + volatile poll (NVSHMEM's
// operations), relaxed.sys + acquire.sys poll, relaxed.gpu + relaxed.gpu poll + fence, and
// release.sys + acquire.sys poll.
enum class Ptx { Volatile, RelaxedSys, RelaxedGpuFence, ReleaseSys };
template <Ptx kPtx>
struct PtxDevice {
  tmashmem::Ctx ctx;
  __device__ void signal_relaxed(uint64_t* sig, uint64_t v, int pe) const {
    uint64_t* p = tmashmem::ptr(ctx, sig, pe);
    if constexpr (kPtx == Ptx::Volatile)
      asm volatile("st.volatile.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    if constexpr (kPtx == Ptx::RelaxedSys)
      asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    if constexpr (kPtx == Ptx::RelaxedGpuFence)
      asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    if constexpr (kPtx == Ptx::ReleaseSys)
      asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  }
  __device__ bool wait_ge(const uint64_t* sig, uint64_t v, uint64_t, int) const {
    for (uint64_t seen = 0; seen < v;) {
      if constexpr (kPtx == Ptx::Volatile)
        asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(seen) : "l"(sig) : "memory");
      else if constexpr (kPtx == Ptx::RelaxedGpuFence)
        asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(seen) : "l"(sig) : "memory");
      else
        asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(seen) : "l"(sig) : "memory");
    }
    if constexpr (kPtx == Ptx::RelaxedGpuFence) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    return true;
  }
};

struct Runtime {
  using Device = TmDevice;
  static constexpr const char* kName = "tmashmem";

  static void bootstrap() {}  // untimed set-up before init (none)
  static void init() { tm_check(tmashmem_init(), "tmashmem_init"); }
  static void finalize() { tm_check(tmashmem_finalize(), "tmashmem_finalize"); }
  static int my_pe() { return tmashmem_my_pe(); }
  static int n_pes() { return tmashmem_n_pes(); }
  static void barrier_all() { tm_check(tmashmem_barrier_all(), "tmashmem_barrier_all"); }
  static char* alloc(size_t bytes) {
    void* p = tmashmem_malloc(bytes);
    if (!p) die("tmashmem_malloc(" + std::to_string(bytes) + "): " + tmashmem_last_error());
    return static_cast<char*>(p);
  }
  static void free(void* p) { tm_check(tmashmem_free(p), "tmashmem_free"); }
  template <class T>
  static T* peer(T* p, int pe) {
    void* q = tmashmem_ptr(p, pe);
    if (!q) die("tmashmem_ptr: PE " + std::to_string(pe) + " is not load/store reachable");
    return static_cast<T*>(q);
  }
  static Device device() {
    Device d;
    tm_check(tmashmem_device_ctx(&d.ctx), "tmashmem_device_ctx");
    return d;
  }
  // grid_sync: every CTA must be resident (cooperative launch; where it is refused, an
  // ordinary one: the device waits are bounded either way).
  static void launch(const void* kernel, int ctas, int threads, void** args, cudaStream_t s,
                     bool grid_sync) {
    if (grid_sync) {
      const cudaError_t e =
          cudaLaunchCooperativeKernel(kernel, dim3(ctas), dim3(threads), args, 0, s);
      if (e == cudaSuccess) return;
      (void)cudaGetLastError();
      static bool told = false;
      if (!told && mpi_rank() == 0)
        std::fprintf(stderr, "cooperative launch refused (%s); launching normally\n",
                     cudaGetErrorString(e));
      told = true;
    }
    PERF_CUDA(cudaLaunchKernel(kernel, dim3(ctas), dim3(threads), args, 0, s));
  }
  // Enqueues collective `c` of `bytes` of float on `s` (sizes as perf_coll.cuh says); n_sms
  // and the all-reduce algorithm as tmashmem/collectives.h defines them.
  static void coll(Coll c, void* dst, const void* src, size_t bytes, int n_sms, int algo,
                   cudaStream_t s) {
    const size_t part = bytes / size_t(n_pes());  // what one PE contributes or receives
    const tmashmem_dtype_t f32 = TMASHMEM_DTYPE_F32;
    switch (c) {
      case Coll::AllReduce:
        return tm_check(tmashmem_allreduce_on_stream(dst, src, bytes / 4, f32, TMASHMEM_REDUCE_SUM,
                                                     algo, n_sms, s),
                        "tmashmem_allreduce_on_stream");
      case Coll::AllGather:
        return tm_check(tmashmem_allgather_on_stream(dst, src, part, n_sms, s),
                        "tmashmem_allgather_on_stream");
      case Coll::ReduceScatter:
        return tm_check(tmashmem_reduce_scatter_on_stream(dst, src, part / 4, f32,
                                                          TMASHMEM_REDUCE_SUM, n_sms, s),
                        "tmashmem_reduce_scatter_on_stream");
      case Coll::AllToAll:
        return tm_check(tmashmem_alltoall_on_stream(dst, src, part, n_sms, s),
                        "tmashmem_alltoall_on_stream");
      case Coll::Broadcast:
        return tm_check(tmashmem_broadcast_on_stream(dst, src, bytes, 0, n_sms, s),
                        "tmashmem_broadcast_on_stream");
    }
  }
};

#else  // NVSHMEM

struct NvDevice {
  // nvshmemx_sync_all_block does not complete earlier stores: the barrier check quiets first.
  static constexpr bool kSyncAllCompletesStores = false;
  __device__ int my_pe() const { return nvshmem_my_pe(); }
  __device__ int n_pes() const { return nvshmem_n_pes(); }
  template <bool kPut>
  __device__ void block(char* dst, const char* src, size_t n, int pe) const {
    if constexpr (kPut)
      nvshmemx_putmem_block(dst, src, n, pe);
    else
      nvshmemx_getmem_block(dst, src, n, pe);
  }
  __device__ Range nbi_share(Range cta) const { return cta; }  // block-scope calls
  template <bool kPut>
  __device__ void nbi(char* dst, const char* src, size_t n, int pe, unsigned char*,
                      uint32_t) const {
    if constexpr (kPut)
      nvshmemx_putmem_nbi_block(dst, src, n, pe);
    else
      nvshmemx_getmem_nbi_block(dst, src, n, pe);
  }
  __device__ void quiet_cta() const {
    __syncthreads();
    if (threadIdx.x == 0) nvshmem_quiet();
  }
  __device__ void quiet() const { nvshmem_quiet(); }
  __device__ void p(uint64_t* dst, uint64_t v, int pe) const { nvshmem_uint64_p(dst, v, pe); }
  __device__ void put(char* dst, const char* src, size_t n, int pe) const {
    nvshmem_putmem(dst, src, n, pe);
  }
  template <bool kAdd>
  __device__ void put_signal(char* dst, const char* src, size_t n, uint64_t* sig, uint64_t v,
                             int pe) const {
    nvshmem_putmem_signal(dst, src, n, sig, v, kAdd ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET, pe);
  }
  __device__ void put_signal_block(char* dst, const char* src, size_t n, uint64_t* sig, uint64_t v,
                                   int pe) const {
    nvshmemx_putmem_signal_block(dst, src, n, sig, v, NVSHMEM_SIGNAL_SET, pe);
  }
  __device__ void signal(uint64_t* sig, uint64_t v, int pe) const {
    nvshmemx_signal_op(sig, v, NVSHMEM_SIGNAL_SET, pe);
  }
  // NVSHMEM's wait has no bound: the host watchdog (sync_stream) ends a hung run.
  __device__ bool wait_ge(uint64_t* sig, uint64_t v, uint64_t, int) const {
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
    return true;
  }
  __device__ bool barrier_all(uint64_t) const {
    nvshmemx_barrier_all_block();
    return true;
  }
  __device__ bool sync_all(uint64_t) const {
    nvshmemx_sync_all_block();
    return true;
  }
  __device__ uint64_t read_local(const uint64_t* p) const {
    return *reinterpret_cast<const volatile uint64_t*>(p);
  }
};

struct Runtime {
  using Device = NvDevice;
  static constexpr const char* kName = "nvshmem";

  // Untimed: rank 0's unique id, broadcast over MPI.
  static void bootstrap() {
    if (mpi_rank() == 0 && nvshmemx_get_uniqueid(&id()) != 0) die("nvshmemx_get_uniqueid failed");
    MPI_Bcast(&id(), sizeof(nvshmemx_uniqueid_t), MPI_BYTE, 0, MPI_COMM_WORLD);
  }
  static void init() {
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(mpi_rank(), mpi_size(), &id(), &attr) != 0 ||
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0)
      die("nvshmemx_init_attr with the unique id failed");
    if (nvshmem_my_pe() != mpi_rank() || nvshmem_n_pes() != mpi_size())
      die("NVSHMEM PE numbering differs from the MPI ranks");
  }
  static void finalize() { nvshmem_finalize(); }
  static int my_pe() { return nvshmem_my_pe(); }
  static int n_pes() { return nvshmem_n_pes(); }
  static void barrier_all() { nvshmem_barrier_all(); }
  static char* alloc(size_t bytes) {
    void* p = nvshmem_malloc(bytes);
    if (!p)
      die("nvshmem_malloc(" + std::to_string(bytes) +
          ") failed: raise NVSHMEM_SYMMETRIC_SIZE (run-perf.sh sets it)");
    return static_cast<char*>(p);
  }
  static void free(void* p) { nvshmem_free(p); }
  template <class T>
  static T* peer(T* p, int pe) {
    void* q = nvshmem_ptr(p, pe);
    if (!q) die("nvshmem_ptr: PE " + std::to_string(pe) + " is not load/store reachable");
    return static_cast<T*>(q);
  }
  static Device device() { return {}; }
  // Every kernel that waits on a peer goes through NVSHMEM's collective launch.
  static void launch(const void* kernel, int ctas, int threads, void** args, cudaStream_t s, bool) {
    const int st = nvshmemx_collective_launch(kernel, dim3(ctas), dim3(threads), args, 0, s);
    if (st != 0) die("nvshmemx_collective_launch failed with status " + std::to_string(st));
  }
  // Enqueues collective `c` of `bytes` of float on `s` (sizes as perf_coll.cuh says): NVSHMEM
  // picks its own CTAs and algorithm (n_sms, algo unused).
  static void coll(Coll c, void* dst, const void* src, size_t bytes, int, int, cudaStream_t s) {
    auto* d = static_cast<float*>(dst);
    const auto* x = static_cast<const float*>(src);
    const size_t count = bytes / 4, part = count / size_t(nvshmem_n_pes());
    const nvshmem_team_t world = NVSHMEM_TEAM_WORLD;
    int st = 0;
    switch (c) {
      case Coll::AllReduce:
        st = nvshmemx_float_sum_reduce_on_stream(world, d, x, count, s);
        break;
      case Coll::AllGather:
        st = nvshmemx_float_fcollect_on_stream(world, d, x, part, s);
        break;
      case Coll::ReduceScatter:
        st = nvshmemx_float_sum_reducescatter_on_stream(world, d, x, part, s);
        break;
      case Coll::AllToAll:
        st = nvshmemx_float_alltoall_on_stream(world, d, x, part, s);
        break;
      case Coll::Broadcast:
        st = nvshmemx_float_broadcast_on_stream(world, d, x, count, 0, s);
        break;
    }
    if (st != 0)
      die(std::string(kCollNames[int(c)]) + " on stream failed with status " + std::to_string(st));
  }

 private:
  static nvshmemx_uniqueid_t& id() {
    static nvshmemx_uniqueid_t the_id = NVSHMEMX_UNIQUEID_INITIALIZER;
    return the_id;
  }
};

#endif

}  // namespace perf
