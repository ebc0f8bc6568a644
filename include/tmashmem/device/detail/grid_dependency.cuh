// The hardware layer's programmatic dependent launch (PTX griddepcontrol, sm_90): how a grid
// launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION orders itself after the
// grid before it on its stream (device/driver_launch.h says which library kernels are).
#pragma once

namespace tmashmem {
namespace detail {

// Blocks the calling thread until every grid this one depends on programmatically has
// completed and its memory operations are performed and visible to this grid. Returns at once
// in a grid launched without that dependency. Each thread that touches memory the grid before
// may use calls it first.
__device__ __forceinline__ void griddepcontrol_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// Allows the next grid on the stream, if launched with the attribute, to be scheduled once
// every CTA of this grid has called this or exited. It says nothing about this grid's memory:
// the next grid's griddepcontrol_wait still waits for this grid's completion.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace detail
}  // namespace tmashmem
