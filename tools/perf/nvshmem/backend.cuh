// NVSHMEM's face to the shared benchmark code: the same names as backend_tmashmem.cuh with
// NVSHMEM's calls. Initialised with the unique-id bootstrap, the id broadcast over MPI.
// Built only when TMASHMEM_NVSHMEM_HOME names an install (needs -rdc and its device library).
#pragma once

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <string>

#include "tools/perf/harness.cuh"

namespace perf {

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

 private:
  static nvshmemx_uniqueid_t& id() {
    static nvshmemx_uniqueid_t the_id = NVSHMEMX_UNIQUEID_INITIALIZER;
    return the_id;
  }
};

}  // namespace perf
