// Multicast on the emulated driver, under mpiexec -np 1, 2 and 4 (one emulated GPU per
// PE): the setup in order, growth binding each new chunk at its heap offset, teardown
// order, every failure point unwinding and falling back, and the gate: with any condition
// that stops multicast, the driver sees no multicast call at all (docs/design.md,
// decision 7; docs/multicast.md).
//
// tools/run-tests.sh exports the kill switches (TMASHMEM_MULTICAST=off, NCCL_NVLS_ENABLE=0,
// ...), as every run on a lent machine must. Each case here clears them for its own scope
// and sets only what it tests: safe, because only the emulated driver is installed in this
// program (EmulatedRuntime installs it before every init, and each case checks that the
// runtime's driver table is the emulator's); no real GPU is ever asked for multicast.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/env_guard.h"
#include "common/test_util.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
namespace emu = tmashmem::emu;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One emulated GPU per PE, all with multicast: nothing but the case's own change stops it.
emu::Options multicast_options() {
  emu::Options o;
  o.device_count = mpi_size();
  o.multicast_supported = true;
  return o;
}

// Index of the first log line starting with `prefix` at or after `from`; -1 if none.
long find_line(const std::vector<std::string>& log, const std::string& prefix, size_t from = 0) {
  for (size_t i = from; i < log.size(); ++i)
    if (log[i].compare(0, prefix.size(), prefix) == 0) return static_cast<long>(i);
  return -1;
}

long last_line(const std::vector<std::string>& log, const std::string& prefix) {
  for (size_t i = log.size(); i-- > 0;)
    if (log[i].compare(0, prefix.size(), prefix) == 0) return static_cast<long>(i);
  return -1;
}

std::string bind_line(const char* call, uint64_t offset, uint64_t bytes) {
  return std::string(call) + " offset=" + std::to_string(offset) + " size=" + std::to_string(bytes);
}

// The four variables the gate reads from the environment, cleared for one scope.
struct ClearedMulticastEnv {
  EnvGuard setting{"TMASHMEM_MULTICAST", nullptr};
  EnvGuard nvshmem{"NVSHMEM_DISABLE_NVLS", nullptr};
  EnvGuard nccl{"NCCL_NVLS_ENABLE", nullptr};
  EnvGuard torch{"TORCH_SYMM_MEM_DISABLE_MULTICAST", nullptr};
};

bool on_emulator() { return std::string(tmashmem::driver().origin) == emu::kOrigin; }

tmashmem_ctx_t device_ctx() {
  tmashmem_ctx_t ctx;
  std::memset(&ctx, 0, sizeof ctx);
  tmashmem_device_ctx(&ctx);
  return ctx;
}

// Fresh random bytes through the multicast address of x, read back through x (the
// emulator shows this PE's own memory behind its multicast mapping), and the guard bytes
// after the range untouched.
bool store_through_multicast(uint8_t* x, size_t bytes, size_t guard) {
  auto* mc = static_cast<uint8_t*>(tmashmem_mc_ptr(x));
  if (!mc) return false;
  std::mt19937_64 rng = make_rng(bytes);
  std::vector<uint8_t> expect(bytes), guards(guard);
  for (auto& b : expect) b = static_cast<uint8_t>(rng());
  for (auto& b : guards) b = static_cast<uint8_t>(rng());
  std::memcpy(x + bytes, guards.data(), guard);
  std::memcpy(mc, expect.data(), bytes);
  return std::memcmp(x, expect.data(), bytes) == 0 &&
         std::memcmp(x + bytes, guards.data(), guard) == 0;
}

bool nothing_left() {
  emu::Counts c = emu::counts();
  bool ok = c.allocations == 0 && c.mappings == 0 && c.reservations == 0 && c.open_memfds == 0 &&
            c.multicast_objects == 0 && c.multicast_binds == 0 && c.multicast_mappings == 0;
  if (!ok)
    std::printf(
        "[PE %d] left: %ld allocations, %ld mappings, %ld reservations, %ld memfds, %ld "
        "multicast objects, %ld binds, %ld multicast mappings\n",
        mpi_rank(), c.allocations, c.mappings, c.reservations, c.open_memfds, c.multicast_objects,
        c.multicast_binds, c.multicast_mappings);
  return ok;
}

}  // namespace

