// Which form an on-stream collective takes beside the direct one (the low-latency form,
// tmashmem/device/collectives/low_latency.cuh; the staged form, staged.cuh), how many CTAs that
// form needs, and the symmetric regions the two forms use. Host half; the caller
// (runtime/collectives.cpp) holds the runtime's lock.
#pragma once

#include <cstddef>

#include "runtime/collectives_kernels.h"
#include "runtime/runtime.h"

namespace tmashmem {

// Bytes of every PE's low-latency state (made at init: coll_low_latency_init).
constexpr size_t kCollLowLatencyBytes = size_t(4) << 20;

// What decides a call's form.
struct CollFormQuery {
  CollKind kind;
  int algo;  // all-reduce: resolved (never AUTO)
  int n_pes;
  size_t piece_bytes;  // what one PE sends each peer (0: not a per-peer kind)
  int ctas;            // the call's CTA count so far
  bool fixed_ctas;     // the caller chose it (n_sms > 0): the form must do with it
};

// CTAs for the low-latency form: at least q.ctas, enough that every CTA's lines fit its
// region; 0 when the call does not take that form (alltoallv, a two-shot all-reduce, one PE,
// nothing to move, a piece above TMASHMEM_COLL_LL_BYTES or above what the regions of 32 CTAs
// hold, or a fixed count too small).
int coll_low_latency_ctas(const Runtime& rt, const CollFormQuery& q);

// CTAs for the staged form: at least q.ctas, enough that every CTA's slice fits its staging
// slot; 0 when the piece is not staged (its kind is not in `policy`, TMASHMEM_COLL_STAGED, it
// is too large, or a fixed count is too small).
int coll_staged_ctas(const CollFormQuery& q, CollStaged policy);

// COLLECTIVE on the first staged call (see the definition): this job's staging region.
tmashmem_status_t coll_staging_region(Runtime& rt, const char* call, void** out);

// Bytes of one (slot, parity, source PE) region of this job's staging: staged.cuh's
// coll_staging_slot_bytes for this region (that header is device code).
size_t coll_staging_slot_size(int n_pes);

}  // namespace tmashmem
