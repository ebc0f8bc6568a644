// Nineteenth session: where an enqueued small collective's time goes on the host. Per
// variant, 1,000 calls issued back to back on one stream: the host's wall time per call
// (issue loop only) and the GPU's (events around the loop), median of 5 repetitions, the
// slowest rank's. Variants, each in the collectives' launch shape (1 CTA x 512 threads):
//   empty      an empty kernel, no parameters (tmashmem-perf coll's `launch` floor)
//   param256   the same with a 256-byte __grid_constant__ parameter (CollArgs' size)
//   wrapped    param256 as device/collectives.cu launches it: cudaGetLastError,
//              cudaGetDevice, <<<>>>, cudaGetLastError
//   driver     param256 through cuLaunchKernel on the CUfunction of cudaGetFuncBySymbol
//   kernel     the same on the context-independent CUkernel of cudaGetKernel
//   allreduce / broadcast   tmashmem_{allreduce,broadcast}_on_stream of 4 KiB (float)
// Build (the device call): nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a
//   -I include -o launch_cost docs/perf/launch19/launch_cost.cu -L$B/runtime -ltmashmem
//   -L/usr/local/cuda/lib64/stubs -lcuda $(mpicxx --showme:compile --showme:link)
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tmashmem/collectives.h"
#include "tmashmem/tmashmem.h"

struct P256 {
  alignas(16) unsigned char b[256];
};
__global__ void empty_kernel() {}
__global__ void __launch_bounds__(512) param_kernel(const __grid_constant__ P256 p, int* out) {
  if (threadIdx.x == 0 && p.b[255] == 7) *out = 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (tmashmem_init() != TMASHMEM_SUCCESS) {
    std::printf("tmashmem_init: %s\n", tmashmem_last_error());
    return 1;
  }
  const size_t bytes = 4096;
  float* src = static_cast<float*>(tmashmem_malloc(bytes));
  float* dst = static_cast<float*>(tmashmem_malloc(bytes));
  int* out = nullptr;
  cudaMalloc(&out, 4);
  cudaMemset(src, 0, bytes);
  cudaStream_t s;
  cudaStreamCreate(&s);
  P256 p{};
  int* out_arg = out;
  void* args[] = {&p, &out_arg};
  cudaFunction_t f = nullptr;
  cudaKernel_t kern = nullptr;
  if (cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(param_kernel)) != cudaSuccess ||
      cudaGetKernel(&kern, param_kernel) != cudaSuccess)
    return 1;
  auto must = [&](tmashmem_status_t st) {
    if (st != TMASHMEM_SUCCESS) {
      std::printf("PE %d: %s\n", rank, tmashmem_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  };
  std::vector<std::pair<std::string, std::function<void()>>> variants = {
      {"empty", [&] { empty_kernel<<<1, 512, 0, s>>>(); }},
      {"param256", [&] { param_kernel<<<1, 512, 0, s>>>(p, out); }},
      {"wrapped",
       [&] {
         (void)cudaGetLastError();
         int d = -1;
         (void)cudaGetDevice(&d);
         param_kernel<<<1, 512, 0, s>>>(p, out);
         (void)cudaGetLastError();
       }},
      {"driver",
       [&] {
         cuLaunchKernel(reinterpret_cast<CUfunction>(f), 1, 1, 1, 512, 1, 1, 0, s, args, nullptr);
       }},
      {"kernel",
       [&] {
         cuLaunchKernel(reinterpret_cast<CUfunction>(kern), 1, 1, 1, 512, 1, 1, 0, s, args,
                        nullptr);
       }},
      {"allreduce",
       [&] {
         must(tmashmem_allreduce_on_stream(dst, src, bytes / 4, TMASHMEM_DTYPE_F32,
                                           TMASHMEM_REDUCE_SUM, TMASHMEM_ALLREDUCE_AUTO, 0, s));
       }},
      {"broadcast", [&] { must(tmashmem_broadcast_on_stream(dst, src, bytes, 0, 0, s)); }},
  };
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  const int calls = 1000;
  for (int pass = 0; pass < 2; ++pass)
    for (auto& v : variants) {
      for (int i = 0; i < 50; ++i) v.second();
      cudaStreamSynchronize(s);
      std::vector<double> host, gpu;
      for (int r = 0; r < 5; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        cudaEventRecord(a, s);
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) v.second();
        const auto t1 = std::chrono::steady_clock::now();
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
        gpu.push_back(1e3 * ms / calls);
      }
      std::sort(host.begin(), host.end());
      std::sort(gpu.begin(), gpu.end());
      double m[2] = {host[2], gpu[2]};
      MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0)
        std::printf("np %d pass %d %-10s host %.2f us/call, gpu %.2f us/call (%s)\n", size, pass,
                    v.first.c_str(), m[0], m[1], cudaGetErrorString(cudaGetLastError()));
    }
  cudaStreamSynchronize(s);
  tmashmem_barrier_all();
  tmashmem_free(dst);
  tmashmem_free(src);
  tmashmem_finalize();
  MPI_Finalize();
  return 0;
}
