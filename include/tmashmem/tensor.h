/* tmashmem symmetric tensors: a descriptor, prebuilt TMA tensor maps for every peer, and
 * the POD handle kernels take (docs/design.md, decision 6). Two names: the host object
 * tmashmem_tensor_t (opaque, collective create/destroy) and its device handle
 * tmashmem_tensor_handle_t (tmashmem/tensor_handle.h, filled by tmashmem_tensor_handle).
 *
 *   tmashmem_tensor_desc_t d;
 *   uint64_t dims[2] = {4096, 1024};   // innermost first: 1024 rows of 4096 halves
 *   uint32_t box[2] = {64, 128};       // one tile: 128 rows of 64 halves (128 bytes)
 *   tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_F16, 2, dims, box);
 *   d.swizzle = TMASHMEM_SWIZZLE_128B;
 *   tmashmem_tensor_t t;
 *   tmashmem_tensor_create(&d, &t);            // COLLECTIVE
 *   tmashmem_tensor_handle_t h;
 *   tmashmem_tensor_handle(t, &h);             // pass h to kernels by value
 *   ...
 *   tmashmem_tensor_destroy(t);                // COLLECTIVE
 *
 * Every descriptor is checked against the TMA rules before anything is encoded; a
 * violation is TMASHMEM_ERROR_INVALID_VALUE with a message naming the field, its value,
 * the rule and the fix. All calls lock the runtime and are thread-safe. */
#ifndef TMASHMEM_TENSOR_H
#define TMASHMEM_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "tmashmem/tensor_handle.h"
#include "tmashmem/tmashmem.h"

#define TMASHMEM_TENSOR_DESC_VERSION 1u

