/* tmashmem tensor handle: the POD device handle of a symmetric tensor (the host object is
 * tmashmem_tensor_t, tmashmem/tensor.h), which kernels take by value.
 *
 * The host fills it with tmashmem_tensor_handle() (tmashmem/tensor.h); kernels take it as
 * a `const __grid_constant__ tmashmem_tensor_handle_t` parameter and hand it to the tile
 * calls of tmashmem/device/tile.cuh. Plain C so that host code, nvcc and NVRTC all see
 * the same layout; the size is checked by static_assert.
 *
 * The map table it points to lives in device global memory, written once by the host
 * before any kernel can see the handle, and never modified while the tensor lives. */
#ifndef TMASHMEM_TENSOR_HANDLE_H
#define TMASHMEM_TENSOR_HANDLE_H

#include <stdint.h>

#define TMASHMEM_TENSOR_HANDLE_VERSION 2u
#define TMASHMEM_TENSOR_MAX_RANK 5
/* Bytes of one CUtensorMap, the unit of the map table. */
#define TMASHMEM_TENSOR_MAP_BYTES 128u

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, numbered like CUtensorMapDataType (sm_90 types only). FP8 (e4m3, e5m2)
 * and other byte-sized types travel as U8. TMA never converts: it copies, and only
 * tma_reduce_tile interprets the type (docs/device-api.md, "Which dtypes each reduce takes"). */
typedef enum tmashmem_dtype {
  TMASHMEM_DTYPE_U8 = 0,
  TMASHMEM_DTYPE_U16 = 1,
  TMASHMEM_DTYPE_U32 = 2,
  TMASHMEM_DTYPE_I32 = 3,
  TMASHMEM_DTYPE_U64 = 4,
  TMASHMEM_DTYPE_I64 = 5,
  TMASHMEM_DTYPE_F16 = 6,
  TMASHMEM_DTYPE_F32 = 7,
  TMASHMEM_DTYPE_F64 = 8,
  TMASHMEM_DTYPE_BF16 = 9,
  TMASHMEM_DTYPE_F32_FTZ = 10,
  TMASHMEM_DTYPE_TF32 = 11,
  TMASHMEM_DTYPE_TF32_FTZ = 12
} tmashmem_dtype_t;
#define TMASHMEM_DTYPE_COUNT 13

/* Shared-memory swizzle of a tile: 16-byte chunks are permuted within a span of 32, 64
 * or 128 bytes (numbered like CUtensorMapSwizzle). */
typedef enum tmashmem_swizzle {
  TMASHMEM_SWIZZLE_NONE = 0,
  TMASHMEM_SWIZZLE_32B = 1,
  TMASHMEM_SWIZZLE_64B = 2,
  TMASHMEM_SWIZZLE_128B = 3
} tmashmem_swizzle_t;

typedef struct tmashmem_tensor_handle_s {
  uint32_t version;    /* TMASHMEM_TENSOR_HANDLE_VERSION */
  uint32_t dtype;      /* tmashmem_dtype_t */
  uint32_t rank;       /* 1..5: the number of coordinates every tile call takes */
  uint32_t elem_bytes; /* bytes of one element */
  uint32_t box[TMASHMEM_TENSOR_MAX_RANK]; /* tile extent per dimension (0 beyond rank) */
  uint32_t box_bytes;     /* bytes one tile moves: the complete_tx (expect_tx) count of one get */
  uint32_t swizzle;       /* tmashmem_swizzle_t: the shared-memory layout of a tile */
  int32_t my_pe;          /* the PE that filled this handle */
  int32_t first_local_pe; /* map slot s belongs to PE first_local_pe + s */
  int32_t n_local_pes;    /* slots 0 .. n_local_pes-1 are PEs; slot n_local_pes is multicast */
  uint64_t reachable;     /* bit s: slot s holds a valid map; the same mask as tmashmem_ctx_t's */
  uint32_t has_multicast; /* 1: slot n_local_pes holds the map on the multicast address */
  uint32_t interleave;    /* tmashmem_interleave_t (tmashmem/tensor.h); 0 = none */
  uint64_t maps;          /* device address of the map table: n_local_pes + 1 CUtensorMaps of
                             128 bytes each, 128-byte aligned, in global memory */
  uint64_t data;          /* this PE's address of the tensor (element 0,0,...) */
  uint64_t peer_stride;   /* bytes between consecutive local PEs' heaps: a symmetric address on
                             PE q is addr + (q - my_pe) * peer_stride */
  uint64_t dims[TMASHMEM_TENSOR_MAX_RANK]; /* tensor extent per dimension (0 beyond rank) */
  uint32_t smem_bytes; /* shared memory one tile occupies: box_bytes, except that a swizzled
                          tile whose rows are narrower than the swizzle span has each row
                          padded to the span (seen on H200) */
  uint32_t reserved1;
  uint64_t reserved[2];
} tmashmem_tensor_handle_t;

#ifdef __cplusplus
}
static_assert(sizeof(tmashmem_tensor_handle_t) == 160,
              "tmashmem_tensor_handle_t layout changed: bump TMASHMEM_TENSOR_HANDLE_VERSION");
#endif

#endif /* TMASHMEM_TENSOR_HANDLE_H */
