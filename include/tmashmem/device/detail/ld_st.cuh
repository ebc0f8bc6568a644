// The hardware layer's loads and stores with a memory-model qualifier (PTX ld/st
// .relaxed/.acquire/.release at .gpu or .sys scope). Generic addresses; each
// wrapper is one instruction. Names read <op>_<semantics>_<scope>.
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

// ---- relaxed, system scope: every width (p/g, relaxed signals) ---------------

__device__ __forceinline__ void st_relaxed_sys(uint8_t* p, uint8_t v) {
  asm volatile("st.relaxed.sys.u8 [%0], %1;" ::"l"(p), "h"(static_cast<uint16_t>(v)) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(uint16_t* p, uint16_t v) {
  asm volatile("st.relaxed.sys.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint8_t ld_relaxed_sys(const uint8_t* p) {
  uint16_t v;
  asm volatile("ld.relaxed.sys.u8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
  return static_cast<uint8_t>(v);
}
__device__ __forceinline__ uint16_t ld_relaxed_sys(const uint16_t* p) {
  uint16_t v;
  asm volatile("ld.relaxed.sys.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ld_relaxed_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ld_relaxed_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// ---- 64-bit words (signals, barrier counters) ---------------------------------

__device__ __forceinline__ uint64_t ld_relaxed_gpu(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t ld_acquire_gpu(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_relaxed_gpu(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_release_gpu(uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

}  // namespace detail
}  // namespace tmashmem
