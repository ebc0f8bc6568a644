// Helpers shared by the device-API GPU tests: a tmashmem session per test case,
// CUDA error checks that report the rank, and a hash-based byte pattern that the
// GPU generates fast and the host recomputes as the reference.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/catch.h"
#include "common/test_util.h"
#include "tmashmem/device.cuh"
#include "tmashmem/device/detail/sreg.cuh"
#include "tmashmem/tmashmem.h"

namespace gpu_test {

using tmashmem_test::all_ranks;
using tmashmem_test::mpi_rank;
using tmashmem_test::run_seed;

// Bound on every device-side wait in the tests: a bug fails, it does not hang.
// Generous, because PEs sharing a GPU without MPS time-slice.
constexpr uint64_t kWaitNs = 20ull * 1000 * 1000 * 1000;

// Spins about `ns` nanoseconds on the GPU's global timer (a PE made late on purpose).
__device__ inline void spin_ns(uint64_t ns) {
  for (const uint64_t t0 = tmashmem::detail::global_timer_ns();
       tmashmem::detail::global_timer_ns() - t0 < ns;) {
  }
}

// ---- the reference pattern ----------------------------------------------------

__host__ __device__ inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Byte i of the stream named by `seed` (eight bytes per hash).
__host__ __device__ inline uint8_t pattern_byte(uint64_t seed, uint64_t i) {
  return static_cast<uint8_t>(mix64(seed ^ mix64(i >> 3)) >> (8 * (i & 7)));
}

// A seed for (purpose, pe, round) that is fresh every run and the same on every PE.
inline uint64_t seed_for(uint64_t purpose, int pe, uint64_t round = 0) {
  return mix64(run_seed() ^ mix64(purpose * 0x100000001B3ull + uint64_t(pe)) ^ mix64(~round));
}

// dst[i] = pattern_byte(seed, base + i) for i in [0, bytes). A template, so that
// the header may be included by several translation units.
template <int kUnused = 0>
__global__ void fill_pattern_kernel(uint8_t* dst, size_t bytes, uint64_t seed, uint64_t base) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < bytes;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = pattern_byte(seed, base + i);
}

inline cudaError_t fill_pattern(void* dst, size_t bytes, uint64_t seed, uint64_t base = 0,
                                cudaStream_t stream = 0) {
  if (bytes == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(bytes / 4096 + 1 < 1024 ? bytes / 4096 + 1 : 1024);
  fill_pattern_kernel<><<<blocks, 256, 0, stream>>>(static_cast<uint8_t*>(dst), bytes, seed, base);
  return cudaGetLastError();
}

// ---- reporting ------------------------------------------------------------------

inline bool cuda_ok(cudaError_t error, const char* what, int line) {
  if (error == cudaSuccess) return true;
  std::printf("[PE %d] line %d: %s failed: %s\n", mpi_rank(), line, what,
              cudaGetErrorString(error));
  return false;
}
#define GPU_TEST_CUDA(call) ::gpu_test::cuda_ok((call), #call, __LINE__)

inline bool tm_ok(tmashmem_status_t status, const char* what, int line) {
  if (status == TMASHMEM_SUCCESS) return true;
  std::printf("[PE %d] line %d: %s failed (%s): %s\n", mpi_rank(), line, what,
              tmashmem_error_string(status), tmashmem_last_error());
  return false;
}
#define GPU_TEST_TM(call) ::gpu_test::tm_ok((call), #call, __LINE__)

// An unsigned environment override for loop counts (stress rounds), else `fallback`.
inline uint64_t env_count(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoull(text, nullptr, 0);
}

// ---- a tmashmem session per test case -------------------------------------------

// Initialises tmashmem (collective) and makes its device current; finalises on
// destruction. Check `ok` with all_ranks before using it.
class Session {
 public:
  Session() {
    tmashmem_init_attr_t attr;
    tmashmem_init_attr_set_defaults(&attr);
    // 128 MiB chunks, so that the larger cases span chunk boundaries; a non-zero
    // TMASHMEM_TEST_CHUNK_SIZE (bytes) overrides it, e.g. to tell a sanitizer report at
    // a chunk boundary from a real one.
    const uint64_t chunk = env_count("TMASHMEM_TEST_CHUNK_SIZE", 0);
    attr.chunk_size = chunk != 0 ? static_cast<size_t>(chunk) : size_t(128) << 20;
    ok = GPU_TEST_TM(tmashmem_init_attr(&attr));
    if (ok) {
      me = tmashmem_my_pe();
      n = tmashmem_n_pes();
      ok = GPU_TEST_CUDA(cudaSetDevice(tmashmem_device()));
    }
  }
  ~Session() {
    if (tmashmem_initialized()) {
      cudaDeviceSynchronize();
      tmashmem_finalize();
    }
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The device context; take it after the allocations a kernel uses.
  tmashmem_ctx_t ctx() const {
    tmashmem_ctx_t c{};
    GPU_TEST_TM(tmashmem_device_ctx(&c));
    return c;
  }

  bool ok = false;
  int me = -1;
  int n = 0;
};

// All PEs' kernels done and visible: device sync, then the host barrier.
inline bool sync_and_barrier() {
  bool ok = GPU_TEST_CUDA(cudaDeviceSynchronize());
  ok &= GPU_TEST_TM(tmashmem_barrier_all());
  return ok;
}

}  // namespace gpu_test