TEST_CASE("multicast: setup in order, chunks bound at their heap offsets as the heap grows") {
  ClearedMulticastEnv cleared;
  EmulatedRuntime rt(multicast_options(), small_heap_attr(size_t(128) << 20));
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS && on_emulator()));
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  tmashmem_ctx_t ctx = device_ctx();
  CHECK(ctx.version == TMASHMEM_CTX_VERSION);
  REQUIRE(all_ranks(ctx.mc_base != 0));
  CHECK(tmashmem::runtime().multicast.status() == "used");

  // The setup, in order, on this PE.
  std::vector<std::string> log = emu::multicast_log();
  const long granularity = find_line(log, "cuMulticastGetGranularity");
  const long add = find_line(log, "cuMulticastAddDevice device=" + std::to_string(me));
  const long map = find_line(log, "cuMemMap(multicast) size=");
  const long access = find_line(log, "cuMemSetAccess(multicast)");
  const long first_bind = find_line(log, "cuMulticastBindMem");
  CHECK(granularity == 0);
  if (me == 0) {
    const long create =
        find_line(log, "cuMulticastCreate size=134217728 devices=" + std::to_string(n));
    CHECK(create > granularity);
    if (n > 1) CHECK(find_line(log, "cuMemExportToShareableHandle(multicast, posix fd)") > create);
    CHECK(add > create);
  } else {
    CHECK(find_line(log, "cuMulticastCreate") == -1);  // one creator per node
    const long import = find_line(log, "cuMemImportFromShareableHandle(multicast, posix fd)");
    CHECK(import > granularity);
    CHECK(add > import);
  }
  CHECK(map > add);
  CHECK(access > map);
  // The signal pad's growth bound the first chunk at offset 0, after the mapping.
  CHECK(first_bind > access);
  if (first_bind >= 0)
    CHECK(log[static_cast<size_t>(first_bind)] ==
          bind_line("cuMulticastBindMem", 0, ctx.heap_size));

  // Growth: each step binds exactly the new chunk, at the heap offset where it starts.
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = device_ctx().heap_size;
    const size_t binds_before = static_cast<size_t>(emu::counts().multicast_binds);
    auto* p = static_cast<uint8_t*>(tmashmem_malloc((size_t(3) << 20) * size_t(i + 1)));
    REQUIRE(all_ranks(p != nullptr));
    blocks.push_back(p);
    const uint64_t after = device_ctx().heap_size;
    REQUIRE(after > before);
    log = emu::multicast_log();
    CHECK(log.back() == bind_line("cuMulticastBindMem", before, after - before));
    CHECK(static_cast<size_t>(emu::counts().multicast_binds) == binds_before + 1);
    // tmashmem_mc_ptr is mc_base + heap offset, and aliases this PE's memory here.
    ctx = device_ctx();
    CHECK(reinterpret_cast<uint64_t>(tmashmem_mc_ptr(p)) ==
          ctx.mc_base + (reinterpret_cast<uint64_t>(p) - ctx.heap_base));
    const size_t bytes = (size_t(3) << 20) * size_t(i + 1) - 64;
    CHECK(store_through_multicast(p, bytes, 64));
  }
  int local = 0;
  CHECK(tmashmem_mc_ptr(&local) == nullptr);  // not heap
  CHECK(tmashmem_mc_ptr(reinterpret_cast<void*>(ctx.heap_base + ctx.heap_size)) ==
        nullptr);  // unbacked
  for (auto* p : blocks) CHECK(tmashmem_free(p) == TMASHMEM_SUCCESS);
}

