// The machine side of every benchmark program: the GPU each rank uses, the copy-engine
// ceilings measured in the same run, PlacementShift, and a seed every rank shares.
#pragma once

#include <cuda_runtime.h>

#include <random>
#include <string>
#include <vector>

#include "tools/perf/perf_cuda.cuh"

namespace perf {

// ---- ceilings -------------------------------------------------------------------------

struct Ceilings {
  double d2d_gbps = 0;   // cudaMemcpy device-to-device on this GPU, payload GB/s
  double peer_gbps = 0;  // cudaMemcpyPeer to the next GPU (0: one GPU visible)
};

// Median GB/s of `reps` repetitions of 4 copies (peer copies when the devices differ).
inline double copy_rate(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes,
                        int reps, cudaStream_t stream, double timeout_s) {
  auto copy = [&] {
    PERF_CUDA(dst_dev != src_dev
                  ? cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, stream)
                  : cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  };
  copy();
  EventPair ev;
  std::vector<double> gbps;
  for (int r = 0; r < reps; ++r) {
    ev.start(stream);
    for (int i = 0; i < 4; ++i) copy();
    ev.stop(stream);
    gbps.push_back(static_cast<double>(bytes) * 4 / (ev.elapsed_ms(timeout_s, "ceiling") * 1e6));
  }
  return spread_of(gbps).median;
}

// Rank 0 measures; every rank gets the figures. The copies are checked.
inline Ceilings measure_ceilings(size_t bytes, int reps, double timeout_s) {
  double v[2] = {0, 0};
  if (mpi_rank() == 0) {
    int dev = 0, count = 0;
    PERF_CUDA(cudaGetDevice(&dev));
    PERF_CUDA(cudaGetDeviceCount(&count));
    cudaStream_t stream;
    PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *src = nullptr, *dst = nullptr;
    PERF_CUDA(cudaMalloc(&src, bytes));
    PERF_CUDA(cudaMalloc(&dst, bytes));
    const uint64_t seed = 0xC0FFEEull ^ std::random_device{}();
    fill_pattern(src, bytes, seed, stream);
    PERF_CUDA(cudaMemsetAsync(dst, kPoison, bytes, stream));
    v[0] = copy_rate(dst, dev, src, dev, bytes, reps, stream, timeout_s);
    Checker check;
    check.pattern(dst, bytes, seed, stream);
    unsigned long long bad = check.take(stream, timeout_s);
    if (count > 1) {
      const int other = (dev + 1) % count;
      int can = 0;
      PERF_CUDA(cudaDeviceCanAccessPeer(&can, dev, other));
      void* far = nullptr;
      PERF_CUDA(cudaSetDevice(other));
      PERF_CUDA(cudaMalloc(&far, bytes));
      PERF_CUDA(cudaSetDevice(dev));
      if (can) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(other, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) PERF_CUDA(e);
        (void)cudaGetLastError();
      }
      v[1] = copy_rate(far, other, src, dev, bytes, reps, stream, timeout_s);
      PERF_CUDA(cudaMemsetAsync(dst, kPoison, bytes, stream));
      PERF_CUDA(cudaMemcpyPeerAsync(dst, dev, far, other, bytes, stream));
      check.pattern(dst, bytes, seed, stream);
      bad += check.take(stream, timeout_s);
      PERF_CUDA(cudaFree(far));
    }
    if (bad) die("ceiling copies delivered " + std::to_string(bad) + " wrong words");
    PERF_CUDA(cudaFree(src));
    PERF_CUDA(cudaFree(dst));
    PERF_CUDA(cudaStreamDestroy(stream));
  }
  MPI_Bcast(v, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return {v[0], v[1]};
}

// Device memory held from before the runtime creates its heap until exit: a random 0..31
// pages of 2 MiB, so that each launch's heap lands on other physical pages (launches in a
// row otherwise got the same pages, and their pooled spread missed what differs between two
// runs). PERF_PLACEMENT_SHIFT=0 turns it off. Construct after selecting the device, before
// the runtime's init.
class PlacementShift {
 public:
  PlacementShift() {
    const char* env = std::getenv("PERF_PLACEMENT_SHIFT");
    if (env && std::string(env) == "0") return;
    pages_ = std::random_device{}() % 32;
    if (pages_) PERF_CUDA(cudaMalloc(&held_, pages_ << 21));
  }
  ~PlacementShift() {
    if (held_) cudaFree(held_);
  }
  PlacementShift(const PlacementShift&) = delete;
  PlacementShift& operator=(const PlacementShift&) = delete;
  // Rank 0 prints every PE's page count. COLLECTIVE.
  void print() const {
    const std::vector<unsigned long long> all = gather_to_root(pages_);
    if (mpi_rank() != 0) return;
    std::printf("# placement shift: 2 MiB pages held before init, per PE:");
    for (unsigned long long n : all) std::printf(" %llu", n);
    std::printf("\n");
  }

 private:
  size_t pages_ = 0;
  void* held_ = nullptr;
};

// A seed every rank agrees on, different in every run.
inline uint64_t run_seed() {
  uint64_t seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

inline int device_sm_count() {
  int dev = 0, sms = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// Picks this rank's GPU (node-local rank modulo the device count) and creates the context
// before anything is timed. Prints the device and the command line once.
inline void select_device(const char* runtime, int argc, char** argv) {
  int count = 0;
  PERF_CUDA(cudaGetDeviceCount(&count));
  if (count == 0) die("no CUDA device");
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  PERF_CUDA(cudaSetDevice(local_rank % count));
  PERF_CUDA(cudaFree(nullptr));
  if (mpi_rank() != 0) return;
  cudaDeviceProp prop;
  PERF_CUDA(cudaGetDeviceProperties(&prop, local_rank % count));
  int driver = 0;
  PERF_CUDA(cudaDriverGetVersion(&driver));
  std::printf("# %s on %s (%d SMs), %d GPU(s) visible, driver API %d, %d PE(s)\n#", runtime,
              prop.name, prop.multiProcessorCount, count, driver, mpi_size());
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
}

}  // namespace perf
