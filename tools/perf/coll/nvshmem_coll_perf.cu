// coll-perf-nvshmem: NVSHMEM's on-stream collectives (nvshmemx_float_*_on_stream:
// sum_reduce, fcollect, sum_reducescatter, alltoall, broadcast) with the options and
// columns of tmashmem-coll-perf (coll_perf.h), so that the rows compare line by line.
// Built only when TMASHMEM_NVSHMEM_HOME names an NVSHMEM install; NVSHMEM_SYMMETRIC_SIZE
// must hold two buffers of -e bytes.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <functional>
#include <string>

#include "tools/perf/coll/coll_perf.h"

using namespace coll_perf;

int main(int argc, char** argv) {
  Options o;
  if (!start(argc, argv, &o)) return 2;
  int size_ranks = 0, devices = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size_ranks);
  cudaGetDeviceCount(&devices);
  if (devices > 0) cudaSetDevice(mpi_rank() % devices);
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (mpi_rank() == 0 && nvshmemx_get_uniqueid(&id) != 0) die("nvshmemx_get_uniqueid failed");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (nvshmemx_set_attr_uniqueid_args(mpi_rank(), size_ranks, &id, &attr) != 0)
    die("nvshmemx_set_attr_uniqueid_args failed");
  if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) die("nvshmemx_init_attr failed");
  const int n = nvshmem_n_pes();
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  auto* src = static_cast<float*>(nvshmem_malloc(o.max_bytes));
  auto* dst = static_cast<float*>(nvshmem_malloc(o.max_bytes));
  if (!src || !dst) die("nvshmem_malloc failed: raise NVSHMEM_SYMMETRIC_SIZE");
  cudaMemset(src, 0, o.max_bytes);
  const nvshmem_team_t team = NVSHMEM_TEAM_WORLD;

  header(o.graph ? "nvshmem (CUDA graph)" : "nvshmem", n);
  for (const std::string& coll : collectives()) {
    if (o.test != "all" && o.test != coll) continue;
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
      const size_t size = bytes / (4 * size_t(n)) * (4 * size_t(n));
      if (size == 0) continue;
      const Shape s = shape(coll, size, n);
      std::function<void()> call;
      if (coll == "allreduce")
        call = [&] { nvshmemx_float_sum_reduce_on_stream(team, dst, src, size / 4, stream); };
      else if (coll == "allgather")
        call = [&] { nvshmemx_float_fcollect_on_stream(team, dst, src, s.send / 4, stream); };
      else if (coll == "reducescatter")
        call = [&] {
          nvshmemx_float_sum_reducescatter_on_stream(team, dst, src, s.recv / 4, stream);
        };
      else if (coll == "alltoall")
        call = [&] { nvshmemx_float_alltoall_on_stream(team, dst, src, size / n / 4, stream); };
      else
        call = [&] { nvshmemx_float_broadcast_on_stream(team, dst, src, size / 4, 0, stream); };
      row("nvshmem", coll, size, n, time_calls(o, stream, call));
    }
  }
  cudaStreamSynchronize(stream);
  nvshmem_free(dst);
  nvshmem_free(src);
  nvshmem_finalize();
  MPI_Finalize();
  return 0;
}