TEST_CASE("multicast: teardown unmaps, unbinds each bind exactly, frees the VA, then releases") {
  ClearedMulticastEnv cleared;
  {
    EmulatedRuntime rt(multicast_options());
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS && on_emulator()));
    void* p = tmashmem_malloc(size_t(5) << 20);  // a second chunk
    REQUIRE(all_ranks(p != nullptr));
    REQUIRE(tmashmem_finalize() == TMASHMEM_SUCCESS);
  }
  std::vector<std::string> log = emu::multicast_log();
  const long unmap = find_line(log, "cuMemUnmap(multicast)");
  const long first_unbind = find_line(log, "cuMulticastUnbind");
  const long last_unbind = last_line(log, "cuMulticastUnbind");
  const long free_va = find_line(log, "cuMemAddressFree(multicast window)");
  const long release = find_line(log, "cuMemRelease(multicast)");
  CHECK(unmap >= 0);
  CHECK(first_unbind > unmap);
  CHECK(free_va > last_unbind);
  CHECK(release > free_va);
  CHECK(find_line(log, "cuMemRelease(bound memory)") == -1);  // the unicast memory came last
  // Every bind undone with exactly its offset and size.
  std::vector<std::string> binds, unbinds;
  for (const auto& line : log) {
    if (line.compare(0, 18, "cuMulticastBindMem") == 0) binds.push_back(line.substr(18));
    if (line.compare(0, 17, "cuMulticastUnbind") == 0) unbinds.push_back(line.substr(17));
  }
  CHECK(binds.size() == 2);
  std::sort(binds.begin(), binds.end());
  std::sort(unbinds.begin(), unbinds.end());
  CHECK(binds == unbinds);
  CHECK(all_ranks(nothing_left()));
}

TEST_CASE("multicast: a failure at any setup step unwinds everywhere and falls back to unicast") {
  ClearedMulticastEnv cleared;
  const int n = mpi_size(), last = n - 1;
  struct Case {
    emu::MulticastStep step;
    const char* call;  // what the fallback reason names
    int rank;          // the PE whose driver fails
  };
  const Case cases[] = {
      {emu::MulticastStep::Granularity, "cuMulticastGetGranularity", last},
      {emu::MulticastStep::Create, "cuMulticastCreate", 0},
      {emu::MulticastStep::Export, "cuMemExportToShareableHandle(multicast", 0},
      {emu::MulticastStep::Import, "cuMemImportFromShareableHandle(multicast", last},
      {emu::MulticastStep::AddDevice, "cuMulticastAddDevice", last},
      {emu::MulticastStep::Map, "cuMemMap", last},
      {emu::MulticastStep::SetAccess, "cuMemSetAccess", last},
      {emu::MulticastStep::Bind, "cuMulticastBindMem", last},  // init's first growth
  };
  for (const Case& c : cases) {
    const bool happens =
        (c.step != emu::MulticastStep::Export && c.step != emu::MulticastStep::Import) || n > 1;
    if (!happens) continue;  // one PE shares nothing
    emu::Options o = multicast_options();
    if (mpi_rank() == c.rank) o.multicast_fail = c.step;
    {
      EmulatedRuntime rt(o);
      INFO("failing step: " << c.call << " on PE " << c.rank);
      REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
      tmashmem_ctx_t ctx = device_ctx();
      CHECK(all_ranks(ctx.mc_base == 0));
      CHECK(contains(tmashmem::runtime().multicast.status(), c.call));
      const std::string status = tmashmem::runtime().multicast.status();
      const std::string who = std::to_string(c.rank);
      CHECK((contains(status, "PE " + who) || contains(status, "rank " + who)));
      // Nothing of the multicast object is left; the unicast heap works.
      emu::Counts counts = emu::counts();
      CHECK(counts.multicast_objects == 0);
      CHECK(counts.multicast_binds == 0);
      CHECK(counts.multicast_mappings == 0);
      CHECK(counts.reservations == 1);  // the heap window only
      auto* x = static_cast<uint8_t*>(tmashmem_malloc(size_t(3) << 20));
      REQUIRE(all_ranks(x != nullptr));
      CHECK(tmashmem_mc_ptr(x) == nullptr);
      CHECK(emu::counts().multicast_binds == 0);
      auto* peer = static_cast<uint8_t*>(tmashmem_ptr(x, (mpi_rank() + 1) % n));
      REQUIRE(peer != nullptr);
      peer[mpi_rank()] = static_cast<uint8_t>(0x5a + mpi_rank());
      tmashmem_barrier_all();
      CHECK(x[(mpi_rank() + n - 1) % n] == static_cast<uint8_t>(0x5a + (mpi_rank() + n - 1) % n));
      tmashmem_barrier_all();
      CHECK(tmashmem_free(x) == TMASHMEM_SUCCESS);
      REQUIRE(tmashmem_finalize() == TMASHMEM_SUCCESS);
    }
    CHECK(all_ranks(nothing_left()));
  }
}

