// The symmetric heap on a real GPU: sizes from 1 byte to past the first
// chunk; a kernel on every PE writes a PE-specific random pattern into every
// peer's copy through tmashmem_ptr; every PE checks all of it, with guard bytes
// around each segment. Then 50 init/finalize cycles with device free memory back
// to its starting value (within one chunk).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "tmashmem/tmashmem.h"

using namespace tmashmem_test;

namespace {

constexpr size_t kGuard = 64;  // bytes before and after every PE's segment

__host__ __device__ inline uint8_t pattern(uint64_t seed, int writer, int reader, size_t i) {
  uint64_t x = seed ^ (uint64_t(writer) << 48) ^ (uint64_t(reader) << 40) ^ (i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x);
}

__host__ __device__ inline uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0xC3 ^ (i * 29)); }

// Writes segment `writer` (between its guards) of `dst`, which is a peer's copy.
__global__ void write_segment(uint8_t* dst, size_t bytes, uint64_t seed, int writer, int reader) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < bytes; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = pattern(seed, writer, reader, i);
}

bool check(bool ok, const char* what) {
  if (!ok) std::printf("[PE %d] %s\n", mpi_rank(), what);
  return ok;
}

#define CUDA_OK(call) check((call) == cudaSuccess, #call)

tmashmem_init_attr_t attr_with_chunk(size_t chunk) {
  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.chunk_size = chunk;
  return attr;
}

}  // namespace

TEST_CASE("gpu heap: every PE's kernel writes every peer's copy; every byte and guard checks") {
  const size_t chunk = size_t(64) << 20;
  tmashmem_init_attr_t attr = attr_with_chunk(chunk);
  REQUIRE(all_ranks(tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS));
  int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  uint64_t seed = run_seed() ^ 0x1234;
  std::vector<size_t> sizes = {1, 2, 3, 17, 256, 4097, 65535, size_t(1) << 20, (size_t(3) << 20) + 5,
                               chunk - 100, chunk + 4099};
  for (size_t bytes : sizes) {
    size_t slot = bytes + 2 * kGuard;  // [guard | segment | guard] per writer
    size_t total = slot * size_t(n);
    auto* x = static_cast<uint8_t*>(tmashmem_malloc(total));
    REQUIRE(all_ranks(x != nullptr));
    std::vector<uint8_t> host(total);
    for (size_t i = 0; i < total; ++i) host[i] = guard_byte(i);
    bool ok = CUDA_OK(cudaMemcpy(x, host.data(), total, cudaMemcpyHostToDevice));
    ok &= tmashmem_barrier_all() == TMASHMEM_SUCCESS;
    for (int peer = 0; peer < n; ++peer) {
      auto* dst = static_cast<uint8_t*>(tmashmem_ptr(x, peer));
      ok &= check(dst != nullptr, "tmashmem_ptr returned NULL for a PE on the same GPU");
      if (!dst) continue;
      unsigned blocks = static_cast<unsigned>(std::min<size_t>(1024, (bytes + 255) / 256));
      write_segment<<<blocks, 256>>>(dst + size_t(me) * slot + kGuard, bytes, seed, me, peer);
      ok &= CUDA_OK(cudaGetLastError());
    }
    ok &= CUDA_OK(cudaDeviceSynchronize());
    ok &= tmashmem_barrier_all() == TMASHMEM_SUCCESS;
    ok &= CUDA_OK(cudaMemcpy(host.data(), x, total, cudaMemcpyDeviceToHost));
    size_t bad_data = 0, bad_guard = 0;
    for (int w = 0; w < n; ++w) {
      size_t base = size_t(w) * slot;
      for (size_t i = 0; i < kGuard; ++i) {
        bad_guard += host[base + i] != guard_byte(base + i);
        bad_guard += host[base + kGuard + bytes + i] != guard_byte(base + kGuard + bytes + i);
      }
      for (size_t i = 0; i < bytes; ++i) bad_data += host[base + kGuard + i] != pattern(seed, w, me, i);
    }
    if (bad_data || bad_guard)
      std::printf("[PE %d] size %zu: %zu bad data bytes, %zu bad guard bytes\n", me, bytes, bad_data, bad_guard);
    CHECK(all_ranks(ok && bad_data == 0 && bad_guard == 0));
    tmashmem_barrier_all();
    REQUIRE(tmashmem_free(x) == TMASHMEM_SUCCESS);
  }
  REQUIRE(tmashmem_finalize() == TMASHMEM_SUCCESS);
}

TEST_CASE("gpu heap: 50 init/finalize cycles give device memory back") {
  const size_t chunk = size_t(64) << 20;
  size_t free_before = 0, total = 0;
  cudaFree(nullptr);
  MPI_Barrier(MPI_COMM_WORLD);  // every PE's context exists before anyone measures
  REQUIRE(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
  MPI_Barrier(MPI_COMM_WORLD);
  int failures = 0;
  for (int cycle = 0; cycle < 50; ++cycle) {
    tmashmem_init_attr_t attr = attr_with_chunk(chunk);
    if (tmashmem_init_attr(&attr) != TMASHMEM_SUCCESS) {
      std::printf("[PE %d] cycle %d: %s\n", mpi_rank(), cycle, tmashmem_last_error());
      ++failures;
      break;
    }
    int me = tmashmem_my_pe(), n = tmashmem_n_pes();
    auto* p = static_cast<uint8_t*>(tmashmem_malloc(chunk + 1));  // two chunks
    if (!p) ++failures;
    else {
      uint8_t mark = static_cast<uint8_t>(cycle * 7 + me);
      cudaMemcpy(static_cast<uint8_t*>(tmashmem_ptr(p, (me + 1) % n)) + chunk, &mark, 1, cudaMemcpyHostToDevice);
      tmashmem_barrier_all();
      uint8_t seen = 0;
      cudaMemcpy(&seen, p + chunk, 1, cudaMemcpyDeviceToHost);
      failures += seen != static_cast<uint8_t>(cycle * 7 + (me + n - 1) % n);
    }
    if (tmashmem_finalize() != TMASHMEM_SUCCESS) ++failures;
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every PE has released everything
  size_t free_after = 0;
  REQUIRE(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
  long long lost = static_cast<long long>(free_before) - static_cast<long long>(free_after);
  if (mpi_rank() == 0)
    std::printf("gpu heap cycles: device free memory before %zu, after %zu (%lld bytes lost)\n", free_before,
                free_after, lost);
  CHECK(failures == 0);
  CHECK(lost <= static_cast<long long>(chunk));
}
