// The symmetric heap on the emulated driver, under mpiexec -np 1, 2 and 4: real
// processes, real fds passed over Unix sockets, real shared memory. Every PE
// writes through tmashmem_ptr into every peer's copy and every PE checks all of it.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "heap_exchange.h"
#include "runtime/runtime.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
namespace emu = tmashmem::emu;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool exchange_and_check(uint8_t* x, size_t bytes, uint64_t salt) {
  return tmashmem_test::exchange_and_check(x, bytes, salt, run_seed());
}

}  // namespace

TEST_CASE("heap: every PE writes every peer's copy through tmashmem_ptr; all of it checks") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  int n = tmashmem_n_pes();
  for (size_t bytes : {size_t(1), size_t(3), size_t(255), size_t(4096), size_t(65537),
                       (size_t(2) << 20) + 7, size_t(5) << 20}) {
    auto* x = static_cast<uint8_t*>(tmashmem_malloc(bytes * size_t(n)));
    REQUIRE(all_ranks(x != nullptr));
    CHECK(all_ranks(exchange_and_check(x, bytes, bytes)));
    REQUIRE(tmashmem_free(x) == TMASHMEM_SUCCESS);
  }
}

TEST_CASE("heap: allocations are symmetric and aligned; tmashmem_ptr is address arithmetic") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  auto* a = static_cast<char*>(tmashmem_malloc(100));
  auto* b = static_cast<char*>(tmashmem_align(4096, 10));
  auto* c = static_cast<char*>(tmashmem_malloc(1));
  REQUIRE(all_ranks(a && b && c));
  CHECK(reinterpret_cast<uintptr_t>(a) % 256 == 0);
  CHECK(reinterpret_cast<uintptr_t>(b) % 4096 == 0);
  CHECK(reinterpret_cast<uintptr_t>(c) % 256 == 0);
  CHECK(tmashmem_ptr(a, me) == a);
  tmashmem_ctx_t ctx;
  REQUIRE(tmashmem_device_ctx(&ctx) == TMASHMEM_SUCCESS);
  CHECK(ctx.version == TMASHMEM_CTX_VERSION);
  CHECK(ctx.my_pe == me);
  CHECK(ctx.n_pes == n);
  CHECK(ctx.heap_base <= reinterpret_cast<uint64_t>(a));
  CHECK(ctx.signal_pad == reinterpret_cast<uint64_t>(tmashmem_signal_pad()));
  CHECK((ctx.flags & TMASHMEM_CTX_FLAG_ONE_GPU) != 0);  // one emulated device: every PE shares it
  for (int pe = 0; pe < n; ++pe) {
    // The device computes peer addresses as p + (pe - me) * stride; the host must agree.
    uintptr_t expect = reinterpret_cast<uintptr_t>(b) +
                       static_cast<uintptr_t>((pe - me) * static_cast<long>(ctx.peer_stride));
    CHECK(reinterpret_cast<uintptr_t>(tmashmem_ptr(b, pe)) == expect);
  }
  // Same offsets everywhere: gather every PE's offset of c and compare.
  uint64_t offset = reinterpret_cast<uint64_t>(c) - ctx.heap_base, min = 0, max = 0;
  MPI_Allreduce(&offset, &min, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&offset, &max, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(min == max);
  CHECK(tmashmem_ptr(a, -1) == nullptr);
  CHECK(tmashmem_ptr(a, n) == nullptr);
  int local = 0;
  CHECK(tmashmem_ptr(&local, me) == nullptr);  // not in the heap
  CHECK(tmashmem_free(a) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(b) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(c) == TMASHMEM_SUCCESS);
}

