// The SMs each PE's fused kernel may fill (include/tmashmem/device/fused/sm_share.cuh), the rule
// docs/fused.md ("The reduce-scatter claims its tiles too") states: all SMs on a GPU of its
// own; on a shared GPU one SM less than the share, or the whole share where it saves a wave;
// never more than the share.
#include "common/catch.h"
#include "tmashmem/device/fused/sm_share.cuh"

using tmashmem::fused::fused_sms_per_pe;

namespace {

tmashmem_ctx_t job(int n_pes, bool one_gpu) {
  tmashmem_ctx_t ctx{};
  ctx.n_pes = n_pes;
  ctx.flags = one_gpu ? TMASHMEM_CTX_FLAG_ONE_GPU : 0u;
  return ctx;
}

}  // namespace

TEST_CASE("fused SM share: every SM with one PE or a GPU per PE") {
  CHECK(fused_sms_per_pe(job(1, true), 132, 396) == 132);
  CHECK(fused_sms_per_pe(job(4, false), 132, 396) == 132);
  CHECK(fused_sms_per_pe(job(8, false), 132, 7) == 132);
}

TEST_CASE("fused SM share: one SM less than the share unless the share saves a wave") {
  // 4 PEs on one H100 (132 SMs, share 33), the benchmark's shapes (128 x 256 tiles).
  CHECK(fused_sms_per_pe(job(4, true), 132, 36 * 11) == 33);  // 4608 x 2816: 12 waves, not 13
  CHECK(fused_sms_per_pe(job(4, true), 132, 64 * 14) == 32);  // 8192 x 3584: 28 waves either way
  CHECK(fused_sms_per_pe(job(4, true), 132, 64 * 32) == 33);  // 8192^3: 63 waves, not 64
  CHECK(fused_sms_per_pe(job(4, true), 132, 128 * 4) == 32);  // 16384 x 1024
  CHECK(fused_sms_per_pe(job(4, true), 132, 33) == 33);       // one wave against two
  CHECK(fused_sms_per_pe(job(4, true), 132, 32) == 32);       // one wave either way
  CHECK(fused_sms_per_pe(job(4, true), 132, 1) == 32);
  // 2 PEs (share 66): 396 tiles take 6 waves of 66 and 7 of 65.
  CHECK(fused_sms_per_pe(job(2, true), 132, 396) == 66);
  CHECK(fused_sms_per_pe(job(2, true), 132, 64 * 14) == 65);
  // 8 PEs: the share is sms / n_pes, rounded down (16).
  CHECK(fused_sms_per_pe(job(8, true), 132, 14) == 15);       // share 16: one wave either way
  CHECK(fused_sms_per_pe(job(8, true), 132, 16 * 15) == 16);  // 15 waves against 16
}

TEST_CASE("fused SM share: never more than the share on a crowded GPU") {
  for (int tiles : {1, 2, 3, 100}) {
    CHECK(fused_sms_per_pe(job(64, true), 132, tiles) == 2);
    CHECK(fused_sms_per_pe(job(66, true), 132, tiles) == 2);
    CHECK(fused_sms_per_pe(job(64, true), 64, tiles) == 1);
    CHECK(fused_sms_per_pe(job(64, true), 32, tiles) == 1);  // fewer SMs than PEs: one each
  }
}
