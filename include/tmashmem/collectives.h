/* tmashmem collectives on a stream: all-gather, reduce-scatter, all-reduce, all-to-all
 * (equal and variable blocks) and broadcast over every PE of the job (docs/collectives.md).
 *
 * Every call is COLLECTIVE: every PE enqueues the same sequence of collectives with the
 * same arguments (the same symmetric buffers, sizes, dtype, op, root, algorithm and SM
 * count). They are stream-ordered like the other on-stream calls (tmashmem.h, "On-stream
 * operations"): no host synchronisation, no allocation per call, and their state (the
 * per-slot call counters and signals in the signal pad) is read by the kernel when it
 * runs, so a call captured into a CUDA graph can be replayed any number of times.
 *
 * Buffers: `dest` and `src` are symmetric (tmashmem_malloc) on every PE, at least the
 * size the call names, and must not overlap. Every collective needs every PE load/store
 * reachable from every other (one node with peer access); otherwise it returns
 * TMASHMEM_ERROR_NOT_SUPPORTED. Bad arguments are TMASHMEM_ERROR_INVALID_VALUE before
 * anything is enqueued, with a message that names the PE, the value and the fix.
 *
 * Symmetry: the arguments are all-gathered and compared across PEs (the runtime's
 * collective-argument check, docs/design.md, decision 5) on the first call with a given
 * (call, dest, src, size, dtype, op, root, algorithm, SM count) on this PE, and on every
 * call when TMASHMEM_DEBUG >= 1. A mismatch is TMASHMEM_ERROR_SYMMETRY on every PE.
 * The first call of each such combination must therefore be made by every PE at the
 * same point (it talks to the other PEs through the bootstrap); it may be made while the
 * stream is being captured.
 *
 * Waits inside the kernels are bounded by TMASHMEM_BOOTSTRAP_TIMEOUT_MS (the library's
 * timeout); a PE that never arrives makes the others print "[tmashmem PE p] <call>: ..."
 * naming the missing PE, the signal slot and the epoch, and trap: the error surfaces at
 * the stream's next synchronisation.
 *
 * At most one grid per PE may run collectives on the signal pad's slots at a time (the
 * on-stream calls on one stream, or one user kernel using tmashmem::coll_pad_state). */
#ifndef TMASHMEM_COLLECTIVES_H
#define TMASHMEM_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "tmashmem/tensor_handle.h" /* tmashmem_dtype_t */
#include "tmashmem/tmashmem.h"      /* tmashmem_status_t, tmashmem_stream_t */

#ifdef __cplusplus
extern "C" {
#endif

/* Reductions. Sum of f16/bf16 accumulates in fp32 and rounds once (to nearest even);
 * every PE reduces in PE order 0, 1, ..., n-1, so all PEs get bit-identical results. */
typedef enum tmashmem_reduce_op {
  TMASHMEM_REDUCE_SUM = 0,
  TMASHMEM_REDUCE_MIN = 1,
  TMASHMEM_REDUCE_MAX = 2
} tmashmem_reduce_op_t;

/* All-reduce algorithms. AUTO picks ONE_SHOT up to TMASHMEM_ALLREDUCE_ONE_SHOT_BYTES
 * (times 2 PEs / n_pes for more than 2 PEs), else TWO_SHOT (docs/collectives.md). */
typedef enum tmashmem_allreduce_algo {
  TMASHMEM_ALLREDUCE_AUTO = 0,
  TMASHMEM_ALLREDUCE_ONE_SHOT = 1, /* every PE pulls and reduces every peer's data */
  TMASHMEM_ALLREDUCE_TWO_SHOT = 2  /* reduce-scatter into dest, then all-gather of dest */
} tmashmem_allreduce_algo_t;

#define TMASHMEM_ALLREDUCE_ONE_SHOT_BYTES (4u * 1024u * 1024u)

/* Largest number of CTAs (signal slots) one collective uses. */
#define TMASHMEM_COLL_MAX_SMS 32

/* `n_sms`, in every call: CTAs the collective runs on, 1..TMASHMEM_COLL_MAX_SMS, or 0 for
 * the default: min(32, SMs / (2 * the most PEs sharing one GPU)), with the fewest SMs of
 * any PE's GPU, and no more than one CTA per 8 KiB of data per PE (at least 1); calls in
 * the low-latency form (at most TMASHMEM_COLL_LL_BYTES per peer) use one CTA per 4 KiB per
 * peer, and staged calls (at most 256 KiB per peer, of the kinds TMASHMEM_COLL_STAGED
 * names) more when each CTA's share must fit its part of the staging region
 * (docs/collectives.md, "The low-latency form", "Staged forms"). It must be the same on
 * every PE. */

/* dest (n_pes * bytes) on every PE receives PE q's src (bytes) at offset q * bytes.
 * NVSHMEM's fcollect, NCCL's all-gather. bytes 0 is a no-op. */
tmashmem_status_t tmashmem_allgather_on_stream(void* dest, const void* src, size_t bytes, int n_sms,
                                               tmashmem_stream_t stream);

/* dest (count elements) on PE p = op over q of PE q's src[p * count, (p + 1) * count);
 * src holds n_pes * count elements. dtype f32, f16, bf16 or i32; op a tmashmem_reduce_op_t. */
tmashmem_status_t tmashmem_reduce_scatter_on_stream(void* dest, const void* src, size_t count,
                                                    tmashmem_dtype_t dtype, int op, int n_sms,
                                                    tmashmem_stream_t stream);

/* dest (count elements) on every PE = op over q of PE q's src (count elements). */
tmashmem_status_t tmashmem_allreduce_on_stream(void* dest, const void* src, size_t count,
                                               tmashmem_dtype_t dtype, int op, int algo, int n_sms,
                                               tmashmem_stream_t stream);

/* PE p's src[q * bytes, (q + 1) * bytes) lands in PE q's dest[p * bytes, (p + 1) * bytes);
 * both n_pes * bytes. */
tmashmem_status_t tmashmem_alltoall_on_stream(void* dest, const void* src, size_t bytes, int n_sms,
                                              tmashmem_stream_t stream);

/* Variable blocks (MoE dispatch/combine): PE p sends src[send_offsets[q], + send_counts[q])
 * to PE q, which receives it at dest[recv_offsets[p], + send_counts[q]), all in bytes. The
 * three arrays (n_pes uint64_t each) are symmetric device memory read when the kernel runs
 * (so the counts may come from an earlier kernel of the stream, or a graph replay);
 * recv_offsets is read on the receiving PE. A range outside src_bytes / dest_bytes makes
 * the kernel print the PEs and values and trap. */
tmashmem_status_t tmashmem_alltoallv_on_stream(void* dest, size_t dest_bytes, const void* src,
                                               size_t src_bytes, const uint64_t* send_counts,
                                               const uint64_t* send_offsets,
                                               const uint64_t* recv_offsets, int n_sms,
                                               tmashmem_stream_t stream);

/* dest (bytes) on every PE receives PE root's src (bytes). */
tmashmem_status_t tmashmem_broadcast_on_stream(void* dest, const void* src, size_t bytes, int root,
                                               int n_sms, tmashmem_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* TMASHMEM_COLLECTIVES_H */
