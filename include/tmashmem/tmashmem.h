/* tmashmem host API.
 *
 * Every call returns a status or, for calls that return a pointer, NULL on error.
 * On error, tmashmem_last_error() returns a message for the calling thread that
 * names the rank, the offending value and what to change.
 *
 * Calls marked COLLECTIVE must be made by every PE, in the same order, with the same
 * arguments; the arguments are all-gathered and checked, and a mismatch is an error
 * on every PE (TMASHMEM_ERROR_SYMMETRY) that names the PEs and the values. */
#ifndef TMASHMEM_TMASHMEM_H
#define TMASHMEM_TMASHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "tmashmem/ctx.h"

#define TMASHMEM_VERSION_MAJOR 0
#define TMASHMEM_VERSION_MINOR 1
#define TMASHMEM_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tmashmem_status {
  TMASHMEM_SUCCESS = 0,
  TMASHMEM_ERROR_INVALID_VALUE = 1,   /* a bad argument; the message names it */
  TMASHMEM_ERROR_NOT_INITIALIZED = 2, /* call before tmashmem_init or after finalize */
  TMASHMEM_ERROR_ALREADY_INITIALIZED = 3,
  TMASHMEM_ERROR_NO_DRIVER = 4,       /* libcuda.so.1 missing or too old */
  TMASHMEM_ERROR_NO_DEVICE = 5,       /* the driver reports no usable CUDA device */
  TMASHMEM_ERROR_CUDA = 6,            /* a CUDA driver call failed; the message names it */
  TMASHMEM_ERROR_OUT_OF_MEMORY = 7,   /* heap window or device memory exhausted */
  TMASHMEM_ERROR_SYMMETRY = 8,        /* PEs disagreed on a collective call's arguments */
  TMASHMEM_ERROR_BOOTSTRAP = 9,       /* the bootstrap (MPI, ...) failed */
  TMASHMEM_ERROR_TIMEOUT = 10,        /* a bounded wait expired; the message names who is missing */
  TMASHMEM_ERROR_NOT_SUPPORTED = 11,  /* the platform or build lacks a feature */
  TMASHMEM_ERROR_SYSTEM = 12,         /* an operating-system call failed (errno in the message) */
  TMASHMEM_ERROR_INTERNAL = 13
} tmashmem_status_t;

typedef enum tmashmem_bootstrap_kind {
  TMASHMEM_BOOTSTRAP_AUTO = 0,   /* see tmashmem_init: MPI launcher, unique id, NCCL comm, else single */
  TMASHMEM_BOOTSTRAP_MPI = 1,
  TMASHMEM_BOOTSTRAP_SINGLE = 2,
  TMASHMEM_BOOTSTRAP_UID = 3,    /* TCP to a root named by a tmashmem_uniqueid_t */
  TMASHMEM_BOOTSTRAP_NCCL = 4    /* over the ncclComm_t in tmashmem_init_attr_t.nccl_comm */
} tmashmem_bootstrap_kind_t;

/* A unique id names the root of a unique-id bootstrap (address family, address, port)
 * and carries a 128-bit random secret that every PE must present to join. Plain bytes:
 * copy it to the other processes by any means (a file, the environment as text, your
 * own launcher); whoever holds it can join the job, so hand it only to its PEs. */
#define TMASHMEM_UNIQUEID_BYTES 64
typedef struct tmashmem_uniqueid {
  unsigned char internal[TMASHMEM_UNIQUEID_BYTES];
} tmashmem_uniqueid_t;
/* Text form (hex) of an id, for TMASHMEM_BOOTSTRAP_UID: 2 * TMASHMEM_UNIQUEID_BYTES
 * characters plus the terminating NUL. */
#define TMASHMEM_UNIQUEID_TEXT_BYTES (2 * TMASHMEM_UNIQUEID_BYTES + 1)

/* Makes a new id whose root is this host (TMASHMEM_BOOTSTRAP_UID_ADDR, else an address
 * of TMASHMEM_BOOTSTRAP_UID_IFNAME, else the first suitable interface; family from
 * TMASHMEM_BOOTSTRAP_UID_FAMILY) on a port that was free when the id was made. The
 * PE of rank 0 listens there during tmashmem_init, so it must run on this host. */
tmashmem_status_t tmashmem_get_uniqueid(tmashmem_uniqueid_t* id);
/* Hex text of `id` into `text` (at least TMASHMEM_UNIQUEID_TEXT_BYTES bytes). */
tmashmem_status_t tmashmem_uniqueid_to_string(const tmashmem_uniqueid_t* id, char* text,
                                              size_t text_bytes);
