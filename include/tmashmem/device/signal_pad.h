/* Layout of the signal pad: the library-owned symmetric region every PE has at
 * tmashmem_ctx_t.signal_pad (TMASHMEM_SIGNAL_PAD_BYTES bytes, zeroed by the runtime
 * at init, never reset afterwards).
 *
 * Shared by host and device code; plain C. Every counter below only grows (epochs
 * and generations), so the pad needs no re-initialisation between barriers,
 * kernels or graph replays; 64-bit counters do not wrap in practice.
 *
 *   offset     bytes  field
 *   0          128    grid_arrived     blocks of the running grid that entered the current
 *                                      device barrier (this PE's GPU only; reset to 0 by
 *                                      the block that completes the barrier)
 *   128        128    grid_generation  device barriers this PE has completed (this PE's GPU)
 *   256        8192   barrier_epoch[q] device barriers PE q has entered, written only by PE q
 *                                      (a remote store from q's GPU), read only by this PE
 *   8448       256    coll_epoch[b]    collective steps this PE ran on signal slot b
 *                                      (this PE's GPU only; tmashmem/device/collectives/)
 *   8704       16384  coll_ready[b][q] PE q's latest "ready" epoch on slot b, written by q
 *   25088      16384  coll_done[b][q]  PE q's latest "done" epoch on slot b, written by q
 *   41472      128    mc_barrier_count multicast barriers entered, summed over every PE: each PE
 *                                      adds 1 to every PE's copy per barrier (multimem.red
 *                                      through the multicast address; barrier.cuh)
 *   41600      128    mc_barrier_entered  multicast barriers this PE entered (this PE's GPU)
 *   41728      23808  reserved         zero; for later library use
 *
 * Who writes what: grid_arrived and grid_generation are touched by this PE's GPU
 * only; barrier_epoch[q] by PE q only; mc_barrier_count by every PE (atomic adds only),
 * mc_barrier_entered by this PE's GPU only. Each lives on its own 128-byte line or in an
 * array written by remote PEs, so local spinning does not share lines with remote
 * writers. */
#ifndef TMASHMEM_DEVICE_SIGNAL_PAD_H
#define TMASHMEM_DEVICE_SIGNAL_PAD_H

#include <stdint.h>

#include "tmashmem/ctx.h"

/* Bump when the layout below changes (the pad is library-private, so host and
 * device code of one build always agree; the number is for readers and tools). */
#define TMASHMEM_SIGNAL_PAD_LAYOUT_VERSION 3u

/* PEs the barrier slots can address. The device barrier also needs every PE to be
 * load/store reachable, which tmashmem_ctx_t limits to 64 today. */
#define TMASHMEM_SIGNAL_PAD_MAX_PES 1024u

/* Signal slots (one per concurrently running CTA of a collective) and PEs the
 * collectives' region addresses (tmashmem/device/collectives/state.cuh). */
#define TMASHMEM_SIGNAL_PAD_COLL_SLOTS 32u
#define TMASHMEM_SIGNAL_PAD_COLL_PES 64u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tmashmem_signal_pad {
  uint64_t grid_arrived;
  uint64_t grid_arrived_line_[15];
  uint64_t grid_generation;
  uint64_t grid_generation_line_[15];
  uint64_t barrier_epoch[TMASHMEM_SIGNAL_PAD_MAX_PES];
  uint64_t coll_epoch[TMASHMEM_SIGNAL_PAD_COLL_SLOTS];
  uint64_t coll_ready[TMASHMEM_SIGNAL_PAD_COLL_SLOTS * TMASHMEM_SIGNAL_PAD_COLL_PES];
  uint64_t coll_done[TMASHMEM_SIGNAL_PAD_COLL_SLOTS * TMASHMEM_SIGNAL_PAD_COLL_PES];
  uint64_t mc_barrier_count;
  uint64_t mc_barrier_count_line_[15];
  uint64_t mc_barrier_entered;
  uint64_t mc_barrier_entered_line_[15];
  uint64_t reserved[(TMASHMEM_SIGNAL_PAD_BYTES - 512u) / 8u - TMASHMEM_SIGNAL_PAD_MAX_PES -
                    TMASHMEM_SIGNAL_PAD_COLL_SLOTS * (1u + 2u * TMASHMEM_SIGNAL_PAD_COLL_PES)];
} tmashmem_signal_pad_t;

#ifdef __cplusplus
}
static_assert(sizeof(tmashmem_signal_pad_t) == TMASHMEM_SIGNAL_PAD_BYTES,
              "tmashmem_signal_pad_t must fill the signal pad exactly");
static_assert(TMASHMEM_SIGNAL_PAD_BARRIER_OFFSET == 0u,
              "the barrier state sits at the start of the signal pad");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(tmashmem_signal_pad_t) == TMASHMEM_SIGNAL_PAD_BYTES,
               "tmashmem_signal_pad_t must fill the signal pad exactly");
#endif

#endif /* TMASHMEM_DEVICE_SIGNAL_PAD_H */
