// NVSHMEM's side of bench_init: nvshmemx_init_attr (unique-id bootstrap, the id
// broadcast over MPI) + nvshmem_malloc + nvshmem_finalize, timed the same way.
// Built only when TMASHMEM_NVSHMEM_HOME points at an NVSHMEM install.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

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
    if (rank == 0) std::printf("bench_init_nvshmem: no CUDA device\n");
    MPI_Finalize();
    return 2;
  }
  cudaSetDevice(rank % devices);
  cudaFree(nullptr);

  std::vector<double> total, init_ms, malloc_ms, finalize_ms;
  int failures = 0;
  for (int r = 0; r < reps + 1; ++r) {
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);  // untimed, like our bootstrap setup
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ms();
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
    int st = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    double t1 = now_ms();
    void* p = st == 0 ? nvshmem_malloc(bytes) : nullptr;
    double t2 = now_ms();
    if (!p) {
      std::fprintf(stderr, "[rank %d] nvshmem init/malloc failed (%d)\n", rank, st);
      ++failures;
      break;
    }
    int next = (rank + 1) % size;
    unsigned char mark = static_cast<unsigned char>(0x5A ^ r ^ rank);
    void* peer = nvshmem_ptr(static_cast<char*>(p) + bytes - 1, next);
    if (peer) cudaMemcpy(peer, &mark, 1, cudaMemcpyHostToDevice);
    nvshmem_barrier_all();
    unsigned char seen = 0;
    cudaMemcpy(&seen, static_cast<char*>(p) + bytes - 1, 1, cudaMemcpyDeviceToHost);
    int prev = (rank + size - 1) % size;
    if (peer && seen != static_cast<unsigned char>(0x5A ^ r ^ prev)) ++failures;
    nvshmem_barrier_all();
    double t3 = now_ms();
    nvshmem_free(p);
    nvshmem_finalize();
    double t4 = now_ms();
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
    std::printf("nvshmem,%d,%zu,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n", size, bytes, reps, a.median,
                b.median, c.median, t.min, t.median, t.max);
  }
  if (rank == 0) std::printf("bench_init_nvshmem: %s\n", any ? "FAILED (data check)" : "data checked OK");
  MPI_Finalize();
  return any ? 1 : 0;
}
