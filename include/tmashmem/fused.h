/* tmashmem fused communication + GEMM on a stream (bf16 operands, fp32 accumulation):
 * all-gather + GEMM and GEMM + reduce-scatter, each one kernel.
 *
 * tmashmem_allgather_matmul_on_stream: the tensor-parallel column-linear layer. Each PE holds
 * a shard A_p [m_shard, k] of A (in the symmetric heap) and its own B [n, k]:
 *
 *     C [n_pes * m_shard, n] = all_gather(A) * B^T     (rows p * m_shard .. : A_p * B^T)
 *
 * One kernel both gathers and multiplies: the GEMM starts on this PE's own rows (read from
 * the shard itself) while copiers (the GEMM CTAs' idle producer warps, or a few dedicated
 * CTAs) pull the peers' shards chunk by chunk, in the order the GEMM needs them, into the
 * gathered buffer and flag each chunk; the GEMM's producer waits for a chunk's flag before
 * it loads those rows. Every remote row crosses the link once. The gathered A is returned in
 * `a_gathered` (training keeps it for the backward pass), or not at all when a_gathered is
 * NULL: the peers' rows then land inside the workspace and this PE's own rows are not copied
 * (with one PE the call is then the GEMM alone).
 *
 * COLLECTIVE in stream order: every PE makes the same sequence of these calls with the same
 * shapes and the same workspace; a call on one PE waits (on the GPU, bounded: the kernel
 * traps after 10 s) for the matching call of every other PE. On return the work is enqueued;
 * when the stream reaches its next operation, C (and the gathered A) are complete, and this
 * PE's shard may be overwritten (every peer has finished reading it). No host
 * synchronisation, no allocation: the call can be captured into a CUDA graph and replayed.
 *
 * Needs every PE load/store reachable (one node, peer access), sm_90a, and: k a multiple of 8,
 * n * 2 and ldc * 2 multiples of 16 (n and ldc multiples of 8), ldb >= k a multiple of 8,
 * 16-byte aligned pointers. The shard's rows are contiguous (lda = k). PEs that share one GPU
 * run their kernels side by side (start CUDA MPS); each then uses its share of the SMs. */
#ifndef TMASHMEM_FUSED_H
#define TMASHMEM_FUSED_H

#include <stddef.h>
#include <stdint.h>

#include "tmashmem/tmashmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* comm_sms of tmashmem_allgather_matmul_on_stream: copy with the GEMM CTAs' idle producer
 * warps whatever the shape (0 chooses by shape). */
#define TMASHMEM_COMM_WARPS (-1)

/* Bytes of the symmetric workspace for tmashmem_allgather_matmul_on_stream with these
 * shapes on the current job: the flags (zero before the first call: allocate it with
 * tmashmem_calloc, COLLECTIVE) and, when `gathered_in_workspace` is nonzero (for calls with
 * a_gathered NULL), room for the peers' rows [n_pes * m_shard, k] after them. 0 before
 * tmashmem_init or for bad shapes. */
size_t tmashmem_allgather_matmul_workspace_bytes(int64_t m_shard, int64_t k,
                                                 int gathered_in_workspace);

/* a_shard: symmetric bf16 [m_shard, k]; b: bf16 [n, k] with leading dimension ldb (this PE's);
 * c: bf16 [n_pes * m_shard, n] with leading dimension ldc (this PE's); a_gathered: bf16
 * [n_pes * m_shard, k] contiguous (this PE's device memory) that receives all_gather(A), or
 * NULL not to return it; workspace: symmetric, tmashmem_allgather_matmul_workspace_bytes
 * (gathered_in_workspace = 1 when a_gathered is NULL), zeroed before the first call and used
 * only by these calls; comm_sms: who copies the peers' rows:
 *   0 (the default)      chosen from the shape: the GEMM CTAs' otherwise idle producer warps
 *                        (every SM keeps multiplying) where n >= 2048 or there is one PE,
 *                        else an eighth of this PE's SMs as dedicated copy SMs (the
 *                        warps when the PE has too few SMs to spare them);
 *   TMASHMEM_COMM_WARPS  always the producer warps;
 *   > 0                  that many dedicated copy SMs (bulk copies).
 * docs/fused.md ("Copiers") has the measurements behind the default. */
tmashmem_status_t tmashmem_allgather_matmul_on_stream(const void* a_shard, const void* b, void* c,
                                                      void* a_gathered, int64_t m_shard, int64_t n,
                                                      int64_t k, int64_t ldb, int64_t ldc,
                                                      void* workspace, int comm_sms,
                                                      tmashmem_stream_t stream);

/* tmashmem_matmul_reduce_scatter_on_stream: the tensor-parallel row-linear layer. Each PE holds
 * A_p [m, k] and B_p [n, k] (its slice of the reduction dimension):
 *
 *     C = sum over PEs p of A_p * B_p^T   [m, n],   PE q receiving rows q * m/n_pes ..
 *                                                    (q + 1) * m/n_pes - 1 in its c_shard
 *
 * One kernel computes and scatters; its tile order takes the other PEs' rows first and this
 * PE's own rows last. Modes (tmashmem_reduce_scatter_mode_t):
 *   FAST           each finished tile is added straight into its owner's c_shard by a TMA
 *                  reduce-add (bf16): the order of the additions varies from run to run, so
 *                  the result may differ in the last bits between runs.
 *   DETERMINISTIC  the PEs' fp32 partial tiles go into a staging tile of the owner (in the
 *                  owner's workspace) one after another in a fixed order (the first stores,
 *                  each next one adds after its predecessor's signal), and the owner rounds
 *                  the fp32 sum once to bf16: bit-identical across runs. Needs a 64 x 256
 *                  fp32 block of workspace per 64-row, 256-column piece of the shard (about
 *                  m/n_pes * n * 4 bytes; tmashmem_matmul_reduce_scatter_workspace_bytes).
 *
 * COLLECTIVE in stream order, like tmashmem_allgather_matmul_on_stream (same rules: same
 * shapes, same workspace, bounded GPU waits, graph capture). When the stream reaches its next
 * operation, this PE's c_shard is complete. 1 to 8 PEs; m a multiple of n_pes; k, n, lda, ldb
 * and ldc multiples of 8 (ldc the same on every PE); c_shard symmetric. */
typedef enum tmashmem_reduce_scatter_mode {
  TMASHMEM_REDUCE_SCATTER_FAST = 0,
  TMASHMEM_REDUCE_SCATTER_DETERMINISTIC = 1
} tmashmem_reduce_scatter_mode_t;

/* Bytes of the symmetric workspace (zeroed before the first call: tmashmem_calloc). 0 before
 * tmashmem_init or for bad arguments. */
size_t tmashmem_matmul_reduce_scatter_workspace_bytes(int64_t m, int64_t n, int mode);

/* a: bf16 [m, k] (lda); b: bf16 [n, k] (ldb); c_shard: symmetric bf16 [m / n_pes, n] (ldc). */
tmashmem_status_t tmashmem_matmul_reduce_scatter_on_stream(const void* a, const void* b,
                                                           void* c_shard, int64_t m, int64_t n,
                                                           int64_t k, int64_t lda, int64_t ldb,
                                                           int64_t ldc, void* workspace, int mode,
                                                           tmashmem_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* TMASHMEM_FUSED_H */