/* Parses hex (as written above) or base64 text. */
tmashmem_status_t tmashmem_uniqueid_from_string(const char* text, tmashmem_uniqueid_t* id);

typedef enum tmashmem_handle_type {
  TMASHMEM_HANDLE_AUTO = 0,     /* fabric where exporting one works, else POSIX fd */
  TMASHMEM_HANDLE_POSIX_FD = 1,
  TMASHMEM_HANDLE_FABRIC = 2
} tmashmem_handle_type_t;

#define TMASHMEM_INIT_ATTR_VERSION 2u

/* Overrides for tmashmem_init_attr. Zero (or AUTO) in a field means "take the
 * TMASHMEM_* environment variable, else the default". Any other value must pass the
 * same check as the variable's text (e.g. bootstrap_timeout_ms >= 1 like
 * TMASHMEM_BOOTSTRAP_TIMEOUT_MS, debug >= 0, the enums one of their constants), else
 * init fails with TMASHMEM_ERROR_INVALID_VALUE naming the field; so do a wrong version
 * and non-zero `reserved` words. Fill with tmashmem_init_attr_set_defaults() first. */
typedef struct tmashmem_init_attributes {
  uint32_t version;                    /* TMASHMEM_INIT_ATTR_VERSION */
  tmashmem_bootstrap_kind_t bootstrap;
  const void* mpi_comm;                /* pointer to an MPI_Comm; NULL = MPI_COMM_WORLD */
  size_t heap_max;                     /* bytes of heap window per PE */
  size_t chunk_size;                   /* bytes of physical memory created per growth step */
  tmashmem_handle_type_t handle_type;
  int32_t bootstrap_timeout_ms;        /* bound on every blocking bootstrap call */
  int32_t debug;                       /* 0 quiet, 1 info, 2 trace */
  /* Unique-id bootstrap: the id from tmashmem_get_uniqueid (NULL = TMASHMEM_BOOTSTRAP_UID),
   * this process's rank in [0, uid_size) and the number of PEs (uid_size 0 = take both
   * from TMASHMEM_BOOTSTRAP_UID_RANK / _SIZE). */
  const tmashmem_uniqueid_t* uniqueid;
  int32_t uid_rank;
  int32_t uid_size;
  /* NCCL bootstrap: an ncclComm_t (cast to void*) whose ranks become the PEs. It stays
   * the caller's: tmashmem never destroys or aborts it. */
  void* nccl_comm;
  uint64_t reserved[4];                /* must be 0 */
} tmashmem_init_attr_t;

void tmashmem_init_attr_set_defaults(tmashmem_init_attr_t* attr);

/* COLLECTIVE. Start the runtime on the current CUDA device (or, with none chosen,
 * node-local rank modulo the device count). The bootstrap, unless TMASHMEM_BOOTSTRAP or
 * the attr's field names one: NCCL when the attr carries nccl_comm; MPI when the attr
 * carries mpi_comm, MPI is initialised, or an MPI launcher started the process
 * (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, ...) and the build has MPI; the unique-id
 * bootstrap when an id is given (attr or TMASHMEM_BOOTSTRAP_UID); else single.
 * tmashmem_init_attr(NULL) is tmashmem_init(): the environment and the defaults.
 * Settings marked "same on every PE" (tmashmem-info; docs/reliability.md) are compared
 * first: a PE with another value fails init on every PE with TMASHMEM_ERROR_SYMMETRY
 * naming the setting, the PEs and the values. A second init without finalize is
 * TMASHMEM_ERROR_ALREADY_INITIALIZED and changes nothing. When MPI is the bootstrap and
 * not yet initialised, init calls MPI_Init_thread itself and MPI_Finalize runs at process
 * exit (atexit), not in tmashmem_finalize, so that init may be called again; a program
 * that calls MPI_Init itself also calls MPI_Finalize, after tmashmem_finalize. Every
 * blocking step is bounded by TMASHMEM_BOOTSTRAP_TIMEOUT_MS: a PE that dies or never
 * arrives is TMASHMEM_ERROR_TIMEOUT on the others, naming it. */
