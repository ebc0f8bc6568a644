// ring_put: the first tmashmem program to read.
//
// Every PE fills a buffer with its own random numbers and, from inside a kernel,
// puts it into the next PE's `inbox` with one put_signal_block: the data, then a
// signal with release semantics. Each PE's kernel then waits for the signal from
// the previous PE (acquire), and the host checks every element it received.
//
// Build: an ordinary CUDA translation unit, WITHOUT relocatable device code (-rdc):
// the kernel takes the device context by value, so the header-only device API
// needs no device linking (docs/design.md, decision 1).
//
// Run:   mpirun -np 4 ./ring_put      (any number of PEs; several may share a GPU)
// Prints "ring_put: N PEs, X bytes, OK", or says what went wrong and exits non-zero
// (2 when there is no CUDA device).
#include <cuda_runtime.h>
#include <mpi.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "example_util.h"
#include "tmashmem/device.cuh"
#include "tmashmem/tmashmem.h"

namespace {

constexpr size_t kCount = (size_t(1) << 20) + 3;          // elements per PE: 4 MiB and a bit
constexpr uint64_t kWaitNs = 30ull * 1000 * 1000 * 1000;  // give up after 30 s

// The kernel: one block puts this PE's data into the next PE's inbox and signals
// it, then waits until the previous PE's data has arrived here.
__global__ void ring_put_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint32_t* inbox,
                                const uint32_t* outbox, size_t count, uint64_t* arrived,
                                int* wait_status) {
  const int me = tmashmem::my_pe(ctx), n = tmashmem::n_pes(ctx);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  // `inbox` and `arrived` are symmetric: the same addresses name the next PE's copies.
  tmashmem::put_signal_block(ctx, inbox, outbox, count * sizeof(uint32_t), arrived, 1,
                             tmashmem::SignalOp::Set, next);
  if (threadIdx.x == 0)
    *wait_status = static_cast<int>(
        tmashmem::signal_wait_until(ctx, arrived, tmashmem::Cmp::EQ, 1, kWaitNs, prev));
}

// PE `pe`'s data: the same numbers on every PE for a given seed.
std::vector<uint32_t> data_of(uint64_t seed, int pe) {
  std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ull * (uint64_t(pe) + 1)));
  std::vector<uint32_t> v(kCount);
  for (uint32_t& x : v) x = static_cast<uint32_t>(rng() >> 17);
  return v;
}

bool cuda_ok(cudaError_t error, const char* what) {
  return example_cuda_ok("ring_put", error, what);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);

  tmashmem_status_t st = tmashmem_init();  // collective: MPI_COMM_WORLD by default
  if (st != TMASHMEM_SUCCESS) {
    const int exit_status = example_init_failure("ring_put", st);
    MPI_Finalize();
    return exit_status;
  }
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  const int prev = (me + n - 1) % n;
  const size_t bytes = kCount * sizeof(uint32_t);
  bool ok = cuda_ok(cudaSetDevice(tmashmem_device()), "cudaSetDevice");

  // Fresh random data every run: PE 0 picks the seed, every PE derives its own.
  uint64_t seed = std::random_device{}();
  seed = seed << 32 ^ std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

  // Symmetric (collective) allocations: the inbox and its signal, zeroed.
  auto* inbox = static_cast<uint32_t*>(tmashmem_malloc(bytes));
  auto* arrived = static_cast<uint64_t*>(tmashmem_calloc(1, sizeof(uint64_t)));
  if (inbox == nullptr || arrived == nullptr) {
    std::printf("ring_put: symmetric allocation failed: %s\n", tmashmem_last_error());
    ok = false;
  }
  uint32_t* outbox = nullptr;  // local memory: the source of a put needs no symmetry
  int* wait_status = nullptr;
  ok = ok && cuda_ok(cudaMalloc(&outbox, bytes), "cudaMalloc") &&
       cuda_ok(cudaMalloc(&wait_status, sizeof(int)), "cudaMalloc");
  const std::vector<uint32_t> mine = data_of(seed, me);
  ok = ok && cuda_ok(cudaMemcpy(outbox, mine.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");

  tmashmem_ctx_t ctx;  // taken after the allocations, so it covers the whole heap
  if (ok && tmashmem_device_ctx(&ctx) != TMASHMEM_SUCCESS) {
    std::printf("ring_put: tmashmem_device_ctx failed: %s\n", tmashmem_last_error());
    ok = false;
  }

  // Every PE must reach the kernel (it waits on its neighbour); a PE that failed
  // above says so, and everyone stops together.
  int all_ok = 0, mine_ok = ok ? 1 : 0;
  MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  ok = all_ok == 1;
  if (ok) {
    ring_put_kernel<<<1, 512>>>(ctx, inbox, outbox, kCount, arrived, wait_status);
    ok = cuda_ok(cudaGetLastError(), "launching ring_put_kernel") &&
         cuda_ok(cudaDeviceSynchronize(), "ring_put_kernel");
  }
  int status = -1;
  if (ok) {
    ok = cuda_ok(cudaMemcpy(&status, wait_status, sizeof(int), cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
    if (ok && status != static_cast<int>(tmashmem::Status::Ok)) {
      std::printf("ring_put: PE %d: no signal from PE %d within 30 s (status %s)\n", me, prev,
                  tmashmem::status_name(static_cast<tmashmem::Status>(status)));
      ok = false;
    }
  }

  // Check every element against what the previous PE sent.
  if (ok) {
    std::vector<uint32_t> got(kCount);
    ok = cuda_ok(cudaMemcpy(got.data(), inbox, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    const std::vector<uint32_t> want = data_of(seed, prev);
    size_t bad = 0;
    for (size_t i = 0; ok && i < kCount; ++i) {
      if (got[i] == want[i]) continue;
      if (bad < 5)
        std::printf("ring_put: PE %d: element %zu from PE %d is 0x%08" PRIx32
                    ", expected 0x%08" PRIx32 "\n",
                    me, i, prev, got[i], want[i]);
      ++bad;
    }
    if (bad != 0) {
      std::printf("ring_put: PE %d: %zu of %zu elements from PE %d are wrong\n", me, bad, kCount,
                  prev);
      ok = false;
    }
  }

  mine_ok = ok ? 1 : 0;
  MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (me == 0) {
    if (all_ok == 1)
      std::printf("ring_put: %d PEs, %zu bytes, OK\n", n, bytes);
    else
      std::printf("ring_put: %d PEs, %zu bytes, FAILED (see the messages above)\n", n, bytes);
  }

  cudaFree(outbox);
  cudaFree(wait_status);
  tmashmem_free(arrived);
  tmashmem_free(inbox);
  tmashmem_finalize();
  MPI_Finalize();
  return all_ok == 1 ? 0 : 1;
}