#ifdef __cplusplus
extern "C" {
#endif

/* Numbered like CUtensorMapInterleave. Interleaved layouts (NC/8HWC8 with 16B, NC/16HWC16
 * with 32B) need rank >= 3; 32B needs 32-byte aligned addresses and strides and
 * TMASHMEM_SWIZZLE_32B. */
typedef enum tmashmem_interleave {
  TMASHMEM_INTERLEAVE_NONE = 0,
  TMASHMEM_INTERLEAVE_16B = 1,
  TMASHMEM_INTERLEAVE_32B = 2
} tmashmem_interleave_t;

/* Numbered like CUtensorMapL2promotion: the L2 fill granularity of TMA reads. */
typedef enum tmashmem_l2_promotion {
  TMASHMEM_L2_PROMOTION_NONE = 0,
  TMASHMEM_L2_PROMOTION_64B = 1,
  TMASHMEM_L2_PROMOTION_128B = 2,
  TMASHMEM_L2_PROMOTION_256B = 3
} tmashmem_l2_promotion_t;

/* What a get writes for elements outside the tensor: zero, or (floating-point dtypes
 * only) a NaN that tensor-core FMAs treat as zero (CU_TENSOR_MAP_FLOAT_OOB_FILL_
 * NAN_REQUEST_ZERO_FMA). Puts and reduces never write outside the tensor. */
typedef enum tmashmem_oob_fill {
  TMASHMEM_OOB_FILL_ZERO = 0,
  TMASHMEM_OOB_FILL_NAN = 1
} tmashmem_oob_fill_t;

/* A tensor in the symmetric heap and the tile that moves it. Dimension 0 is the
 * innermost (contiguous) one, as in TMA. Entries at and beyond `rank` (and byte_strides
 * at and beyond rank - 1) must be 0. Fill it with tmashmem_tensor_desc_init, then adjust.
 * Enumerations are stored as uint32_t so that the layout does not depend on enum sizes. */
typedef struct tmashmem_tensor_desc {
  uint32_t version;                        /* TMASHMEM_TENSOR_DESC_VERSION */
  uint32_t dtype;                          /* tmashmem_dtype_t */
  uint32_t rank;                           /* 1..5 */
  uint32_t interleave;                     /* tmashmem_interleave_t */
  uint32_t swizzle;                        /* tmashmem_swizzle_t */
  uint32_t l2_promotion;                   /* tmashmem_l2_promotion_t */
  uint32_t oob_fill;                       /* tmashmem_oob_fill_t */
  uint32_t reserved0;                      /* 0 */
  uint64_t dims[TMASHMEM_TENSOR_MAX_RANK]; /* elements per dimension, 1..2^32 */
  /* byte_strides[i]: bytes between consecutive indices of dimension i + 1 (the
   * CUtensorMap globalStrides convention). Positive multiples of 16 (32 with
   * TMASHMEM_INTERLEAVE_32B), below 2^40. Rows may overlap: TMA does not forbid it. */
  uint64_t byte_strides[TMASHMEM_TENSOR_MAX_RANK - 1];
  /* Tile extent per dimension, 1..256 elements. Without interleave, box[0] * element
   * size is a multiple of 16 bytes and, when swizzled, at most the swizzle span. */
  uint32_t box[TMASHMEM_TENSOR_MAX_RANK];
  /* Traversal step per dimension, 1..8: a tile then holds ceil(box[i] / element_strides[i])
   * elements along i. element_strides[0] must be 1 (TMA has no stride along dimension 0). */
  uint32_t element_strides[TMASHMEM_TENSOR_MAX_RANK];
  uint64_t reserved[4]; /* 0 */
} tmashmem_tensor_desc_t;

/* Opaque handle of a symmetric tensor; one per PE, each naming the same tensor. */
typedef struct tmashmem_tensor* tmashmem_tensor_t;

/* Not collective. Fills `desc` for a densely packed tensor: version, dtype, rank, dims,
 * byte_strides (dims[0] * element size, then multiplied out), box, element strides 1,
 * no interleave, no swizzle, no L2 promotion, zero OOB fill. Checks nothing but the
 * arguments it needs (use tmashmem_tensor_desc_check for the TMA rules). */
tmashmem_status_t tmashmem_tensor_desc_init(tmashmem_tensor_desc_t* desc, tmashmem_dtype_t dtype,
                                            uint32_t rank, const uint64_t* dims,
                                            const uint32_t* box);

/* Not collective, needs no init. Checks `desc` against every rule that does not depend
 * on where the tensor lives; on success, *extent_bytes (if not NULL) receives the bytes
 * the tensor spans from its first element: what a view's buffer must hold. The last row
 * counts rounded up to 16 bytes: a put at the right edge writes whole 16-byte units of a
 * row (so with dims[0] * element size not a multiple of 16, the bytes up to the next
 * 16-byte boundary after each row are the tensor's too). */
tmashmem_status_t tmashmem_tensor_desc_check(const tmashmem_tensor_desc_t* desc,
                                             size_t* extent_bytes);

/* COLLECTIVE (same descriptor on every PE). Allocates the tensor in the symmetric heap
 * (256-byte aligned, contents undefined, like tmashmem_malloc) and encodes one map per
 * reachable local PE. */
tmashmem_status_t tmashmem_tensor_create(const tmashmem_tensor_desc_t* desc,
                                         tmashmem_tensor_t* out);

/* COLLECTIVE (same descriptor and same heap offset of `symmetric_ptr` on every PE). A
 * tensor over existing symmetric memory, so one buffer can serve several tile shapes.
 * The whole tensor must lie inside the heap's backed range and `symmetric_ptr` must be
 * 16-byte aligned (32 with TMASHMEM_INTERLEAVE_32B). The memory stays the caller's. */
tmashmem_status_t tmashmem_tensor_view(void* symmetric_ptr, const tmashmem_tensor_desc_t* desc,
                                       tmashmem_tensor_t* out);

/* COLLECTIVE. Frees the map table (and, for tensor_create, the memory). No kernel that
 * uses the tensor may still be running. NULL is a no-op. Destroy every tensor before
 * tmashmem_finalize. */
tmashmem_status_t tmashmem_tensor_destroy(tmashmem_tensor_t tensor);

/* This PE's address of the tensor's first element; NULL for an invalid handle. */
void* tmashmem_tensor_data(tmashmem_tensor_t tensor);

/* Copies the 128-byte CUtensorMap that addresses `pe`'s copy of the tensor into `out128`
 * (for CUTLASS or hand-written kernels). `pe` must be a load/store reachable PE of this
 * node. The map is valid in kernels of this PE's device until the tensor is destroyed. */
tmashmem_status_t tmashmem_tensor_get_map(tmashmem_tensor_t tensor, int pe, void* out128);

/* Fills the device handle that kernels take by value (tmashmem/tensor_handle.h). */
tmashmem_status_t tmashmem_tensor_handle(tmashmem_tensor_t tensor, tmashmem_tensor_handle_t* out);

#ifdef __cplusplus
}
static_assert(sizeof(tmashmem_tensor_desc_t) == 176,
              "tmashmem_tensor_desc_t layout changed: bump TMASHMEM_TENSOR_DESC_VERSION");
#endif

#endif /* TMASHMEM_TENSOR_H */