TEST_CASE("multicast: a bind failing when the heap grows later fails that growth only") {
  ClearedMulticastEnv cleared;
  const int last = mpi_size() - 1;
  emu::Options o = multicast_options();
  if (mpi_rank() == last) {
    o.multicast_fail = emu::MulticastStep::Bind;
    o.multicast_fail_call = 2;  // the first growth after init
  }
  EmulatedRuntime rt(o);
  REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
  REQUIRE(all_ranks(device_ctx().mc_base != 0));
  emu::Counts before = emu::counts();
  void* p = tmashmem_malloc(size_t(3) << 20);
  CHECK(p == nullptr);
  const std::string m = tmashmem_last_error();
  CHECK(contains(m, mpi_rank() == last ? "cuMulticastBindMem" : "PE " + std::to_string(last)));
  CHECK(contains(m, "TMASHMEM_MULTICAST=off"));
  emu::Counts after = emu::counts();
  CHECK(after.allocations == before.allocations);  // all or nothing
  CHECK(after.mappings == before.mappings);
  CHECK(after.multicast_binds == before.multicast_binds);
  void* q = tmashmem_malloc(size_t(3) << 20);  // the next growth binds again
  CHECK(all_ranks(q != nullptr));
  CHECK(tmashmem_mc_ptr(q) != nullptr);
  CHECK(emu::counts().multicast_binds == before.multicast_binds + 1);
  tmashmem_free(q);
}

