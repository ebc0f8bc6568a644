// Init + 1 GiB malloc + finalize time, for tmashmem (bench_init) and, from the same source
// with PERF_NVSHMEM, for NVSHMEM (bench_init_nvshmem: nvshmemx_init_attr with the unique-id
// bootstrap + nvshmem_malloc + nvshmem_finalize).
//
// The CUDA context is created before timing and the bootstrap's set-up (NVSHMEM's unique id)
// is untimed, so the figure is the runtime's own cost. Every repetition writes and checks
// the allocation through a peer mapping, so a lazy runtime cannot score.
//   mpirun -np N bench_init[_nvshmem] [reps=10] [bytes=1G]
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifdef PERF_NVSHMEM
#include "tools/perf/nvshmem/backend.cuh"
#else
#include "tools/perf/backend_tmashmem.cuh"
#endif

using namespace perf;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int rank = mpi_rank(), size = mpi_size();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : (size_t(1) << 30);
  select_device(Runtime::kName, argc, argv);  // the context exists before timing
  std::vector<double> total, init_ms, malloc_ms, finalize_ms;
  int failures = 0;
  for (int r = 0; r < reps + 1; ++r) {  // repetition 0 is a warm-up
    Runtime::bootstrap();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_ms();
    Runtime::init();
    const double t1 = now_ms();
    char* p = Runtime::alloc(bytes);
    const double t2 = now_ms();
    // Untimed check: this PE writes a byte into the next PE's copy; the next PE reads it.
    const unsigned char mark = static_cast<unsigned char>(0x5A ^ r ^ rank);
    PERF_CUDA(cudaMemcpy(Runtime::peer(p, (rank + 1) % size) + bytes - 1, &mark, 1,
                         cudaMemcpyHostToDevice));
    Runtime::barrier_all();
    unsigned char seen = 0;
    PERF_CUDA(cudaMemcpy(&seen, p + bytes - 1, 1, cudaMemcpyDeviceToHost));
    if (seen != static_cast<unsigned char>(0x5A ^ r ^ ((rank + size - 1) % size))) ++failures;
    Runtime::barrier_all();
    const double t3 = now_ms();
    Runtime::free(p);
    Runtime::finalize();
    const double t4 = now_ms();
    const double t_init = slowest(t1 - t0), t_malloc = slowest(t2 - t1), t_fin = slowest(t4 - t3);
    if (r == 0) continue;
    init_ms.push_back(t_init);
    malloc_ms.push_back(t_malloc);
    finalize_ms.push_back(t_fin);
    total.push_back(t_init + t_malloc + t_fin);
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !total.empty()) {
    const Spread a = spread_of(init_ms), b = spread_of(malloc_ms), c = spread_of(finalize_ms),
                 t = spread_of(total);
    std::printf(
        "runtime,pes,bytes,reps,init_ms,malloc_ms,finalize_ms,total_min_ms,"
        "total_median_ms,total_max_ms\n%s,%d,%zu,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n",
        Runtime::kName, size, bytes, reps, a.median, b.median, c.median, t.min, t.median, t.max);
  }
  if (rank == 0)
    std::printf("bench_init %s: %s\n", Runtime::kName,
                failures ? "FAILED (data check)" : "data checked OK");
  MPI_Finalize();
  return failures ? 1 : 0;
}