TEST_CASE("heap: growth across chunks keeps earlier data; every PE maps every chunk") {
  EmulatedRuntime rt(emu::Options(), small_heap_attr(size_t(128) << 20));  // 2 MiB chunks
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  int n = tmashmem_n_pes();
  const size_t seg = size_t(1) << 20;
  auto* first = static_cast<uint8_t*>(tmashmem_malloc(seg * size_t(n)));
  REQUIRE(all_ranks(first != nullptr));
  REQUIRE(all_ranks(exchange_and_check(first, seg, 1)));
  emu::Counts before = emu::counts();
  std::vector<uint8_t*> more;
  for (int i = 0; i < 6; ++i) {  // each one needs at least one more chunk
    auto* p = static_cast<uint8_t*>(tmashmem_malloc((size_t(3) << 20) * size_t(i + 1)));
    REQUIRE(all_ranks(p != nullptr));
    more.push_back(p);
  }
  emu::Counts after = emu::counts();
  // One own allocation per chunk plus one import per peer: n handles per chunk.
  CHECK(after.allocations > before.allocations);
  CHECK((after.allocations - before.allocations) % n == 0);
  CHECK(after.mappings - before.mappings == after.allocations - before.allocations);
  // The first block, placed before any growth, still holds every PE's data.
  uint64_t seed = run_seed();
  int me = tmashmem_my_pe();
  CHECK(count_bad_segments(first, seg, n, me, seed, 1) == 0);
  // more.back() holds 18 MiB: one segment per PE.
  CHECK(all_ranks(exchange_and_check(more.back(), (size_t(18) << 20) / size_t(n), 2)));
  for (auto* p : more) CHECK(tmashmem_free(p) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(first) == TMASHMEM_SUCCESS);
}

TEST_CASE("heap: exhaustion returns NULL naming TMASHMEM_HEAP_MAX, and the heap still works") {
  EmulatedRuntime rt(emu::Options(), small_heap_attr(size_t(16) << 20));
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  void* big = tmashmem_malloc(size_t(32) << 20);
  CHECK(big == nullptr);
  std::string m = tmashmem_last_error();
  CHECK(contains(m, "TMASHMEM_HEAP_MAX"));
  CHECK(contains(m, "rank " + std::to_string(tmashmem_my_pe())));
  void* small = tmashmem_malloc(4096);
  CHECK(all_ranks(small != nullptr));
  CHECK(tmashmem_free(small) == TMASHMEM_SUCCESS);
}

TEST_CASE("heap: device memory exhausted on one PE is an error on every PE, naming it") {
  if (!have_pes(2, "needs 2 PEs: one PE runs out of device memory, the others must report it"))
    return;
  emu::Options options;
  if (mpi_rank() == 1) options.device_memory_bytes = size_t(6) << 20;
  EmulatedRuntime rt(options);
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  emu::Counts before = emu::counts();
  void* p = tmashmem_malloc(size_t(16) << 20);
  CHECK(p == nullptr);
  std::string m = tmashmem_last_error();
  CHECK(contains(m, mpi_rank() == 1 ? "[tmashmem rank 1] could not create" : "PE 1"));
  emu::Counts after = emu::counts();
  CHECK(after.allocations == before.allocations);  // all or nothing
  CHECK(after.mappings == before.mappings);
  void* q = tmashmem_malloc(4096);  // still usable afterwards
  CHECK(all_ranks(q != nullptr));
  tmashmem_free(q);
}

TEST_CASE("heap: malloc(0) returns NULL without an error; calloc zeroes; bad arguments") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  CHECK(tmashmem_malloc(0) == nullptr);
  CHECK(std::string(tmashmem_last_error()).empty());
  // calloc: dirty a block, free it, calloc the same place; every byte must be zero.
  auto* dirty = static_cast<uint8_t*>(tmashmem_malloc(8192));
  REQUIRE(dirty);
  std::memset(dirty, 0xA7, 8192);
  tmashmem_free(dirty);
  auto* zero = static_cast<uint8_t*>(tmashmem_calloc(1024, 8));
  REQUIRE(zero == dirty);
  size_t nonzero = 0;
  for (size_t i = 0; i < 8192; ++i) nonzero += zero[i] != 0;
  CHECK(nonzero == 0);
  tmashmem_free(zero);
  CHECK(tmashmem_calloc(SIZE_MAX / 2, 4) == nullptr);
  CHECK(contains(tmashmem_last_error(), "overflows"));
  CHECK(tmashmem_align(3000, 64) == nullptr);
  CHECK(contains(tmashmem_last_error(), "power of two"));
}

