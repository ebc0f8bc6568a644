// Warpgroup matrix multiply (wgmma, sm_90a): the shared-memory matrix descriptor, the
// fence/commit/wait that order the asynchronous MMAs, and the bf16 MMA shapes the GEMM uses.
//
// Contract (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
//  - Every call here is made by all 128 threads of a warpgroup (4 consecutive warps starting
//    at a warp index divisible by 4), convergent.
//  - wgmma_fence() before the first MMA of a batch whenever the accumulator registers were
//    written by ordinary instructions since the last wgmma_wait (and at the start).
//  - The accumulators of an MMA in flight may not be read or written until wgmma_wait<N>
//    has retired its group. Shared memory an MMA reads may be overwritten only after that.
//  - Operands come from shared memory in one of the two canonical layouts with 128-byte
//    swizzle that TMA tiles of 64 bf16 x rows (128-byte rows, SWIZZLE_128B) produce: rows of
//    128 bytes, 8-row atoms of 1024 bytes, every atom 1024-byte aligned. K-major (A, and B
//    given as [N, K]): a row holds 64 k of one m or n. MN-major (B given as [K, N]): a row
//    holds 64 n of one k, and 64-wide blocks of n follow each other a fixed stride apart.
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/async_group.cuh"

namespace tmashmem::detail {

/// Descriptor of a K-major, 128-byte-swizzled operand whose first row starts at `smem`
/// (a 1024-byte aligned atom, plus the 32-byte offset of a k16 step inside it).
/// Fields: start address >> 4 (bits 0-13), leading byte offset (bits 16-29; unused for
/// swizzled K-major operands, 1 by convention), stride byte offset between 8-row atoms
/// 1024 >> 4 (bits 32-45), base offset 0 (bits 49-51), swizzle mode 1 = 128B (bits 62-63).
__device__ __forceinline__ uint64_t wgmma_desc_k_major_sw128(const void* smem) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t desc = (addr & 0x3FFFFu) >> 4;
  desc |= uint64_t(1) << 16;
  desc |= uint64_t(1024 >> 4) << 32;
  desc |= uint64_t(1) << 62;
  return desc;
}

/// Descriptor of an MN-major, 128-byte-swizzled operand (the transposed B of
/// wgmma_m64k16_bf16<N, true>) whose first k row starts at `smem` (a 1024-byte aligned
/// atom). Row r of a 64-wide block of n holds k = r; an atom covers 8 k, and the next 8 k
/// follow 1024 bytes on (stride byte offset, bits 32-45); the next 64 n lie
/// `n_block_bytes` on (leading byte offset, bits 16-29: for MN-major swizzled layouts the
/// PTX ISA defines it as the offset between repeats of the swizzle pattern along MN).
__device__ __forceinline__ uint64_t wgmma_desc_mn_major_sw128(const void* smem,
                                                              uint32_t n_block_bytes) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t desc = (addr & 0x3FFFFu) >> 4;
  desc |= uint64_t((n_block_bytes >> 4) & 0x3FFFu) << 16;
  desc |= uint64_t(1024 >> 4) << 32;
  desc |= uint64_t(1) << 62;
  return desc;
}

/// Descriptor advanced by `bytes`: along K inside the swizzle atom of a K-major operand (a
/// k16 step of bf16 is 32 bytes; the hardware applies the swizzle to the resulting address),
/// or by whole atoms along K of an MN-major one (a k16 step is two atoms, 2048 bytes).
__device__ __forceinline__ uint64_t wgmma_desc_advance(uint64_t desc, uint32_t bytes) {
  return desc + (bytes >> 4);
}

/// Orders earlier register and shared-memory accesses of the warpgroup before the MMAs
/// issued after it.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

/// wgmma_commit() closes the MMAs issued since the last commit into one wgmma-group;
/// wgmma_wait<N>() waits until at most N of this warpgroup's wgmma-groups are pending.
TMASHMEM_ASYNC_GROUP(wgmma, "wgmma", ".sync.aligned", 7)

/// Keeps the compiler from moving accesses of `r` across an MMA that reads or writes it.
__device__ __forceinline__ void wgmma_fence_operand(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}

// The accumulator operands of the m64nNk16 shapes: N/2 fp32 registers per thread. The
// operand list and the register list of the PTX text are literal (inline PTX takes only
// literal text), each spelled once and extended from one shape to the next.
#define TMASHMEM_WGMMA_D8(i)                                                                \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define TMASHMEM_WGMMA_D64                                                                  \
  TMASHMEM_WGMMA_D8(0), TMASHMEM_WGMMA_D8(8), TMASHMEM_WGMMA_D8(16), TMASHMEM_WGMMA_D8(24), \
      TMASHMEM_WGMMA_D8(32), TMASHMEM_WGMMA_D8(40), TMASHMEM_WGMMA_D8(48), TMASHMEM_WGMMA_D8(56)
#define TMASHMEM_WGMMA_D96                                                                 \
  TMASHMEM_WGMMA_D64, TMASHMEM_WGMMA_D8(64), TMASHMEM_WGMMA_D8(72), TMASHMEM_WGMMA_D8(80), \
      TMASHMEM_WGMMA_D8(88)