tmashmem_status_t tmashmem_init(void);
tmashmem_status_t tmashmem_init_attr(const tmashmem_init_attr_t* attr);
/* COLLECTIVE. Unmaps and releases everything; safe to call init again afterwards.
 * Allocations and tensors still alive are released with the heap (a tensor handle
 * stays a host object until tmashmem_tensor_destroy). After a timeout or any bootstrap
 * failure the PEs are out of step: finalize still releases this PE's resources but
 * returns TMASHMEM_ERROR_BOOTSTRAP ("... restart the job"); the job cannot continue
 * with tmashmem and should exit. Under mpirun, Open MPI 4.1 aborts the whole job as soon
 * as a rank dies (before any PE's timeout can report it) unless started with
 * `--mca orte_abort_on_non_zero_status 0` (docs/reliability.md). */
tmashmem_status_t tmashmem_finalize(void);
int tmashmem_initialized(void);

int tmashmem_my_pe(void);  /* -1 before init */
int tmashmem_n_pes(void);  /* -1 before init */
int tmashmem_local_pe(void);     /* rank among the PEs on this node */
int tmashmem_n_local_pes(void);
int tmashmem_device(void);       /* CUDA device ordinal in use, -1 before init */

/* COLLECTIVE. Symmetric allocations: the same offset on every PE. Return NULL on
 * error (see tmashmem_last_error) and for size 0 (not an error). Memory is device
 * memory of this PE's GPU, 256-byte aligned unless a larger alignment is asked.
 * tmashmem_align's alignment must be a power of two no larger than the heap's allocation
 * granularity (2 MiB on current GPUs and the emulator); larger is
 * TMASHMEM_ERROR_INVALID_VALUE. TMASHMEM_HEAP_MAX (and chunk_size) are rounded up to
 * that granularity, so a heap maximum of 1K holds 2 MiB, the signal pad included. */
void* tmashmem_malloc(size_t size);
void* tmashmem_calloc(size_t count, size_t size);
void* tmashmem_align(size_t alignment, size_t size);
/* COLLECTIVE. NULL is a no-op; a pointer not returned by malloc (the signal pad
 * included) is an error. */
tmashmem_status_t tmashmem_free(void* ptr);

/* Address of `ptr`'s symmetric counterpart on `pe`, usable by loads and stores of
 * this PE's GPU; NULL if `pe` is not reachable by load/store or `ptr` is outside
 * the heap. Not collective; thread-safe. */
void* tmashmem_ptr(const void* ptr, int pe);

/* Multicast address of `ptr` (an address in this PE's heap): a store there reaches
 * every PE of the node (device multimem instructions only; see docs/multicast.md).
 * NULL when multicast is not used (TMASHMEM_MULTICAST, the gate in docs/design.md,
 * decision 7) or `ptr` is outside the backed heap. Not collective; thread-safe. */
void* tmashmem_mc_ptr(const void* ptr);

/* COLLECTIVE, host-side: all PEs reach it before any leaves (no device ordering). */
tmashmem_status_t tmashmem_barrier_all(void);

/* This PE's signal pad (TMASHMEM_SIGNAL_PAD_BYTES, symmetric), reserved for the
 * library's device barriers and on-stream signals; NULL before init. It lives until
 * tmashmem_finalize: tmashmem_free of it is TMASHMEM_ERROR_INVALID_VALUE. */
void* tmashmem_signal_pad(void);

/* Fill the POD that kernels take by value (see tmashmem/ctx.h). Refresh it after
 * a malloc that grew the heap (heap_size changes; addresses never move). */
tmashmem_status_t tmashmem_device_ctx(tmashmem_ctx_t* ctx);

/* The bootstrap tmashmem_init would start now (before init) or started (after), and
 * why, as one line of text. Not collective. */
const char* tmashmem_bootstrap_choice(void);

const char* tmashmem_error_string(tmashmem_status_t status);
/* The calling thread's last error message ("" if none). Valid until the next call.
 * Only tmashmem_init clears it: a successful call leaves the message of an earlier
 * failure in place, so read it only right after a call that failed. */
const char* tmashmem_last_error(void);