TEST_CASE("multicast: the gate: any condition that stops it means no multicast call at all") {
  ClearedMulticastEnv cleared;
  const int me = mpi_rank(), n = mpi_size(), last = n - 1;
  struct Case {
    const char* name;
    const char* env;  // set on every PE (or only on `env_rank`)
    const char* env_value;
    int env_rank;        // -1: every PE
    const char* reason;  // what the status names
  };
  const Case cases[] = {
      {"TMASHMEM_MULTICAST=off", "TMASHMEM_MULTICAST", "off", -1, "TMASHMEM_MULTICAST=off"},
      {"NVSHMEM_DISABLE_NVLS=1", "NVSHMEM_DISABLE_NVLS", "1", -1, "NVSHMEM_DISABLE_NVLS=1"},
      {"NCCL_NVLS_ENABLE=0", "NCCL_NVLS_ENABLE", "0", -1, "NCCL_NVLS_ENABLE=0"},
      {"TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", -1,
       "TORCH_SYMM_MEM_DISABLE_MULTICAST=1"},
      {"NCCL_NVLS_ENABLE=0 on the last PE only", "NCCL_NVLS_ENABLE", "0", last,
       "NCCL_NVLS_ENABLE=0"},
      {"TMASHMEM_MULTICAST=off on the last PE only (PEs disagree)", "TMASHMEM_MULTICAST", "off",
       last, n > 1 ? "disagree" : "TMASHMEM_MULTICAST=off"},
      {"no device support on the last PE", nullptr, nullptr, -1,
       "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED"},
      {"a driver without cuMulticast* entries", nullptr, nullptr, -1, "cuMulticast"},
      {"PEs sharing one GPU", nullptr, nullptr, -1, "share one GPU"},
  };
  long positive_calls = 0;
  {
    // The control: with nothing in the way, the same program makes multicast calls.
    EmulatedRuntime rt(multicast_options());
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
    void* p = tmashmem_malloc(size_t(3) << 20);
    CHECK(all_ranks(p != nullptr));
    tmashmem_free(p);
    tmashmem_finalize();
    positive_calls = emu::counts().multicast_calls;
    CHECK(positive_calls > 0);
  }
  if (me == 0)
    std::printf("multicast gate: control (multicast used): %ld multicast calls on PE 0\n",
                positive_calls);
  for (const Case& c : cases) {
    if (std::strcmp(c.name, "PEs sharing one GPU") == 0 && n < 2) continue;
    emu::Options o = multicast_options();
    if (std::strcmp(c.name, "no device support on the last PE") == 0 && me == last)
      o.multicast_supported = false;
    if (std::strcmp(c.name, "a driver without cuMulticast* entries") == 0)
      o.multicast_entries = false;
    if (std::strcmp(c.name, "PEs sharing one GPU") == 0) o.device_count = 1;
    const bool set_here = c.env && (c.env_rank < 0 || c.env_rank == me);
    EnvGuard env(set_here ? c.env : "TMASHMEM_TEST_UNUSED", set_here ? c.env_value : nullptr);
    long calls = -1;
    // TMASHMEM_MULTICAST must agree (Scope::Job in runtime/settings.h): PEs that disagree are
    // refused by init's settings check, before any multicast call.
    const bool disagree = n > 1 && std::strcmp(c.reason, "disagree") == 0;
    if (disagree) {
      EmulatedRuntime rt(o);
      INFO(c.name);
      CHECK(all_ranks(rt.status == TMASHMEM_ERROR_SYMMETRY));
      CHECK(contains(rt.message, "TMASHMEM_MULTICAST"));
      calls = emu::counts().multicast_calls;
      CHECK(calls == 0);
      CHECK(emu::multicast_log().empty());
    } else {
      EmulatedRuntime rt(o);
      INFO(c.name);
      REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
      const std::string status = tmashmem::runtime().multicast.status();
      CHECK(contains(status, c.reason));
      CHECK(device_ctx().mc_base == 0);
      auto* x = static_cast<uint8_t*>(tmashmem_malloc(size_t(5) << 20));  // grows the heap
      REQUIRE(all_ranks(x != nullptr));
      CHECK(tmashmem_mc_ptr(x) == nullptr);
      tmashmem_free(x);
      REQUIRE(tmashmem_finalize() == TMASHMEM_SUCCESS);
      calls = emu::counts().multicast_calls;
      CHECK(calls == 0);
      CHECK(emu::multicast_log().empty());
    }
    long worst = 0;
    MPI_Allreduce(&calls, &worst, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0)
      std::printf("multicast gate: %s: %ld multicast calls (most on any PE)\n", c.name, worst);
  }
}

TEST_CASE("multicast: TMASHMEM_MULTICAST=on makes its absence an init error naming the condition") {
  ClearedMulticastEnv cleared;
  EnvGuard on("TMASHMEM_MULTICAST", "on");
  {
    emu::Options o = multicast_options();
    if (mpi_rank() == mpi_size() - 1) o.multicast_supported = false;
    EmulatedRuntime rt(o);
    CHECK(rt.status == TMASHMEM_ERROR_NOT_SUPPORTED);
    CHECK(contains(rt.message, "TMASHMEM_MULTICAST=on"));
    CHECK(contains(rt.message, "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED"));
    CHECK_FALSE(tmashmem_initialized());
    CHECK(emu::counts().multicast_calls == 0);
  }
  CHECK(all_ranks(nothing_left()));
  {
    EnvGuard nccl("NCCL_NVLS_ENABLE", "0");
    EmulatedRuntime rt(multicast_options());
    CHECK(rt.status == TMASHMEM_ERROR_NOT_SUPPORTED);
    CHECK(contains(rt.message, "NCCL_NVLS_ENABLE=0"));
    CHECK(emu::counts().multicast_calls == 0);
  }
  {
    // A setup step failing under `on` is the init error, with nothing left behind.
    emu::Options o = multicast_options();
    if (mpi_rank() == 0) o.multicast_fail = emu::MulticastStep::Create;
    EmulatedRuntime rt(o);
    CHECK(rt.status != TMASHMEM_SUCCESS);
    CHECK(contains(rt.message, mpi_rank() == 0 ? "cuMulticastCreate" : "PE 0"));
    CHECK_FALSE(tmashmem_initialized());
  }
  CHECK(all_ranks(nothing_left()));
  {
    // And with everything in place, `on` uses it.
    EmulatedRuntime rt(multicast_options());
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
    CHECK(device_ctx().mc_base != 0);
  }
}

