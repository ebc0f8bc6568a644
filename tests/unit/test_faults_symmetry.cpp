// Fault matrix (docs/reliability.md), disagreement rows: settings that must agree and the
// arguments of every collective call. Each row: the exact status on every PE, a message
// naming the setting or argument, the PEs and the values, and a runtime still usable (or
// cleanly not started) afterwards. Rows kept elsewhere: malloc/free arguments and more
// than eight arguments (test_heap.cpp, "asymmetric arguments", "compares every argument"),
// tensor_create/view descriptors (test_tensor.cpp, "describe different tensors").
#include <cstdlib>
#include <string>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
namespace emu = tmashmem::emu;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Starts the runtime with `attr` on every PE, where the last PE first applies `differ`
// (to its attr or environment); returns the status and message, and leaves nothing behind.
template <typename Differ>
tmashmem_status_t init_with_last_pe_differing(Differ differ, std::string* message) {
  emu::install();
  tmashmem_init_attr_t attr = small_heap_attr();
  if (mpi_rank() == mpi_size() - 1) differ(&attr);
  const tmashmem_status_t st = tmashmem_init_attr(&attr);
  *message = tmashmem_last_error();
  if (tmashmem_initialized()) tmashmem_finalize();
  const emu::Counts c = emu::counts();
  CHECK(c.allocations + c.mappings + c.reservations + c.device_buffers + c.open_memfds == 0);
  emu::uninstall();
  return st;
}

// One row per Scope::Job setting: the status on every PE and the message's parts.
void expect_setting_disagreement(tmashmem_status_t st, const std::string& m, const char* name,
                                 const std::string& pe0_value, const std::string& last_value) {
  INFO(m);
  CHECK(st == TMASHMEM_ERROR_SYMMETRY);
  CHECK(contains(m, std::string(name) + " must be the same on every PE"));
  CHECK(contains(m, "it is " + pe0_value + " on PE 0"));
  CHECK(contains(m, last_value + " on PE " + std::to_string(mpi_size() - 1)));
  CHECK_FALSE(tmashmem_initialized());
}

// A setting that must agree, set through the attributes, different on the last PE.
struct AttrDisagreement {
  const char* setting;
  const char* attr_field;  // named in the message as tmashmem_init_attr_t.<field>, or nullptr
  const char* pe0_value;
  const char* last_value;
  void (*differ)(tmashmem_init_attr_t*);
};

void expect_attr_disagreement(const AttrDisagreement& row) {
  if (mpi_size() < 2) return mark_skipped("needs 2 PEs");
  std::string m;
  const tmashmem_status_t st = init_with_last_pe_differing(row.differ, &m);
  expect_setting_disagreement(st, m, row.setting, row.pe0_value, row.last_value);
  if (row.attr_field) CHECK(contains(m, std::string("tmashmem_init_attr_t.") + row.attr_field));
}

// One row per collective allocation argument: `allocate(value)` with `value` = `others` on
// every PE but the last, which passes `last_value`; NULL and a message naming the call, the
// argument, PE 0's value and the last PE's.
template <typename Allocate>
void expect_argument_disagreement(Allocate allocate, const char* call, const char* argument,
                                  size_t others, size_t last_value) {
  const int last = mpi_size() - 1;
  CHECK(allocate(mpi_rank() == last ? last_value : others) == nullptr);
  const std::string m = tmashmem_last_error();
  INFO(m);
  CHECK(contains(m, std::string(call) + " is collective but its arguments differ: " + argument +
                        " = " + std::to_string(others) + " on PE 0"));
  CHECK(contains(m, std::to_string(last_value) + " on PE " + std::to_string(last)));
}

}  // namespace

TEST_CASE("faults: a per-PE TMASHMEM_CHUNK_SIZE is a symmetry error naming it, PEs, values") {
  expect_attr_disagreement({"TMASHMEM_CHUNK_SIZE", "chunk_size", "2M", "4M",
                            [](tmashmem_init_attr_t* a) { a->chunk_size = size_t(4) << 20; }});
}

TEST_CASE("faults: a per-PE TMASHMEM_HEAP_MAX is a symmetry error") {
  expect_attr_disagreement({"TMASHMEM_HEAP_MAX", nullptr, "64M", "128M",
                            [](tmashmem_init_attr_t* a) { a->heap_max = size_t(128) << 20; }});
}

TEST_CASE("faults: a per-PE TMASHMEM_HANDLE_TYPE is a symmetry error") {
  expect_attr_disagreement(
      {"TMASHMEM_HANDLE_TYPE", nullptr, "auto", "posix_fd",
       [](tmashmem_init_attr_t* a) { a->handle_type = TMASHMEM_HANDLE_POSIX_FD; }});
}

TEST_CASE("faults: a per-PE TMASHMEM_BOOTSTRAP_TIMEOUT_MS is a symmetry error") {
  expect_attr_disagreement({"TMASHMEM_BOOTSTRAP_TIMEOUT_MS", nullptr, "20000", "30000",
                            [](tmashmem_init_attr_t* a) { a->bootstrap_timeout_ms = 30000; }});
}

