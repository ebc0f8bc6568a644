// The forms of the on-stream collectives beside the direct one, host half
// (runtime/collectives_forms.h): when a call takes the low-latency or the staged form, the
// CTAs that form needs, and the two forms' symmetric regions.
#include "runtime/collectives_forms.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/error.h"
#include "tmashmem/collectives.h"
#include "tmashmem/device/signal_pad.h"

namespace tmashmem {
namespace {

// The staged (one-handshake) forms (tmashmem/device/collectives/staged.cuh): their
// symmetric staging region per PE, and the largest piece per peer they take. Up to it a
// collective is latency-bound, and one handshake with the data sent ahead of the signal
// beats the direct forms' two for the gathering kinds (all-gather, all-to-all: 6-26%
// faster at 4 KiB-256 KiB). For reduce-scatter, one-shot all-reduce and broadcast the
// direct forms measured 9-13% faster from 64 KiB (they read the peers' data once, where the
// staged forms add a pass through the staging), and at 4 PEs in 30-34 of the 35 rows of the
// seventh session's sweep: so the default, TMASHMEM_COLL_STAGED=gather, stages only
// the gathering kinds (docs/runs.md, "Staged against direct" and "Seventh session").
//
// Their guard (coll_staged_begin) reads every peer's Ready of the slot's previous step,
// so every step signals Ready to every peer (coll_exchange, exchange.cuh), also a
// broadcast whose non-roots announce to nobody.
constexpr size_t kStagingBytes = size_t(4) << 20;
constexpr size_t kStagedMaxPieceBytes = 256 * 1024;  // also in collectives.h, settings.h, docs
static_assert(kStagingBytes / (size_t(TMASHMEM_COLL_MAX_SMS) * 2u * TMASHMEM_SIGNAL_PAD_COLL_PES) >=
                  16,
              "every (slot, parity, source PE) region of the staging holds a 16-byte unit");

// The low-latency form (tmashmem/device/collectives/low_latency.cuh): its symmetric state
// per PE and the layout coll_ll_state gives it over the signal pad's slots: 256 bytes of
// counters, then one region per (slot, parity, source PE), 16 bytes of lines per 8 bytes of
// data. Zeroed once (a line's flag, the step's epoch, tells it from every stale one), so it
// is made at init: zeroing it in the first LL call would synchronise the device, which a
// call being captured into a graph must not do. Made where the job may use it: 2 PEs or
// more, TMASHMEM_COLL_LL_BYTES > 0, and a heap of at least 64 times its size (256 MiB), so
// that small heaps keep all their room.
constexpr size_t kLowLatencyHeapShare = 64;
// 16-byte units (two lines) per CTA of 512 threads at one line per thread.
constexpr size_t kLowLatencyUnitsPerCta = 256;
constexpr size_t kLowLatencyHeadBytes = 256;
static_assert(TMASHMEM_COLL_MAX_SMS * sizeof(uint64_t) <= kLowLatencyHeadBytes,
              "the LL state's head holds a counter per slot");

}  // namespace

// COLLECTIVE: every PE reaches the first staged call with the same arguments (the symmetry
// check just before agreed on them). This job's staging region, allocated by that call
// (symmetric_alloc agrees on its own size once more); init's teardown forgets it.
tmashmem_status_t coll_staging_region(Runtime& rt, const char* call, void** out) {
  if (rt.coll_staging == nullptr) {
    const std::string what = std::string(call) + " (the collectives' staging region)";
    TMASHMEM_TRY(symmetric_alloc(what.c_str(), kStagingBytes, 256, false, {}, &rt.coll_staging));
  }
  *out = rt.coll_staging;
  return TMASHMEM_SUCCESS;
}

size_t coll_staging_slot_size(int n) {
  return kStagingBytes / (size_t(TMASHMEM_COLL_MAX_SMS) * 2u * size_t(n)) / 16 * 16;
}

int coll_staged_ctas(const CollFormQuery& q, CollStaged policy) {
  const bool fixed = q.fixed_ctas;
  const int algo = q.algo, n = q.n_pes, ctas = q.ctas;
  const bool gathering = q.kind == CollKind::Allgather || q.kind == CollKind::Alltoall;
  const bool other = q.kind == CollKind::Broadcast || q.kind == CollKind::ReduceScatter ||
                     (q.kind == CollKind::Allreduce && algo == TMASHMEM_ALLREDUCE_ONE_SHOT);
  const bool kind_ok =
      (policy != CollStaged::Off && gathering) || (policy == CollStaged::All && other);
  if (!kind_ok || n < 2 || q.piece_bytes == 0 || q.piece_bytes > kStagedMaxPieceBytes) return 0;
  const size_t slot = coll_staging_slot_size(n);
  // coll_slice: ceil(units / ctas) 16-byte units per CTA.
  const size_t units = (q.piece_bytes + 15) / 16, per_slot = slot / 16;
  const size_t needed = (units + per_slot - 1) / per_slot;
  if (needed > size_t(TMASHMEM_COLL_MAX_SMS) || (fixed && size_t(ctas) < needed)) return 0;
  return std::max(ctas, static_cast<int>(needed));
}

int coll_low_latency_ctas(const Runtime& rt, const CollFormQuery& q) {
  const int algo = q.algo, n = q.n_pes, ctas = q.ctas;
  const bool kind_ok = q.kind != CollKind::Alltoallv &&
                       (q.kind != CollKind::Allreduce || algo == TMASHMEM_ALLREDUCE_ONE_SHOT);
  if (!kind_ok || rt.coll_low_latency == nullptr || n < 2 || q.piece_bytes == 0 ||
      q.piece_bytes > rt.config.coll_ll_bytes)
    return 0;
  const size_t regions = size_t(TMASHMEM_COLL_MAX_SMS) * 2u * size_t(n);
  const size_t region_lines = (kCollLowLatencyBytes - kLowLatencyHeadBytes) / regions / 16;
  // coll_slice(piece, part, parts): ceil(units / ctas) 16-byte units (two lines each) per CTA.
  const size_t units = (q.piece_bytes + 15) / 16, units_per_region = region_lines / 2;
  const size_t needed = (units + units_per_region - 1) / units_per_region;
  if (needed > size_t(TMASHMEM_COLL_MAX_SMS) || (q.fixed_ctas && size_t(ctas) < needed)) return 0;
  if (q.fixed_ctas) return ctas;
  // By default one line per thread and peer where 32 CTAs allow: a thread's lines follow one
  // another (a line's poll waits for its data before the next line's loads go out).
  const size_t by_lines = std::min<size_t>(
      TMASHMEM_COLL_MAX_SMS, (units + kLowLatencyUnitsPerCta - 1) / kLowLatencyUnitsPerCta);
  return static_cast<int>(std::max({size_t(ctas), needed, by_lines}));
}

tmashmem_status_t coll_low_latency_init(Runtime& rt) {
  rt.coll_low_latency = nullptr;
  if (rt.bootstrap->size() < 2 || rt.config.coll_ll_bytes == 0 ||
      rt.heap.max_bytes() / kLowLatencyHeapShare < kCollLowLatencyBytes)
    return TMASHMEM_SUCCESS;
  return symmetric_alloc("tmashmem_init (the collectives' low-latency state)", kCollLowLatencyBytes,
                         256, true, {}, &rt.coll_low_latency);
}

}  // namespace tmashmem
