// Init + 1 GiB malloc + finalize time for tmashmem, the figure issue 2 compares
// with NVSHMEM's nvshmemx_init_attr + nvshmem_malloc + nvshmem_finalize
// (nvshmem/bench_init_nvshmem.cu, run by the same script).
//
// The CUDA context is created before timing (both programs do this), so the
// figure is the runtime's own cost. Every repetition writes and checks the
// allocation through a peer mapping, so a lazy runtime cannot score.
// Usage: mpirun -np N bench_init [reps=10] [bytes=1G]
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tmashmem/tmashmem.h"
#include "tools/perf/bench_timer.h"

using namespace tmashmem_bench;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : (size_t(1) << 30);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank == 0) std::printf("bench_init: no CUDA device\n");
    MPI_Finalize();
    return 2;
  }
  cudaSetDevice(rank % devices);
  cudaFree(nullptr);  // context created outside the timed region

  std::vector<double> total, init_ms, malloc_ms, finalize_ms;
  int failures = 0;
  for (int r = 0; r < reps + 1; ++r) {  // repetition 0 is a warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ms();
    tmashmem_status_t st = tmashmem_init();
    double t1 = now_ms();
    void* p = st == TMASHMEM_SUCCESS ? tmashmem_malloc(bytes) : nullptr;
    double t2 = now_ms();
    if (!p) {
      std::fprintf(stderr, "[rank %d] %s\n", rank, tmashmem_last_error());
      ++failures;
      break;
    }
    // Untimed check: this PE writes a byte into the next PE's copy; the next PE reads it.
    int next = (rank + 1) % size;
    unsigned char mark = static_cast<unsigned char>(0x5A ^ r ^ rank);
    cudaMemcpy(static_cast<char*>(tmashmem_ptr(p, next)) + bytes - 1, &mark, 1, cudaMemcpyHostToDevice);
    tmashmem_barrier_all();
    unsigned char seen = 0;
    cudaMemcpy(&seen, static_cast<char*>(p) + bytes - 1, 1, cudaMemcpyDeviceToHost);
    int prev = (rank + size - 1) % size;
    if (seen != static_cast<unsigned char>(0x5A ^ r ^ prev)) ++failures;
    tmashmem_barrier_all();
    double t3 = now_ms();
    tmashmem_free(p);
    st = tmashmem_finalize();
    double t4 = now_ms();
    if (st != TMASHMEM_SUCCESS) ++failures;
    double t_init = slowest(t1 - t0), t_malloc = slowest(t2 - t1), t_fin = slowest(t4 - t3);
    if (r == 0) continue;
    init_ms.push_back(t_init);
    malloc_ms.push_back(t_malloc);
    finalize_ms.push_back(t_fin);
    total.push_back(t_init + t_malloc + t_fin);
  }
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !total.empty()) {
    Spread a = spread(init_ms), b = spread(malloc_ms), c = spread(finalize_ms), t = spread(total);
    std::printf("runtime,pes,bytes,reps,init_ms,malloc_ms,finalize_ms,total_min_ms,total_median_ms,total_max_ms\n");
    std::printf("tmashmem,%d,%zu,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n", size, bytes, reps, a.median,
                b.median, c.median, t.min, t.median, t.max);
  }
  if (rank == 0) std::printf("bench_init: %s\n", any ? "FAILED (data check)" : "data checked OK");
  MPI_Finalize();
  return any ? 1 : 0;
}
