// How the library launches its small kernels (the collectives', the on-stream barrier's and
// signals'): through the driver table's cuLaunchKernelEx (runtime/driver.h) on each kernel's
// context-independent handle (cudaGetKernel, looked up once per kernel). Where an enqueued
// small call waits for the host's launch, the driver's entry point skips the runtime's own
// per-launch work: 0.04-0.38 us less host time per launch than <<<>>> (docs/runs.md,
// "Nineteenth session"). Where a kernel has no handle, it is launched with <<<>>> for the rest
// of the process, never overlapped. The fused GEMMs keep tmashmem/device/gemm/launch.cuh
// (cluster launches, whose time is the GEMM's).
//
// An overlapped launch (LaunchShape::overlap) sets CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
// SERIALIZATION: the kernel may be scheduled before the grid before it on the stream has
// finished (once that grid's CTAs have all called griddepcontrol_launch_dependents or exited),
// so its launch latency hides behind that grid's tail. Contract: only a kernel whose every
// thread calls detail::griddepcontrol_wait() before touching memory is launched so, and the
// caller has room for both grids resident at once (runtime/collectives.cpp, overlap_launch).
//
// Stream 0 means the legacy default stream on both paths: the driver table's entry point is
// resolved without CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (runtime/driver.cpp), and the
// files that include this must not be built with per-thread default streams, or the launches
// and the runtime's copies on stream 0 would no longer be ordered.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <tuple>
#include <type_traits>
#include <utility>

#include "device/cuda_outcome.h"
#include "runtime/driver.h"

#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "device/driver_launch.h launches through the legacy-stream cuLaunchKernelEx"
#endif

namespace tmashmem {

// Kernel K's handle for cuLaunchKernelEx, or nullptr; looked up on K's first launch.
template <auto K>
cudaKernel_t kernel_handle() {
  static const cudaKernel_t handle = [] {
    cudaKernel_t h = nullptr;
    if (cudaGetKernel(&h, reinterpret_cast<const void*>(K)) != cudaSuccess) {
      h = nullptr;
      (void)cudaGetLastError();
    }
    return h;
  }();
  return handle;
}

// One launch: `grid` CTAs of `block` threads, no dynamic shared memory, on `stream`;
// `overlap` as the contract above says.
struct LaunchShape {
  unsigned grid;
  unsigned block;
  CUstream stream;
  bool overlap = false;
};

namespace launch_detail {

template <auto K, class... P, class... A>
CudaOutcome launch_as(void (*)(P...), const LaunchShape& shape, A&&... args) {
  // Each argument converted to K's own parameter type first: the driver copies every
  // parameter by the size K's signature gives it.
  std::tuple<std::decay_t<P>...> values(std::forward<A>(args)...);
  return std::apply(
      [&](auto&... v) -> CudaOutcome {
        const cudaKernel_t handle = kernel_handle<K>();
        if (handle == nullptr) {
          (void)cudaGetLastError();
          K<<<shape.grid, shape.block, 0, shape.stream>>>(v...);
          return cuda_outcome(cudaGetLastError());
        }
        CUlaunchAttribute overlap{};
        overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        overlap.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig config{};
        config.gridDimX = shape.grid;
        config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = shape.block;
        config.blockDimY = config.blockDimZ = 1;
        config.hStream = shape.stream;
        config.attrs = shape.overlap ? &overlap : nullptr;
        config.numAttrs = shape.overlap ? 1 : 0;
        void* params[] = {static_cast<void*>(&v)..., nullptr};
        return cuda_outcome(driver().cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(handle),
                                                      params, nullptr));
      },
      values);
}

}  // namespace launch_detail

// Launches kernel K as `shape` says, with `args` as its parameters; the outcome is this
// launch's only. The driver path leaves the runtime's pending error alone; the <<<>>> path
// clears it before the launch and reads it after.
template <auto K, class... A>
CudaOutcome launch_kernel(const LaunchShape& shape, A&&... args) {
  return launch_detail::launch_as<K>(K, shape, std::forward<A>(args)...);
}

}  // namespace tmashmem
