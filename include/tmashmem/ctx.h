/* tmashmem device context: the POD that crosses the host/device line.
 *
 * The host fills it with tmashmem_device_ctx(); kernels take it by value as a
 * __grid_constant__ parameter, so the device API needs no __constant__ symbol and
 * no relocatable device code. Plain C so that host code, nvcc and NVRTC all see
 * the same layout; the size is checked by static_assert on both sides. */
#ifndef TMASHMEM_CTX_H
#define TMASHMEM_CTX_H

#include <stdint.h>

#define TMASHMEM_CTX_VERSION 2u

/* Every PE of the job runs on this PE's GPU (one GPU, several processes): signals
 * and their waits may then order memory at GPU scope instead of system scope, since
 * every thread that can observe them, and every byte they publish, is on this GPU. */
#define TMASHMEM_CTX_FLAG_ONE_GPU 1u

/* Bytes of the per-rank signal pad: a symmetric region the library reserves at
 * the start of every heap for its own signals (device barriers, on-stream ops). */
#define TMASHMEM_SIGNAL_PAD_BYTES (64u * 1024u)

/* Slots of the signal pad reserved for library use (barrier counters, ...);
 * user signals live in ordinary symmetric allocations. */
#define TMASHMEM_SIGNAL_PAD_BARRIER_OFFSET 0u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tmashmem_ctx {
  uint32_t version;       /* TMASHMEM_CTX_VERSION */
  int32_t my_pe;          /* this rank */
  int32_t n_pes;          /* all ranks */
  int32_t first_local_pe; /* PEs [first_local_pe, first_local_pe + n_local_pes) share this node */
  int32_t n_local_pes;
  uint32_t flags; /* TMASHMEM_CTX_FLAG_* */
  /* Bit s: local PE first_local_pe + s is load/store reachable (its heap is mapped here;
   * this PE's own bit is set). The one representation of reachability: the tensor
   * handle (tensor_handle.h) carries the same three fields, the runtime fills them in one
   * place, and tmashmem::reachable() (tmashmem/device/ctx.cuh) decodes them. */
  uint64_t reachable;
  uint64_t heap_base;   /* this rank's heap window (device address) */
  uint64_t peer_stride; /* bytes between two consecutive PEs' windows */
  uint64_t heap_size;   /* bytes of the heap currently backed by memory on every rank */
  uint64_t signal_pad;  /* device address of this rank's signal pad (symmetric) */
  uint64_t mc_base;     /* multicast address of heap offset 0 (docs/multicast.md); 0: none */
  uint64_t reserved[3];
} tmashmem_ctx_t;

#ifdef __cplusplus
}
static_assert(sizeof(tmashmem_ctx_t) == 96,
              "tmashmem_ctx_t layout changed: bump TMASHMEM_CTX_VERSION");
#endif

#endif /* TMASHMEM_CTX_H */
