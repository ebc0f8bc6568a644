// uid_ring: a tmashmem program started without mpirun (the unique-id bootstrap).
//
// One process makes a unique id (`uid_ring --make-id` prints it as text); every PE
// is then started by any means with the id, its rank and the number of PEs:
//   TMASHMEM_BOOTSTRAP_UID=<id> TMASHMEM_BOOTSTRAP_UID_RANK=<r> TMASHMEM_BOOTSTRAP_UID_SIZE=<n>
//   ./uid_ring
// (launch.sh beside this file does exactly that for N local processes). Rank 0 must
// run on the host that made the id: it listens there.
//
// Every PE writes a header (its rank and a fresh seed) and the numbers of that seed
// into the next PE's inbox through tmashmem_ptr; after a barrier each PE regenerates
// what the previous PE must have sent and checks every element. The verdicts are
// gathered on PE 0 through the symmetric heap (no MPI). PE 0 prints
// "uid_ring: N PEs, X bytes, OK"; every PE exits non-zero on a failure (2: no GPU).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "example_util.h"
#include "tmashmem/tmashmem.h"

namespace {

constexpr size_t kCount = (size_t(1) << 20) + 3;  // numbers per PE

struct Header {
  uint64_t seed;
  int32_t from;
  int32_t count;
};

std::vector<uint32_t> numbers(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v(kCount);
  for (uint32_t& x : v) x = static_cast<uint32_t>(rng() >> 13);
  return v;
}

bool cuda_ok(cudaError_t e, const char* what) { return example_cuda_ok("uid_ring", e, what); }

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--make-id") == 0) {
    tmashmem_uniqueid_t id;
    char text[TMASHMEM_UNIQUEID_TEXT_BYTES];
    if (tmashmem_get_uniqueid(&id) != TMASHMEM_SUCCESS ||
        tmashmem_uniqueid_to_string(&id, text, sizeof text) != TMASHMEM_SUCCESS) {
      std::fprintf(stderr, "uid_ring: %s\n", tmashmem_last_error());
      return 1;
    }
    std::printf("%s\n", text);
    return 0;
  }
  tmashmem_status_t st = tmashmem_init();  // the unique-id bootstrap: TMASHMEM_BOOTSTRAP_UID is set
  if (st != TMASHMEM_SUCCESS) return example_init_failure("uid_ring", st);
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t bytes = sizeof(Header) + kCount * sizeof(uint32_t);
  bool ok = cuda_ok(cudaSetDevice(tmashmem_device()), "cudaSetDevice");

  auto* inbox = static_cast<char*>(tmashmem_malloc(bytes));                     // symmetric
  auto* verdicts = static_cast<int32_t*>(tmashmem_calloc(n, sizeof(int32_t)));  // read on PE 0
  char* there = inbox ? static_cast<char*>(tmashmem_ptr(inbox, next)) : nullptr;
  if (!inbox || !verdicts || !there) {
    std::printf(
        "uid_ring: PE %d: %s\n", me,
        !there && inbox ? "the next PE is not reachable by load/store" : tmashmem_last_error());
    ok = false;
  }
  std::random_device entropy;
  Header h{(uint64_t(entropy()) << 32) ^ entropy(), me, static_cast<int32_t>(kCount)};
  std::vector<uint32_t> mine = numbers(h.seed);
  if (ok)
    ok = cuda_ok(cudaMemcpy(there, &h, sizeof h, cudaMemcpyHostToDevice), "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(there + sizeof h, mine.data(), kCount * sizeof(uint32_t),
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy");
  ok = tmashmem_barrier_all() == TMASHMEM_SUCCESS && ok;  // every put is complete and visible

  size_t bad = 0;
  if (ok) {
    Header got;
    std::vector<uint32_t> received(kCount);
    ok = cuda_ok(cudaMemcpy(&got, inbox, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(received.data(), inbox + sizeof got, kCount * sizeof(uint32_t),
                            cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
    if (ok && (got.from != prev || got.count != static_cast<int32_t>(kCount))) {
      std::printf("uid_ring: PE %d: header says PE %d, %d numbers; expected PE %d\n", me, got.from,
                  got.count, prev);
      ok = false;
    }
    if (ok) {
      std::vector<uint32_t> expect = numbers(got.seed);
      for (size_t i = 0; i < kCount; ++i) bad += received[i] != expect[i];
      if (bad) std::printf("uid_ring: PE %d: %zu of %zu numbers wrong\n", me, bad, kCount);
      ok = bad == 0;
    }
  }
  int32_t verdict = ok ? 1 : 0;
  if (verdicts)
    cuda_ok(cudaMemcpy(static_cast<int32_t*>(tmashmem_ptr(verdicts, 0)) + me, &verdict,
                       sizeof verdict, cudaMemcpyHostToDevice),
            "cudaMemcpy");
  tmashmem_barrier_all();
  if (me == 0 && verdicts) {
    std::vector<int32_t> all(static_cast<size_t>(n));
    cudaMemcpy(all.data(), verdicts, all.size() * sizeof(int32_t), cudaMemcpyDeviceToHost);
    int good = 0;
    for (int32_t v : all) good += v == 1;
    std::printf("uid_ring: %d PEs, %zu bytes, %s\n", n, bytes,
                good == n ? "OK" : "FAILED (see the PEs' messages)");
  }
  tmashmem_free(verdicts);
  tmashmem_free(inbox);
  tmashmem_finalize();
  return ok ? 0 : 1;
}