/* ------------------------------------------------------------------------------------ */
/* On-stream operations                                                                 */
/* ------------------------------------------------------------------------------------ */
/* Communication enqueued on a CUDA stream: it runs in stream order with the stream's
 * other work, and every call may be captured into a CUDA graph and replayed (no host
 * synchronisation, no allocation, no host-side waiting on the capture path). Each
 * call checks its arguments on the host and returns an error without enqueueing
 * anything when they are wrong; errors of the GPU work itself surface at the
 * stream's next synchronisation, like any kernel's. Each call reports only its own
 * outcome: an error CUDA gave an earlier on-stream call (a rejected launch or copy) is
 * not reported again by a later one, unless it is sticky (the CUDA context is unusable),
 * in which case the later call's own work fails with it too.
 *
 * `stream` is a cudaStream_t (or CUstream) of the device tmashmem_init chose
 * (tmashmem_device()); 0 is the legacy default stream. What is checked: 0,
 * CU_STREAM_LEGACY and CU_STREAM_PER_THREAD (cudaStreamLegacy, cudaStreamPerThread) are
 * accepted as the current context's streams; any other handle is asked for its context
 * (cuStreamGetCtx, a host-side lookup without synchronisation), and a stream of another
 * context or device is TMASHMEM_ERROR_INVALID_VALUE naming both, a handle the driver
 * rejects is TMASHMEM_ERROR_CUDA naming cuStreamGetCtx and its error. What is not: CUDA
 * leaves a destroyed or made-up stream handle undefined, so such a handle may also crash
 * inside the driver's lookup (or name a newer stream that reuses its address); the
 * library cannot tell it from a live one. The library launches its
 * small kernels through its own copy of the CUDA runtime, in the device's primary
 * context, so streams created by the application's runtime or driver API work.
 *
 * Signals use CUDA stream memory operations (cuStreamWriteValue64,
 * cuStreamWaitValue64) instead of kernels where the device supports 64-bit ones
 * (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, asked once per device) and
 * TMASHMEM_STREAM_MEM_OPS is not 0/off: no GPU thread spins while a stream waits.
 * They are captured into graphs like the kernels are. The signal calls make the
 * runtime's CUDA context current on the calling thread while they enqueue, and
 * restore the thread's previous context before they return. */

/* The same type as cudaStream_t and CUstream (declared here so that this header
 * needs no CUDA header). */
typedef struct CUstream_st* tmashmem_stream_t;

/* How tmashmem_signal_op_on_stream (and the device signal_op) updates a signal. */
typedef enum tmashmem_signal_op {
  TMASHMEM_SIGNAL_SET = 0, /* signal = value */
  TMASHMEM_SIGNAL_ADD = 1  /* signal += value, atomically */
} tmashmem_signal_op_t;

/* When a signal wait ends: when `signal <cmp> value` holds (unsigned 64-bit). */
typedef enum tmashmem_cmp {
  TMASHMEM_CMP_EQ = 0,
  TMASHMEM_CMP_NE = 1,
  TMASHMEM_CMP_GT = 2,
  TMASHMEM_CMP_GE = 3,
  TMASHMEM_CMP_LT = 4,
  TMASHMEM_CMP_LE = 5
} tmashmem_cmp_t;

/* COLLECTIVE (every PE enqueues the same sequence of barriers). When the barrier
 * kernel runs, the stream's earlier work on every PE is complete and visible to
 * every PE, and no PE's later stream work starts before every PE reached it.
 * Shares its counters with the device barriers (tmashmem/device/barrier.cuh): at
 * most one barrier (device or on-stream) may be in flight per PE at a time. Needs
 * every PE to be load/store reachable (TMASHMEM_ERROR_NOT_SUPPORTED otherwise). */
tmashmem_status_t tmashmem_barrier_all_on_stream(tmashmem_stream_t stream);

/* Copies `bytes` from local `src` (device or pinned host memory) to PE `pe`'s copy
 * of symmetric `dest`, with the copy engine through the peer mapping. Completes in
 * stream order: the stream's next operation sees it finished. [dest, dest + bytes)
 * must lie inside this PE's heap as backed so far (checked by offsets: a size that
 * would wrap the address space, SIZE_MAX included, is TMASHMEM_ERROR_INVALID_VALUE);
 * the same holds for getmem's `src`. */
tmashmem_status_t tmashmem_putmem_on_stream(void* dest, const void* src, size_t bytes, int pe,
                                            tmashmem_stream_t stream);

/* Copies `bytes` from PE `pe`'s copy of symmetric `src` to local `dest`, with the copy
 * engine through the peer mapping. */
tmashmem_status_t tmashmem_getmem_on_stream(void* dest, const void* src, size_t bytes, int pe,
                                            tmashmem_stream_t stream);

