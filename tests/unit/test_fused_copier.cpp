// The all-gather GEMM's default copier (include/tmashmem/device/fused/copier.cuh), the rule
// docs/fused.md ("Copiers") states: at the counts the sweep measured and at the edges.
#include "common/catch.h"
#include "tmashmem/device/fused/copier.cuh"

using tmashmem::fused::allgather_default_comm_ctas;
using tmashmem::fused::kAllgatherWarpsMinN;

TEST_CASE("fused copier: the producer warps with one PE or from 2048 columns of B") {
  CHECK(allgather_default_comm_ctas(1, 1024, 132) == 0);
  CHECK(allgather_default_comm_ctas(1, 64, 132) == 0);
  for (int n_pes : {2, 4, 8})
    for (int n : {kAllgatherWarpsMinN, 3584, 8192})
      CHECK(allgather_default_comm_ctas(n_pes, n, 66) == 0);
}

TEST_CASE("fused copier: an eighth of the PE's SMs below 2048 columns") {
  CHECK(allgather_default_comm_ctas(2, 1024, 66) == 8);  // 2 PEs sharing one H200
  CHECK(allgather_default_comm_ctas(4, 1024, 33) == 4);  // 4 PEs sharing one H200
  CHECK(allgather_default_comm_ctas(2, kAllgatherWarpsMinN - 8, 132) == 16);  // own GPUs
  CHECK(allgather_default_comm_ctas(8, 1024, 16) == 2);                       // never fewer than 2
}

TEST_CASE("fused copier: the warps where copy SMs would take more than half of the SMs") {
  CHECK(allgather_default_comm_ctas(64, 1024, 2) == 0);
  CHECK(allgather_default_comm_ctas(44, 1024, 3) == 0);
  CHECK(allgather_default_comm_ctas(33, 1024, 4) == 2);  // exactly half: still copy SMs
}