TEST_CASE("multicast: a chunk size that is not a multiple of the bind granularity") {
  ClearedMulticastEnv cleared;
  emu::Options o = multicast_options();
  o.multicast_granularity = size_t(4) << 20;  // the heap's chunk is 2 MiB
  o.multicast_recommended_granularity = size_t(8) << 20;
  {
    EmulatedRuntime rt(o);
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));  // auto: unicast
    CHECK(device_ctx().mc_base == 0);
    CHECK(contains(tmashmem::runtime().multicast.status(), "TMASHMEM_CHUNK_SIZE"));
    CHECK(contains(tmashmem::runtime().multicast.status(), "4M"));
  }
  {
    EnvGuard on("TMASHMEM_MULTICAST", "on");
    EmulatedRuntime rt(o);
    CHECK(rt.status == TMASHMEM_ERROR_INVALID_VALUE);
    CHECK(contains(rt.message, "TMASHMEM_CHUNK_SIZE"));
  }
  CHECK(all_ranks(nothing_left()));
  {
    EmulatedRuntime rt(o, small_heap_attr(size_t(64) << 20, size_t(4) << 20));  // a 4 MiB chunk
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
    CHECK(all_ranks(device_ctx().mc_base != 0));
  }
}

TEST_CASE("multicast: fabric handles share the multicast object through the bootstrap") {
  ClearedMulticastEnv cleared;
  emu::Options o = multicast_options();
  o.fabric_supported = true;
  o.fabric_export_works = true;
  {
    EmulatedRuntime rt(o);
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS));
    REQUIRE(all_ranks(device_ctx().mc_base != 0));
    std::vector<std::string> log = emu::multicast_log();
    if (mpi_size() > 1)
      CHECK(find_line(log, mpi_rank() == 0
                               ? "cuMemExportToShareableHandle(multicast, fabric)"
                               : "cuMemImportFromShareableHandle(multicast, fabric)") >= 0);
    auto* x = static_cast<uint8_t*>(tmashmem_malloc(size_t(3) << 20));
    REQUIRE(all_ranks(x != nullptr));
    CHECK(store_through_multicast(x, (size_t(3) << 20) - 128, 128));
    tmashmem_free(x);
  }
  CHECK(all_ranks(nothing_left()));
}

TEST_CASE("multicast: failures injected through TMASHMEM_EMU_MULTICAST_FAIL") {
  ClearedMulticastEnv cleared;
  {
    EnvGuard fail(emu::kEnvMulticastFail, "add_device:1");
    {
      EmulatedRuntime rt(multicast_options());
      REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS && on_emulator()));
      CHECK(device_ctx().mc_base == 0);
      CHECK(contains(tmashmem::runtime().multicast.status(), "cuMulticastAddDevice"));
      REQUIRE(tmashmem_finalize() == TMASHMEM_SUCCESS);
    }
    CHECK(all_ranks(nothing_left()));
  }
  {
    EnvGuard fail(emu::kEnvMulticastFail, "bind:0");
    CHECK_THROWS_AS(emu::install(multicast_options()), std::invalid_argument);
    emu::uninstall();
  }
  {
    EnvGuard fail(emu::kEnvMulticastFail, "unmap");
    CHECK_THROWS_AS(emu::install(multicast_options()), std::invalid_argument);
    emu::uninstall();
  }
}