TEST_CASE("heap: freeing a foreign, interior or freed pointer is an error, not a crash") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  int local = 0;
  CHECK(tmashmem_free(&local) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(contains(tmashmem_last_error(), "not a live pointer"));
  auto* p = static_cast<char*>(tmashmem_malloc(1024));
  REQUIRE(p);
  CHECK(tmashmem_free(p + 16) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(tmashmem_free(p) == TMASHMEM_SUCCESS);
  CHECK(tmashmem_free(p) == TMASHMEM_ERROR_INVALID_VALUE);  // double free
  CHECK(tmashmem_free(nullptr) == TMASHMEM_SUCCESS);
}

TEST_CASE("heap: the signal pad cannot be freed, so no allocation is handed it") {
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  void* pad = tmashmem_signal_pad();
  REQUIRE(pad != nullptr);
  CHECK(tmashmem_free(pad) == TMASHMEM_ERROR_INVALID_VALUE);
  const std::string m = tmashmem_last_error();
  INFO(m);
  CHECK(contains(m, "signal pad"));
  CHECK(contains(m, "tmashmem_free"));
  // The pad is still allocated: a block of its size lands elsewhere, and both stay intact.
  auto* p = static_cast<uint8_t*>(tmashmem_calloc(1, TMASHMEM_SIGNAL_PAD_BYTES));
  REQUIRE(all_ranks(p != nullptr));
  auto* pad_bytes = static_cast<uint8_t*>(pad);
  CHECK((p + TMASHMEM_SIGNAL_PAD_BYTES <= pad_bytes || p >= pad_bytes + TMASHMEM_SIGNAL_PAD_BYTES));
  CHECK(tmashmem_signal_pad() == pad);
  CHECK(tmashmem_free(p) == TMASHMEM_SUCCESS);
}

TEST_CASE("heap: asymmetric arguments are an error on every PE, naming PEs and values") {
  if (!have_pes(2, "needs 2 PEs to disagree")) return;
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  int me = tmashmem_my_pe();
  size_t size = me == 1 ? 8192 : 4096;
  void* p = tmashmem_malloc(size);
  CHECK(p == nullptr);
  std::string m = tmashmem_last_error();
  CHECK(contains(m, "8192 on PE 1"));
  CHECK(contains(m, "4096 on PE 0"));
  CHECK(contains(m, "size"));
  // Different calls at the same point.
  void* q = nullptr;
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  if (me == 0)
    st = tmashmem_free(nullptr);
  else
    q = tmashmem_malloc(64);
  CHECK(q == nullptr);
  if (me == 0) CHECK(st == TMASHMEM_ERROR_SYMMETRY);
  CHECK(contains(tmashmem_last_error(), "out of step"));
  // A foreign pointer on one PE only.
  auto* good = static_cast<char*>(tmashmem_malloc(256));
  REQUIRE(all_ranks(good != nullptr));
  int local = 0;
  CHECK(tmashmem_free(me == 0 ? static_cast<void*>(&local) : good) == TMASHMEM_ERROR_SYMMETRY);
  CHECK(tmashmem_free(good) == TMASHMEM_SUCCESS);  // the heap is still consistent
}

TEST_CASE("heap: the symmetry check compares every argument of a collective, however many") {
  if (!have_pes(2, "needs 2 PEs to disagree")) return;
  EmulatedRuntime rt;
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  const int me = tmashmem_my_pe(), last = tmashmem_n_pes() - 1;
  std::mt19937_64 rng(run_seed() ^ 0x5e);  // run_seed() is the same on every PE
  for (size_t n_args : {size_t(1), size_t(7), size_t(9), size_t(40)}) {
    // The same random values everywhere (one seed), then the last PE changes one argument.
    std::vector<tmashmem::NamedArg> args;
    for (size_t i = 0; i < n_args; ++i) args.emplace_back("arg" + std::to_string(i), rng() >> 1);
    CHECK(tmashmem::check_symmetric("test_collective", args) == TMASHMEM_SUCCESS);
    for (size_t differing = 0; differing < n_args; ++differing) {
      std::vector<tmashmem::NamedArg> mine = args;
      const uint64_t want = args[differing].second;
      if (me == last) mine[differing].second = want + 1;
      INFO(n_args << " arguments, argument " << differing << " differs on PE " << last);
      CHECK(tmashmem::check_symmetric("test_collective", mine) == TMASHMEM_ERROR_SYMMETRY);
      const std::string m = tmashmem_last_error();
      INFO(m);
      CHECK(contains(
          m, "arg" + std::to_string(differing) + " = " + std::to_string(want) + " on PE 0"));
      CHECK(contains(m, std::to_string(want + 1) + " on PE " + std::to_string(last)));
    }
  }
  // A different number of arguments is a different call.
  std::vector<tmashmem::NamedArg> args;
  for (size_t i = 0; i < (me == last ? 12u : 11u); ++i) args.emplace_back("arg", i);
  CHECK(tmashmem::check_symmetric("test_collective", args) == TMASHMEM_ERROR_SYMMETRY);
  CHECK(contains(tmashmem_last_error(), "out of step"));
  // The heap still works.
  void* p = tmashmem_malloc(4096);
  CHECK(all_ranks(p != nullptr));
  CHECK(tmashmem_free(p) == TMASHMEM_SUCCESS);
}

TEST_CASE("heap: peers on devices without P2P are not mapped and tmashmem_ptr says NULL") {
  if (!have_pes(2, "needs 2 PEs on two emulated devices")) return;
  emu::Options options;
  options.device_count = 2;  // PE p uses device (local rank % 2)
  options.no_p2p = {{0, 1}};
  EmulatedRuntime rt(options);
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  auto* x = static_cast<uint8_t*>(tmashmem_malloc(4096 * size_t(n)));
  REQUIRE(all_ranks(x != nullptr));
  CHECK(tmashmem_device() == me % 2);
  for (int pe = 0; pe < n; ++pe) {
    bool same_device = pe % 2 == me % 2;
    CHECK((tmashmem_ptr(x, pe) != nullptr) == same_device);
  }
  tmashmem_ctx_t ctx;
  REQUIRE(tmashmem_device_ctx(&ctx) == TMASHMEM_SUCCESS);
  for (int pe = 0; pe < n; ++pe) CHECK((((ctx.reachable >> pe) & 1) != 0) == (pe % 2 == me % 2));
  CHECK((ctx.flags & TMASHMEM_CTX_FLAG_ONE_GPU) == 0);  // PEs on two devices
  // Reachable peers (same parity) still exchange correctly.
  if (n % 2 == 0 && n >= 4) {
    auto* peer = static_cast<uint8_t*>(tmashmem_ptr(x, (me + 2) % n));
    REQUIRE(peer);
    peer[me] = static_cast<uint8_t>(0x40 + me);
  }
  tmashmem_barrier_all();
  if (n % 2 == 0 && n >= 4) {
    int from = (me + n - 2) % n;
    CHECK(x[from] == 0x40 + from);
  }
  tmashmem_free(x);
}

TEST_CASE("heap: fabric handles are used where exporting one works") {
  emu::Options options;
  options.fabric_supported = true;
  options.fabric_export_works = true;
  EmulatedRuntime rt(options);
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  int n = tmashmem_n_pes();
  auto* x = static_cast<uint8_t*>(tmashmem_malloc((size_t(3) << 20) * size_t(n)));
  REQUIRE(all_ranks(x != nullptr));
  CHECK(all_ranks(exchange_and_check(x, size_t(3) << 20, 3)));
  tmashmem_free(x);
}

TEST_CASE("heap: TMASHMEM_HANDLE_TYPE=fabric without a working export is a clear error") {
  emu::Options options;
  options.fabric_supported = true;
  options.fabric_export_works = false;
  tmashmem_init_attr_t attr = small_heap_attr();
  attr.handle_type = TMASHMEM_HANDLE_FABRIC;
  EmulatedRuntime rt(options, attr);
  CHECK(rt.status == TMASHMEM_ERROR_NOT_SUPPORTED);
  CHECK(contains(rt.message, "fabric"));
  CHECK(contains(rt.message, "posix_fd"));
  CHECK_FALSE(tmashmem_initialized());
  // auto falls back to POSIX fds on the same machine.
  EmulatedRuntime fallback(options);
  CHECK(all_ranks(fallback.status == TMASHMEM_SUCCESS));
}
