// Init + 1 GiB malloc + finalize time, for tmashmem (bench_init) and, from the same source
// with PERF_NVSHMEM, for NVSHMEM (bench_init_nvshmem: nvshmemx_init_attr with the unique-id
// bootstrap + nvshmem_malloc + nvshmem_finalize) and, with PERF_NCCL_BOOTSTRAP, for
// tmashmem over an existing NCCL communicator (bench_init_nccl: tmashmem_init_attr with
// attr.nccl_comm, rows "tmashmem-nccl").
//
// The CUDA context is created before timing and the bootstrap's set-up (NVSHMEM's unique id)
// and the NCCL communicator are untimed, so the figure is the runtime's own cost. Every repetition
// writes and checks the allocation through a peer mapping, so a lazy runtime cannot score.
//   mpirun -np N bench_init[_nvshmem|_nccl] [reps=10] [bytes=1G]
// bench_init_nccl where ranks share a GPU (NCCL refuses that; nccl_comm.h) prints why and
// exits 0.
#include <cuda_runtime.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tools/perf/backend.cuh"  // PERF_NVSHMEM: NVSHMEM's, else tmashmem's
#ifdef PERF_NCCL_BOOTSTRAP
#include "tools/perf/nccl_comm.h"
#endif

using namespace perf;

namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// The slowest PE's value (what a job waits for). COLLECTIVE.
double slowest(double mine) {
  MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mine;
}

#ifdef PERF_NCCL_BOOTSTRAP
constexpr const char* kRowName = "tmashmem-nccl";
ncclComm_t g_comm = nullptr;  // the application's communicator: made once, untimed

// false: this run cannot make the communicator here (said on stdout).
bool make_comm() { return (g_comm = nccl_world_comm("bench_init_nccl")) != nullptr; }
void init_runtime() {
  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.bootstrap = TMASHMEM_BOOTSTRAP_NCCL;
  attr.nccl_comm = g_comm;
  tm_check(tmashmem_init_attr(&attr), "tmashmem_init_attr (NCCL bootstrap)");
}
#else
constexpr const char* kRowName = Runtime::kName;
bool make_comm() { return true; }
void init_runtime() { Runtime::init(); }
#endif

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int rank = mpi_rank(), size = mpi_size();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : (size_t(1) << 30);
  select_device(Runtime::kName, argc, argv);  // the context exists before timing
  if (!make_comm()) {
    MPI_Finalize();
    return 0;
  }
  std::vector<double> total, init_ms, malloc_ms, finalize_ms;
  int failures = 0;
  for (int r = 0; r < reps + 1; ++r) {  // repetition 0 is a warm-up
    Runtime::bootstrap();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_ms();
    init_runtime();
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
        kRowName, size, bytes, reps, a.median, b.median, c.median, t.min, t.median, t.max);
  }
  if (rank == 0)
    std::printf("bench_init %s: %s\n", kRowName,
                failures ? "FAILED (data check)" : "data checked OK");
#ifdef PERF_NCCL_BOOTSTRAP
  ncclCommDestroy(g_comm);  // after the last tmashmem_finalize: tmashmem never destroys it
#endif
  MPI_Finalize();
  return failures ? 1 : 0;
}