#define TMASHMEM_WGMMA_D112 TMASHMEM_WGMMA_D96, TMASHMEM_WGMMA_D8(96), TMASHMEM_WGMMA_D8(104)
#define TMASHMEM_WGMMA_D128 TMASHMEM_WGMMA_D112, TMASHMEM_WGMMA_D8(112), TMASHMEM_WGMMA_D8(120)
// "%0, %1, ..., %(N/2 - 1)" for the PTX text.
// clang-format off
#define TMASHMEM_WGMMA_R64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, " \
  "%8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, " \
  "%56, %57, %58, %59, %60, %61, %62, %63"
#define TMASHMEM_WGMMA_R96 TMASHMEM_WGMMA_R64 ", " \
  "%64, %65, %66, %67, %68, %69, %70, %71, " \
  "%72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, " \
  "%88, %89, %90, %91, %92, %93, %94, %95"
#define TMASHMEM_WGMMA_R112 TMASHMEM_WGMMA_R96 ", " \
  "%96, %97, %98, %99, %100, %101, %102, %103, " \
  "%104, %105, %106, %107, %108, %109, %110, %111"
#define TMASHMEM_WGMMA_R128 TMASHMEM_WGMMA_R112 ", " \
  "%112, %113, %114, %115, %116, %117, %118, %119, " \
  "%120, %121, %122, %123, %124, %125, %126, %127"
// clang-format on

// wgmma_m64n<N>k16_bf16<TransB>: D[64 x N] (+)= A[64 x 16] * B[16 x N], bf16 operands from
// shared memory, fp32 accumulators, REGS = N / 2 registers per thread. A is K-major; B is
// K-major with TransB 0 and MN-major with TransB 1 (the instruction's imm-trans-b).
// `accumulate` 0 overwrites D. DESC_A, DESC_B, ACC and TRANS_B are the operand numbers REGS
// .. REGS + 3 (inline PTX numbers operands in literal text).
#define TMASHMEM_WGMMA_M64K16_BF16(N, REGS, DESC_A, DESC_B, ACC, TRANS_B)                         \
  template <int TransB>                                                                           \
  __device__ __forceinline__ void wgmma_m64n##N##k16_bf16(float(&d)[REGS], uint64_t desc_a,       \
                                                          uint64_t desc_b, uint32_t accumulate) { \
    asm volatile(                                                                                 \
        "{\n\t.reg .pred p;\n\t"                                                                  \
        "setp.ne.b32 p, %" #ACC                                                                   \
        ", 0;\n\t"                                                                                \
        "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" TMASHMEM_WGMMA_R##REGS       \
        "}, %" #DESC_A ", %" #DESC_B ", p, 1, 1, 0, %" #TRANS_B ";\n\t}"                          \
        : TMASHMEM_WGMMA_D##REGS                                                                  \
        : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TransB));                                \
  }
TMASHMEM_WGMMA_M64K16_BF16(256, 128, 128, 129, 130, 131)
TMASHMEM_WGMMA_M64K16_BF16(224, 112, 112, 113, 114, 115)
TMASHMEM_WGMMA_M64K16_BF16(192, 96, 96, 97, 98, 99)
TMASHMEM_WGMMA_M64K16_BF16(128, 64, 64, 65, 66, 67)
#undef TMASHMEM_WGMMA_M64K16_BF16
#undef TMASHMEM_WGMMA_R128
#undef TMASHMEM_WGMMA_R112
#undef TMASHMEM_WGMMA_R96
#undef TMASHMEM_WGMMA_R64
#undef TMASHMEM_WGMMA_D128
#undef TMASHMEM_WGMMA_D112
#undef TMASHMEM_WGMMA_D96
#undef TMASHMEM_WGMMA_D64
#undef TMASHMEM_WGMMA_D8

/// m64nNk16 for the tile widths the GEMM instantiates (N = 128, 192, 224 or 256), B
/// K-major (`b_mn_major` false) or MN-major (true).
template <int N, bool b_mn_major = false>
__device__ __forceinline__ void wgmma_m64k16_bf16(float (&d)[N / 2], uint64_t desc_a,
                                                  uint64_t desc_b, uint32_t accumulate) {
  static_assert(N == 128 || N == 192 || N == 224 || N == 256,
                "wgmma_m64k16_bf16: N is 128, 192, 224 or 256");
  constexpr int kTransB = b_mn_major ? 1 : 0;
  if constexpr (N == 256)
    wgmma_m64n256k16_bf16<kTransB>(d, desc_a, desc_b, accumulate);
  else if constexpr (N == 224)
    wgmma_m64n224k16_bf16<kTransB>(d, desc_a, desc_b, accumulate);
  else if constexpr (N == 192)
    wgmma_m64n192k16_bf16<kTransB>(d, desc_a, desc_b, accumulate);
  else
    wgmma_m64n128k16_bf16<kTransB>(d, desc_a, desc_b, accumulate);
}

}  // namespace tmashmem::detail
