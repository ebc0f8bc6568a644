// Launch cost against kernel-parameter size (docs/fused.md, "Reduce-scatter at one PE"): an empty kernel of
// 132 CTAs x 384 threads whose parameters are N bytes, timed from an idle GPU (one launch
// between two events, then a sync; median of 300) and back to back (1,000 launches).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
template <int N>
struct P {
  alignas(64) unsigned char b[N];
};
template <int N>
__global__ void k(const __grid_constant__ P<N> p, int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && p.b[N - 1] == 7) *out = 1;
}
template <int N>
void run(int* out) {
  P<N> p{};
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> single, host;
  for (int i = 0; i < 300; ++i) {
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    cudaEventRecord(a);
    k<N><<<132, 384>>>(p, out);
    cudaEventRecord(b);
    auto t1 = std::chrono::steady_clock::now();
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    single.push_back(ms * 1000);
    host.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count());
  }
  cudaDeviceSynchronize();
  cudaEventRecord(a);
  for (int i = 0; i < 1000; ++i) k<N><<<132, 384>>>(p, out);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  std::sort(single.begin(), single.end());
  std::sort(host.begin(), host.end());
  std::printf(
      "params %5d B: single launch (events) median %.2f us, host enqueue median %.2f us, "
      "back-to-back %.2f us/launch\n",
      N, single[150], host[150], ms);
}
int main() {
  int* out;
  cudaMalloc(&out, 4);
  run<256>(out);
  run<512>(out);
  run<1024>(out);
  run<1536>(out);
  run<2816>(out);
  run<4096>(out);
  run<256>(out);
  run<2816>(out);
  return 0;
}
