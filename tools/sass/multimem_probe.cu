// Probe kernels for tools/check-sass.sh: one kernel per kind of multimem form the library
// wraps (detail/multimem.cuh), each on an address from a kernel argument so nothing folds
// away; for each st / red form a unicast control uc_<same name>; the multicast calls and
// the barrier with the context from the launch; and the tile put to every PE
// (tile_put_multicast.cuh), fan-out only and multicast map opted in. extern "C": plain
// names in the SASS.
#include <tmashmem/device.cuh>

using namespace tmashmem;
using namespace tmashmem::detail;

extern "C" {
// multimem forms
__global__ void mm_st_relaxed_b32(void* mc, uint32_t v) { multimem_st<0>(mc, v); }
__global__ void mm_st_release_b64(void* mc, uint64_t v) { multimem_st<1>(mc, v); }
__global__ void mm_st_relaxed_v4(void* mc, uint4 v) { multimem_st<0>(mc, v); }
__global__ void mm_ld_reduce_add_u32(const void* mc, uint32_t* out) {
  *out = Multimem<McOp::Add, uint32_t>::ld_reduce<0>(mc);
}
__global__ void mm_ld_reduce_acquire_min_s64(const void* mc, uint64_t* out) {
  *out = Multimem<McOp::Min, int64_t>::ld_reduce<1>(mc);
}
__global__ void mm_ld_reduce_add_acc_f32_v4_f16x2(const void* mc, uint4* out) {
  *out = Multimem<McOp::Add, __half>::ld_reduce_v4<0>(mc);
}
__global__ void mm_red_release_add_u64(void* mc, uint64_t v) {
  Multimem<McOp::Add, uint64_t>::red<1>(mc, v);
}
__global__ void mm_red_relaxed_add_v4_f32(void* mc, uint4 v) {
  Multimem<McOp::Add, float>::red_v4<0>(mc, v);
}
// unicast controls: each multimem st / red probe's access as st / red .global with the same
// semantics and width (ld_reduce has no unicast counterpart). Plain asm: these exist only
// to be compared with, nowhere in the library.
__global__ void uc_st_relaxed_b32(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__global__ void uc_st_release_b64(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__global__ void uc_st_relaxed_v4(void* p, uint4 v) { st_relaxed_sys_v4(p, v); }
__global__ void uc_red_release_add_u64(uint64_t* p, uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__global__ void uc_red_relaxed_add_v4_f32(float* p, float4 v) {
  asm volatile("red.relaxed.sys.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x),
               "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}
// the device calls and the barrier with the context from the launch: both paths compiled
__global__ void call_multicast_red_u64(const __grid_constant__ tmashmem_ctx_t ctx, uint64_t* dest,
                                       const uint64_t* src) {
  multicast_red<McReduce::Add, uint64_t, Coop::Thread, McOrder::Release>(ctx, dest, src, 1);
}
__global__ void call_sync_all(const __grid_constant__ tmashmem_ctx_t ctx) { sync_all(ctx); }
// the tile put to every PE: fan-out only, and the multicast map opted in
__global__ void tile_put_fan_out(const __grid_constant__ tmashmem_tensor_handle_t t) {
  __shared__ alignas(128) uint8_t tile[1024];
  tma_put_tile_multicast(t, {0, 0}, tile, TileMulticast::FanOut);
}
__global__ void tile_put_multicast_map(const __grid_constant__ tmashmem_tensor_handle_t t) {
  __shared__ alignas(128) uint8_t tile[1024];
  tma_put_tile_multicast(t, {0, 0}, tile, TileMulticast::MulticastMap);
}
}
