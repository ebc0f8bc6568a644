// Which bootstrap tmashmem_init starts and why; the NCCL bootstrap's argument checks
// (its collectives need a GPU: tests/gpu and examples/nccl).
#include <cstring>
#include <string>

#include "bootstrap/bootstrap.h"
#include "common/catch.h"
#include "common/test_util.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
using tmashmem::BootstrapOptions;
using tmashmem::choose_bootstrap;

namespace {
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("bootstrap choice: forced kinds, an NCCL communicator, MPI, a unique id") {
  BootstrapOptions o;
  o.kind = TMASHMEM_BOOTSTRAP_SINGLE;
  CHECK(choose_bootstrap(o).kind == TMASHMEM_BOOTSTRAP_SINGLE);
  CHECK(contains(choose_bootstrap(o).reason, "forced"));
  o.kind = TMASHMEM_BOOTSTRAP_UID;
  CHECK(choose_bootstrap(o).kind == TMASHMEM_BOOTSTRAP_UID);
  o.kind = TMASHMEM_BOOTSTRAP_AUTO;
  int fake = 0;
  o.nccl_comm = &fake;
  CHECK(choose_bootstrap(o).kind == TMASHMEM_BOOTSTRAP_NCCL);
  CHECK(contains(choose_bootstrap(o).reason, "nccl_comm"));
  o.nccl_comm = nullptr;
  // This program runs under mpiexec with MPI initialised: MPI wins over a unique id.
  o.have_uid = true;
  o.uid_source = "TMASHMEM_BOOTSTRAP_UID";
  CHECK(choose_bootstrap(o).kind == TMASHMEM_BOOTSTRAP_MPI);
  CHECK(contains(choose_bootstrap(o).reason, "MPI is initialised"));
  CHECK(contains(tmashmem_bootstrap_choice(), "mpi: "));
}

TEST_CASE("bootstrap choice: the choice is reported after init") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  CHECK(contains(tmashmem_bootstrap_choice(), "mpi: MPI is initialised"));
}

TEST_CASE("bootstrap choice: NCCL forced without a communicator is a clear error") {
  tmashmem::emu::install();
  tmashmem_init_attr_t attr = small_heap_attr();
  attr.bootstrap = TMASHMEM_BOOTSTRAP_NCCL;
  tmashmem_status_t st = tmashmem_init_attr(&attr);
  std::string m = tmashmem_last_error();
  if (tmashmem::bootstrap_has_nccl()) {
    CHECK(st == TMASHMEM_ERROR_INVALID_VALUE);
    CHECK(contains(m, "nccl_comm"));
  } else {
    CHECK(st == TMASHMEM_ERROR_NOT_SUPPORTED);
    CHECK(contains(m, "nccl.h"));
  }
  CHECK_FALSE(tmashmem_initialized());
  tmashmem::emu::uninstall();
}

TEST_CASE("bootstrap choice: a unique id that is not one is refused by name") {
  tmashmem::emu::install();
  setenv("TMASHMEM_BOOTSTRAP_UID", "not-an-id", 1);
  setenv("TMASHMEM_BOOTSTRAP", "uid", 1);
  tmashmem_status_t st = tmashmem_init();
  unsetenv("TMASHMEM_BOOTSTRAP");
  unsetenv("TMASHMEM_BOOTSTRAP_UID");
  CHECK(st == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(contains(tmashmem_last_error(), "TMASHMEM_BOOTSTRAP_UID"));
  tmashmem_uniqueid_t id;
  CHECK(tmashmem_uniqueid_from_string("00", &id) == TMASHMEM_ERROR_INVALID_VALUE);
  tmashmem::emu::uninstall();
}

TEST_CASE("unique id: hex and base64 text round-trip; the secret is fresh every time") {
  setenv("TMASHMEM_BOOTSTRAP_UID_ADDR", "127.0.0.1", 1);
  tmashmem_uniqueid_t a, b, back;
  REQUIRE(tmashmem_get_uniqueid(&a) == TMASHMEM_SUCCESS);
  REQUIRE(tmashmem_get_uniqueid(&b) == TMASHMEM_SUCCESS);
  unsetenv("TMASHMEM_BOOTSTRAP_UID_ADDR");
  CHECK(std::memcmp(a.internal + 32, b.internal + 32, 16) != 0);  // the secrets differ
  char text[TMASHMEM_UNIQUEID_TEXT_BYTES];
  REQUIRE(tmashmem_uniqueid_to_string(&a, text, sizeof text) == TMASHMEM_SUCCESS);
  CHECK(std::string(text).size() == 2 * TMASHMEM_UNIQUEID_BYTES);
  REQUIRE(tmashmem_uniqueid_from_string(text, &back) == TMASHMEM_SUCCESS);
  CHECK(std::memcmp(&a, &back, sizeof a) == 0);
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string base64;
  for (size_t i = 0; i < sizeof a.internal; i += 3) {
    uint32_t v = uint32_t(a.internal[i]) << 16;
    if (i + 1 < sizeof a.internal) v |= uint32_t(a.internal[i + 1]) << 8;
    if (i + 2 < sizeof a.internal) v |= a.internal[i + 2];
    base64 += b64[(v >> 18) & 63];
    base64 += b64[(v >> 12) & 63];
    base64 += i + 1 < sizeof a.internal ? b64[(v >> 6) & 63] : '=';
    base64 += i + 2 < sizeof a.internal ? b64[v & 63] : '=';
  }
  std::memset(&back, 0, sizeof back);
  REQUIRE(tmashmem_uniqueid_from_string(base64.c_str(), &back) == TMASHMEM_SUCCESS);
  CHECK(std::memcmp(&a, &back, sizeof a) == 0);
  text[5] = text[5] == '0' ? '1' : '0';  // the magic no longer matches
  CHECK(tmashmem_uniqueid_from_string(text, &back) == TMASHMEM_ERROR_INVALID_VALUE);
}