TEST_CASE("faults: a per-PE TMASHMEM_MULTICAST (environment only) is a symmetry error") {
  if (mpi_size() < 2) return mark_skipped("needs 2 PEs");
  // CI's scripts export TMASHMEM_MULTICAST=off to every process: the last PE differs from
  // whatever the job has.
  const char* job = std::getenv("TMASHMEM_MULTICAST");
  const std::string job_value = job && *job ? job : "auto";
  const char* other = job_value == "off" ? "on" : "off";
  std::string m;
  const tmashmem_status_t st = init_with_last_pe_differing(
      [other](tmashmem_init_attr_t*) { setenv("TMASHMEM_MULTICAST", other, 1); }, &m);
  if (job)
    setenv("TMASHMEM_MULTICAST", job, 1);
  else
    unsetenv("TMASHMEM_MULTICAST");
  expect_setting_disagreement(st, m, "TMASHMEM_MULTICAST", job_value, other);
  CHECK_FALSE(contains(m, "tmashmem_init_attr_t"));  // no such field
}

TEST_CASE("faults: a per-PE TMASHMEM_COLL_STAGED is a symmetry error") {
  if (mpi_size() < 2) return mark_skipped("needs 2 PEs");
  // Every PE must pick the same form of a collective (staged or direct) for the same call.
  unsetenv("TMASHMEM_COLL_STAGED");
  std::string m;
  const tmashmem_status_t st = init_with_last_pe_differing(
      [](tmashmem_init_attr_t*) { setenv("TMASHMEM_COLL_STAGED", "off", 1); }, &m);
  unsetenv("TMASHMEM_COLL_STAGED");
  expect_setting_disagreement(st, m, "TMASHMEM_COLL_STAGED", "gather", "off");
}

TEST_CASE("faults: per-PE settings (debug, stream memory ops) may differ") {
  std::string m;
  const tmashmem_status_t st = init_with_last_pe_differing(
      [](tmashmem_init_attr_t*) { setenv("TMASHMEM_STREAM_MEM_OPS", "off", 1); }, &m);
  unsetenv("TMASHMEM_STREAM_MEM_OPS");
  INFO(m);
  CHECK(all_ranks(st == TMASHMEM_SUCCESS));
}

TEST_CASE(
    "faults: calloc's count and align's alignment differing between PEs are symmetry "
    "errors") {
  if (mpi_size() < 2) return mark_skipped("needs 2 PEs");
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  expect_argument_disagreement([](size_t count) { return tmashmem_calloc(count, 64); },
                               "tmashmem_calloc", "count", 4, 5);
  void* p = tmashmem_calloc(4, 64);  // still usable
  CHECK(all_ranks(p != nullptr));
  CHECK(tmashmem_free(p) == TMASHMEM_SUCCESS);
  expect_argument_disagreement([](size_t alignment) { return tmashmem_align(alignment, 256); },
                               "tmashmem_align", "alignment", 1024, 4096);
}

TEST_CASE("faults: a tensor descriptor differing in its last field is a symmetry error") {
  if (mpi_size() < 2) return mark_skipped("needs 2 PEs");
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  uint64_t dims[2] = {64, 8};
  uint32_t box[2] = {16, 4};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_F32, 2, dims, box) == TMASHMEM_SUCCESS);
  const int last = mpi_size() - 1;
  if (mpi_rank() == last) d.oob_fill = TMASHMEM_OOB_FILL_NAN;
  tmashmem_tensor_t t = nullptr;
  CHECK(tmashmem_tensor_create(&d, &t) == TMASHMEM_ERROR_SYMMETRY);
  const std::string m = tmashmem_last_error();
  INFO(m);
  CHECK(contains(m, "desc.oob_fill = " + std::to_string(TMASHMEM_OOB_FILL_ZERO) + " on PE 0"));
  CHECK(t == nullptr);
}

TEST_CASE("faults: tensor_destroy of different tensors on different PEs is a symmetry error") {
  if (mpi_size() < 2) return mark_skipped("needs 2 PEs");
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  uint64_t dims[1] = {256};
  uint32_t box[1] = {64};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_F32, 1, dims, box) == TMASHMEM_SUCCESS);
  tmashmem_tensor_t a = nullptr, b = nullptr;
  REQUIRE(all_ranks(tmashmem_tensor_create(&d, &a) == TMASHMEM_SUCCESS));
  REQUIRE(all_ranks(tmashmem_tensor_create(&d, &b) == TMASHMEM_SUCCESS));
  CHECK(tmashmem_tensor_destroy(mpi_rank() == 0 ? a : b) == TMASHMEM_ERROR_SYMMETRY);
  CHECK(contains(tmashmem_last_error(), "heap offset of the tensor"));
  CHECK(tmashmem_tensor_destroy(a) == TMASHMEM_SUCCESS);  // both still alive everywhere
  CHECK(tmashmem_tensor_destroy(b) == TMASHMEM_SUCCESS);
}
