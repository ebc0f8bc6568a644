// tmashmem-coll-perf: the on-stream collectives of tmashmem (tmashmem/collectives.h) in the
// style of nccl-tests (options and columns: coll_perf.h), and NCCL's beside them when it
// was found at build time and every rank has a GPU of its own (NCCL refuses two ranks on
// one GPU, so with shared GPUs its rows are left out and the reason is printed).
//
//   mpirun -np 4 tmashmem-coll-perf -b 8 -e 64M -f 2 -t all
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tmashmem/tmashmem.h"
#include "tools/perf/backend.cuh"  // tm_check
#include "tools/perf/coll/coll_perf.h"
#ifdef TMASHMEM_COLL_PERF_NCCL
#include <nccl.h>
#endif

using namespace coll_perf;
using perf::tm_check;

namespace {

// True when no two ranks share a GPU (by PCI bus id).
bool distinct_gpus() {
  char bus[32] = {0};
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetPCIBusId(bus, sizeof bus, dev);
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<char> all(size_t(n) * sizeof bus);
  MPI_Allgather(bus, sizeof bus, MPI_CHAR, all.data(), sizeof bus, MPI_CHAR, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (std::strncmp(&all[size_t(i) * sizeof bus], &all[size_t(j) * sizeof bus], sizeof bus) == 0)
        return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!start(argc, argv, &o)) return 2;
  tm_check(tmashmem_init(), "tmashmem_init");
  const int n = tmashmem_n_pes();
  PERF_CUDA(cudaSetDevice(tmashmem_device()));
  cudaStream_t stream;
  PERF_CUDA(cudaStreamCreate(&stream));
  void* src = tmashmem_malloc(o.max_bytes);
  void* dst = tmashmem_malloc(o.max_bytes);
  if (!src || !dst) die(std::string("tmashmem_malloc: ") + tmashmem_last_error());
  PERF_CUDA(cudaMemset(src, 1, o.max_bytes));

#ifdef TMASHMEM_COLL_PERF_NCCL
  ncclComm_t comm = nullptr;
  const bool use_nccl = distinct_gpus();
  if (use_nccl) {
    ncclUniqueId id;
    if (mpi_rank() == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (ncclCommInitRank(&comm, n, id, mpi_rank()) != ncclSuccess) die("ncclCommInitRank");
  } else if (mpi_rank() == 0) {
    std::printf("# NCCL rows left out: ranks share a GPU (NCCL refuses two ranks on one GPU)\n");
  }
#else
  if (mpi_rank() == 0) std::printf("# NCCL rows left out: built without NCCL\n");
  (void)distinct_gpus;
#endif

  header(o.graph ? "tmashmem (CUDA graph)" : "tmashmem", n);
  for (const std::string& coll : collectives()) {
    if (o.test != "all" && o.test != coll) continue;
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
      const size_t size = bytes / (4 * size_t(n)) * (4 * size_t(n));  // whole floats per rank
      if (size == 0) continue;
      const Shape s = shape(coll, size, n);
      const size_t count = s.recv / 4;
      std::function<void()> tm;
      if (coll == "allreduce")
        tm = [&] {
          tm_check(tmashmem_allreduce_on_stream(dst, src, size / 4, TMASHMEM_DTYPE_F32,
                                                TMASHMEM_REDUCE_SUM, o.algo, o.n_sms, stream),
                   "allreduce");
        };
      else if (coll == "allgather")
        tm = [&] {
          tm_check(tmashmem_allgather_on_stream(dst, src, s.send, o.n_sms, stream), "allgather");
        };
      else if (coll == "reducescatter")
        tm = [&] {
          tm_check(tmashmem_reduce_scatter_on_stream(dst, src, count, TMASHMEM_DTYPE_F32,
                                                     TMASHMEM_REDUCE_SUM, o.n_sms, stream),
                   "reduce_scatter");
        };
      else if (coll == "alltoall")
        tm = [&] {
          tm_check(tmashmem_alltoall_on_stream(dst, src, size / n, o.n_sms, stream), "alltoall");
        };
      else
        tm = [&] {
          tm_check(tmashmem_broadcast_on_stream(dst, src, size, 0, o.n_sms, stream), "broadcast");
        };
      row("tmashmem", coll, size, n, time_calls(o, stream, tm));
#ifdef TMASHMEM_COLL_PERF_NCCL
      if (use_nccl) {
        std::function<void()> nc;
        if (coll == "allreduce")
          nc = [&] { ncclAllReduce(src, dst, size / 4, ncclFloat, ncclSum, comm, stream); };
        else if (coll == "allgather")
          nc = [&] { ncclAllGather(src, dst, s.send / 4, ncclFloat, comm, stream); };
        else if (coll == "reducescatter")
          nc = [&] { ncclReduceScatter(src, dst, count, ncclFloat, ncclSum, comm, stream); };
        else if (coll == "alltoall")
          nc = [&] {
            ncclGroupStart();
            for (int q = 0; q < n; ++q) {
              ncclSend(static_cast<char*>(src) + size / n * q, size / n / 4, ncclFloat, q, comm,
                       stream);
              ncclRecv(static_cast<char*>(dst) + size / n * q, size / n / 4, ncclFloat, q, comm,
                       stream);
            }
            ncclGroupEnd();
          };
        else
          nc = [&] { ncclBroadcast(src, dst, size / 4, ncclFloat, 0, comm, stream); };
        row("nccl", coll, size, n, time_calls(o, stream, nc));
      }
#endif
    }
  }
#ifdef TMASHMEM_COLL_PERF_NCCL
  if (comm) ncclCommDestroy(comm);
#endif
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  tmashmem_free(dst);
  tmashmem_free(src);
  tmashmem_finalize();
  MPI_Finalize();
  return 0;
}