/* Updates PE `pe`'s copy of the symmetric signal `sig` (8-byte aligned) with `op`
 * (a tmashmem_signal_op_t) and `value`, once the stream's earlier work is complete,
 * with release semantics: a PE that sees the new value also sees that work's
 * writes.
 *
 * TMASHMEM_SIGNAL_SET is one 64-bit stream write (cuStreamWriteValue64 with
 * CU_STREAM_WRITE_VALUE_DEFAULT, whose system-wide memory fence, scoped to the
 * stream, precedes the write) where stream memory operations are used (see above),
 * else a one-thread kernel (system-scope fence, then a releasing store).
 * TMASHMEM_SIGNAL_ADD is always the kernel (an atomic add with release): CUDA 13.0 has
 * no atomic read-modify-write stream memory operation. */
tmashmem_status_t tmashmem_signal_op_on_stream(uint64_t* sig, uint64_t value, int op, int pe,
                                               tmashmem_stream_t stream);

/* Holds the stream until this PE's signal `sig` (8-byte aligned) satisfies
 * `*sig <cmp> value` (`cmp` a tmashmem_cmp_t); the stream's later work sees what
 * the signalling PE published before its signal (acquire). Waits without a bound.
 *
 * Where stream memory operations are used (see above), EQ, GE and GT are a stream
 * wait (cuStreamWaitValue64): EQ waits for *sig == value; GE for CUDA's cyclic
 * comparison (int64_t)(*sig - value) >= 0; GT for (int64_t)(*sig - (value + 1)) >= 0.
 * GE and GT therefore agree with the unsigned comparison whenever *sig and value are
 * less than 2^63 apart (e.g. counters that start at 0 and stay below 2^63); outside
 * that range such a wait may end early or never. NVSHMEM's
 * nvshmemx_signal_wait_until_on_stream has the same property where it uses
 * cuStreamWaitValue64 (its GE with CU_STREAM_WAIT_VALUE_GEQ). GE 0 and GT UINT64_MAX,
 * NE, LT and LE, and every comparison when stream memory operations are not used,
 * wait on one thread of the GPU with the exact unsigned comparison (in [0, 2^64)). */
tmashmem_status_t tmashmem_signal_wait_until_on_stream(uint64_t* sig, int cmp, uint64_t value,
                                                       tmashmem_stream_t stream);

/* The bounded form: holds the stream until `*sig <cmp> value` (exact unsigned comparison)
 * or until at least `timeout_ns` nanoseconds (> 0; the GPU's global timer) have passed,
 * whichever is first, then writes the outcome to `*status`: TMASHMEM_SUCCESS when the
 * comparison held (acquire, as above), TMASHMEM_ERROR_TIMEOUT when the bound passed first.
 * The stream continues either way: its later work runs after a timeout too, so read
 * `*status` after synchronising the stream (or an event after the call) before trusting
 * data the signal guards. `status` must be a 4-byte aligned int32_t the GPU can write and
 * the host can read: mapped pinned host memory (cudaHostAlloc(..., cudaHostAllocMapped))
 * or managed memory, not the symmetric heap (refused). The wait never uses a stream
 * memory operation (cuStreamWaitValue64 has no bound): it is always one GPU thread that
 * polls (one resident block for the whole wait, and a clock read every 64 bursts of
 * polls), so it costs a kernel launch and an SM slot that the unbounded EQ/GE/GT form
 * does not. Debug builds of the device headers (TMASHMEM_DEVICE_DEBUG, see
 * include/tmashmem/device/signal.cuh) print the wait and trap at the bound instead,
 * which leaves the CUDA context unusable (a sticky error at the next synchronisation).
 * Argument checks as for tmashmem_signal_wait_until_on_stream, plus timeout_ns > 0 and
 * `status`; errors are returned without enqueueing anything. */
tmashmem_status_t tmashmem_signal_wait_until_on_stream_timeout(uint64_t* sig, int cmp,
                                                               uint64_t value, uint64_t timeout_ns,
                                                               int32_t* status,
                                                               tmashmem_stream_t stream);

#ifdef __cplusplus
}
#endif

/* Symmetric tensors (host object and device handle) are part of the C API. */
#include "tmashmem/tensor.h"
/* Collectives on a stream (all-gather, reduce-scatter, all-reduce, all-to-all, broadcast). */
#include "tmashmem/collectives.h"
/* Fused communication + GEMM on a stream (all-gather + GEMM, GEMM + reduce-scatter). */
#include "tmashmem/fused.h"

#endif /* TMASHMEM_TMASHMEM_H */