namespace {

// The device table of `t`'s handle: n_local_pes PE maps, then the multicast slot.
std::vector<CUtensorMap> map_table(const tmashmem_tensor_handle_t& h) {
  std::vector<CUtensorMap> table(static_cast<size_t>(h.n_local_pes) + 1);
  if (tmashmem::driver().cuMemcpyDtoH(table.data(), static_cast<CUdeviceptr>(h.maps),
                                      table.size() * sizeof(CUtensorMap)) != CUDA_SUCCESS)
    table.clear();
  return table;
}

// A create and a view; for each, whether the handle says it has a multicast map, and where
// that map (slot n_local_pes) points: mc_base + heap offset, or nowhere (all zero).
void check_multicast_maps(bool multicast) {
  uint64_t dims[2] = {96, 40};
  uint32_t box[2] = {32, 8};
  tmashmem_tensor_desc_t d;
  REQUIRE(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_F32, 2, dims, box) == TMASHMEM_SUCCESS);
  auto* buffer = static_cast<uint8_t*>(tmashmem_malloc(size_t(1) << 20));
  REQUIRE(all_ranks(buffer != nullptr));
  for (int view = 0; view < 2; ++view) {
    INFO((view ? "tmashmem_tensor_view" : "tmashmem_tensor_create"));
    tmashmem_tensor_t t = nullptr;
    const tmashmem_status_t st =
        view ? tmashmem_tensor_view(buffer + 4096, &d, &t) : tmashmem_tensor_create(&d, &t);
    REQUIRE(all_ranks(st == TMASHMEM_SUCCESS));
    tmashmem_tensor_handle_t h;
    REQUIRE(tmashmem_tensor_handle(t, &h) == TMASHMEM_SUCCESS);
    const tmashmem_ctx_t ctx = device_ctx();
    CHECK(h.has_multicast == (multicast ? 1u : 0u));
    const std::vector<CUtensorMap> table = map_table(h);
    REQUIRE(table.size() == static_cast<size_t>(h.n_local_pes) + 1);
    const CUtensorMap& mc = table.back();
    if (multicast) {
      emu::TensorMapFields f;
      REQUIRE(emu::decode_tensor_map(mc, &f));
      CHECK(f.address == ctx.mc_base + (h.data - ctx.heap_base));
      CHECK(f.address == reinterpret_cast<uint64_t>(tmashmem_mc_ptr(tmashmem_tensor_data(t))));
      CHECK(f.rank == 2);
      CHECK(f.dims[0] == 96);
      CHECK(f.box[1] == 8);
      // The PE maps are still each PE's own copy.
      emu::TensorMapFields mine;
      REQUIRE(emu::decode_tensor_map(table[static_cast<size_t>(mpi_rank())], &mine));
      CHECK(mine.address == h.data);
    } else {
      CHECK(ctx.mc_base == 0);
      CHECK(std::all_of(std::begin(mc.opaque), std::end(mc.opaque),
                        [](cuuint64_t w) { return w == 0; }));
    }
    CHECK(tmashmem_tensor_destroy(t) == TMASHMEM_SUCCESS);
  }
  CHECK(tmashmem_free(buffer) == TMASHMEM_SUCCESS);
}

}  // namespace

TEST_CASE(
    "multicast: every symmetric tensor gets a map on its multicast address, if there is one") {
  ClearedMulticastEnv cleared;
  {
    EmulatedRuntime rt(multicast_options());
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS && on_emulator()));
    REQUIRE(all_ranks(device_ctx().mc_base != 0));
    check_multicast_maps(true);
  }
  {
    EnvGuard off("TMASHMEM_MULTICAST", "off");
    EmulatedRuntime rt(multicast_options());
    REQUIRE(all_ranks(rt.status == TMASHMEM_SUCCESS && on_emulator()));
    check_multicast_maps(false);
    CHECK(emu::counts().multicast_calls == 0);
  }
}
