// A kernel launched through the CUDA runtime with programmatic stream serialization, the
// attribute the library's overlapped launches set (device/driver_launch.h, through the
// driver): the kernel may start before the one ahead of it in the stream has finished, and
// must order itself after it with cudaGridDependencySynchronize(). Shared by the GPU tests and
// tools/perf, which launch their own kernels this way.
#pragma once

#include <cuda_runtime.h>

namespace tmashmem_test {

template <class... Params, class... Args>
cudaError_t launch_overlapped(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                              cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
}

}  // namespace tmashmem_test
