// tmashmem_init / tmashmem_finalize: bootstrap, driver, device, peers, heap. Init is one
// ordered sequence of steps, each ending in an agreement the next relies on; which
// bootstrap it starts is decided in runtime/bootstrap_select.cpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "runtime/agreement.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

namespace tmashmem {
namespace {

// What every PE publishes about itself during init.
struct PeInfo {
  CUuuid uuid;
  int32_t ordinal;
  int32_t vmm;
  int32_t posix_fd;
  int32_t fabric;
  int32_t fabric_export_ok;
  int32_t pid;
  int32_t debug;        // TMASHMEM_DEBUG (per PE; the collectives' check policy needs any)
  int32_t sms;          // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT of this PE's GPU
  uint64_t reach_mask;  // bit s: this PE's GPU can load/store local slot s's GPU
};

// COLLECTIVE: every PE learns whether any PE failed a step of init.
tmashmem_status_t agree(tmashmem_status_t mine, const char* step) {
  return tmashmem::agree(*runtime().bootstrap, mine, "tmashmem_init", step);
}

tmashmem_status_t select_device(Runtime& rt) {
  CUcontext current = nullptr;
  TMASHMEM_CU(cuCtxGetCurrent(&current));
  int count = 0;
  TMASHMEM_CU(cuDeviceGetCount(&count));
  if (count <= 0)
    return set_error(TMASHMEM_ERROR_NO_DEVICE,
                     "no CUDA device: the driver reports 0 devices (check CUDA_VISIBLE_DEVICES)");
  if (current) {
    TMASHMEM_CU(cuCtxGetDevice(&rt.device));
    rt.context = current;
  } else {
    // None chosen yet: spread the node's PEs over its devices.
    int ordinal = rt.bootstrap->local_rank() % count;
    TMASHMEM_CU(cuDeviceGet(&rt.device, ordinal));
    TMASHMEM_CU(cuDevicePrimaryCtxRetain(&rt.context, rt.device));
    rt.retained_primary = true;
    TMASHMEM_CU(cuCtxSetCurrent(rt.context));
    rt.set_current = true;
  }
  rt.device_ordinal = static_cast<int>(rt.device);
  int vmm = 0;
  TMASHMEM_CU(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                   rt.device));
  if (!vmm)
    return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                     "CUDA device %d does not support virtual memory management (cuMemCreate), "
                     "which the symmetric heap needs",
                     rt.device_ordinal);
  return TMASHMEM_SUCCESS;
}

// Whether this process can export a fabric handle (needs driver, IMEX where multi-node).
bool probe_fabric_export(const Runtime& rt) {
  CUmemAllocationProp prop = device_allocation_prop(rt.device_ordinal, CU_MEM_HANDLE_TYPE_FABRIC);
  size_t granularity = 0;
  if (driver().cuMemGetAllocationGranularity(&granularity, &prop,
                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
      granularity == 0)
    return false;
  CUmemGenericAllocationHandle handle = 0;
  if (driver().cuMemCreate(&handle, granularity, &prop, 0) != CUDA_SUCCESS) return false;
  CUmemFabricHandle fabric;
  bool ok = driver().cuMemExportToShareableHandle(&fabric, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0) ==
            CUDA_SUCCESS;
  driver().cuMemRelease(handle);
  return ok;
}

tmashmem_status_t describe_self(Runtime& rt, PeInfo* info) {
  std::memset(info, 0, sizeof *info);
  info->debug = rt.config.debug;
  TMASHMEM_CU(cuDeviceGetUuid(&info->uuid, rt.device));
  info->ordinal = rt.device_ordinal;
  TMASHMEM_CU(
      cuDeviceGetAttribute(&info->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, rt.device));
  TMASHMEM_CU(cuDeviceGetAttribute(
      &info->vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, rt.device));
  TMASHMEM_CU(cuDeviceGetAttribute(
      &info->posix_fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, rt.device));
  TMASHMEM_CU(cuDeviceGetAttribute(&info->fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
                                   rt.device));
  bool want_fabric = rt.config.handle_type != TMASHMEM_HANDLE_POSIX_FD;
  info->fabric_export_ok = want_fabric && info->fabric && probe_fabric_export(rt) ? 1 : 0;
  info->pid = static_cast<int32_t>(getpid());
  return TMASHMEM_SUCCESS;
}

// This PE's row of the node's reachability matrix: can my GPU load/store slot s's GPU?
tmashmem_status_t reach_row(Runtime& rt, const std::vector<PeInfo>& all, uint64_t* row) {
  *row = 0;
  int count = 0;
  TMASHMEM_CU(cuDeviceGetCount(&count));
  for (int s = 0; s < rt.n_local_pes; ++s) {
    const PeInfo& peer = all[static_cast<size_t>(rt.first_local_pe + s)];
    if (std::memcmp(&peer.uuid, &all[static_cast<size_t>(rt.bootstrap->rank())].uuid,
                    sizeof(CUuuid)) == 0) {
      *row |= uint64_t(1) << s;  // same GPU
      continue;
    }
    for (int d = 0; d < count; ++d) {  // find the peer's GPU among the ones this process sees
      CUdevice dev = 0;
      CUuuid uuid;
      TMASHMEM_CU(cuDeviceGet(&dev, d));
      TMASHMEM_CU(cuDeviceGetUuid(&uuid, dev));
      if (std::memcmp(&uuid, &peer.uuid, sizeof uuid) != 0) continue;
      int can = 0;
      TMASHMEM_CU(cuDeviceCanAccessPeer(&can, rt.device, dev));
      if (can) *row |= uint64_t(1) << s;
      break;
    }
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t choose_handle_type(Runtime& rt, const std::vector<PeInfo>& all) {
  bool all_fabric = true, all_posix = true;
  int no_fabric = -1, no_posix = -1;
  // Over every PE of the job, not just this node's: the handle type decides which
  // collectives heap growth makes, so all PEs must choose the same one.
  for (size_t pe = 0; pe < all.size(); ++pe) {
    const PeInfo& p = all[pe];
    if (!p.fabric_export_ok && all_fabric) {
      all_fabric = false;
      no_fabric = static_cast<int>(pe);
    }
    if (!p.posix_fd && all_posix) {
      all_posix = false;
      no_posix = static_cast<int>(pe);
    }
  }
  switch (rt.config.handle_type) {
    case TMASHMEM_HANDLE_FABRIC:
      if (!all_fabric)
        return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                         "TMASHMEM_HANDLE_TYPE=fabric but PE %d cannot export a fabric handle (no "
                         "fabric support or no IMEX channel); use auto or posix_fd",
                         no_fabric);
      rt.handle_type = CU_MEM_HANDLE_TYPE_FABRIC;
      return TMASHMEM_SUCCESS;
    case TMASHMEM_HANDLE_POSIX_FD:
    case TMASHMEM_HANDLE_AUTO:
      if (rt.config.handle_type == TMASHMEM_HANDLE_AUTO && all_fabric) {
        rt.handle_type = CU_MEM_HANDLE_TYPE_FABRIC;
        return TMASHMEM_SUCCESS;
      }
      if (!all_posix)
        return set_error(
            TMASHMEM_ERROR_NOT_SUPPORTED,
            "the GPU of PE %d supports neither POSIX fd nor (exportable) fabric memory "
            "handles, so the symmetric heap cannot be shared",
            no_posix);
      rt.handle_type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      return TMASHMEM_SUCCESS;
  }
  return set_error(TMASHMEM_ERROR_INTERNAL, "unknown handle type");
}

void teardown(Runtime& rt) {
  if (rt.context) driver().cuCtxSynchronize();
  release_tensor_tables();
  rt.multicast.destroy();  // before the unicast memory it is bound to
  rt.heap.destroy();
  rt.allocator.reset(0);
  rt.channel.close();
  rt.signal_pad = nullptr;
  rt.coll_staging = nullptr;
  rt.coll_low_latency = nullptr;
  if (rt.set_current) driver().cuCtxSetCurrent(nullptr);
  if (rt.retained_primary) driver().cuDevicePrimaryCtxRelease(rt.device);
  rt.set_current = rt.retained_primary = false;
  rt.context = nullptr;
  rt.device_ordinal = -1;
  rt.device_mem_ops_64 = -1;
  rt.bootstrap.reset();
  rt.initialized = false;
  set_error_rank(-1);
}

tmashmem_status_t init_locked(Runtime& rt, const tmashmem_init_attr_t* attr) {
  TMASHMEM_TRY(load_config(attr, &rt.config));
  BootstrapOptions options;
  TMASHMEM_TRY(bootstrap_options(rt.config, attr, &options));
  rt.bootstrap_choice = choose_bootstrap(options);
  if (rt.bootstrap_choice.kind == TMASHMEM_BOOTSTRAP_UID) set_error_rank(options.uid_rank);
  TMASHMEM_TRY(create_bootstrap(options, &rt.bootstrap));
  Bootstrap& bs = *rt.bootstrap;
  set_error_rank(bs.rank());
  TMASHMEM_TRY(check_settings_agree(bs, rt.config));

  // Each step is agreed, so a failure on one PE is an error on all, never a hang.
  tmashmem_status_t st = load_driver();
  if (st == TMASHMEM_SUCCESS) st = select_device(rt);
  TMASHMEM_TRY(agree(st, "opening the CUDA driver and device"));

  rt.first_local_pe = bs.first_local_rank();
  rt.n_local_pes = bs.local_size();
  rt.my_slot = bs.local_rank();
  st = TMASHMEM_SUCCESS;
  if (!bs.local_ranks_contiguous() && bs.local_size() > 1)
    st = set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                   "the PEs of this node are not numbered consecutively (first %d, %d PEs): launch "
                   "with ranks placed by node, e.g. mpirun --map-by slot",
                   bs.first_local_rank(), bs.local_size());
  else if (bs.local_size() > kMaxLocalPes)
    st = set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                   "%d PEs on one node; this release supports at most %d", bs.local_size(),
                   kMaxLocalPes);
  TMASHMEM_TRY(agree(st, "checking the node layout"));

  PeInfo mine;
  TMASHMEM_TRY(agree(describe_self(rt, &mine), "querying the device"));
  std::vector<PeInfo> all(static_cast<size_t>(bs.size()));
  TMASHMEM_TRY(bs.allgather(&mine, all.data(), sizeof mine));
  TMASHMEM_TRY(agree(reach_row(rt, all, &mine.reach_mask), "checking peer access"));
  TMASHMEM_TRY(bs.allgather(&mine, all.data(), sizeof mine));
  // Reachable both ways, or not at all: each side maps only what the other shares.
  rt.reachable.assign(static_cast<size_t>(rt.n_local_pes), false);
  for (int s = 0; s < rt.n_local_pes; ++s) {
    uint64_t theirs = all[static_cast<size_t>(rt.first_local_pe + s)].reach_mask;
    rt.reachable[static_cast<size_t>(s)] =
        ((mine.reach_mask >> s) & 1) && ((theirs >> rt.my_slot) & 1);
  }
  // GPUs are told apart by UUID, which is unique across nodes too. All PEs on one GPU is the
  // same as the busiest GPU holding the whole job.
  std::map<std::string, int> pes_by_gpu;
  rt.fewest_sms = mine.sms;
  rt.most_pes_per_gpu = 1;
  for (const PeInfo& p : all) {
    rt.fewest_sms = std::min(rt.fewest_sms, p.sms);
    const int on_gpu = ++pes_by_gpu[std::string(p.uuid.bytes, sizeof p.uuid.bytes)];
    rt.most_pes_per_gpu = std::max(rt.most_pes_per_gpu, on_gpu);
  }
  rt.one_gpu = rt.most_pes_per_gpu == bs.size() && rt.n_local_pes == bs.size();
  // TMASHMEM_DEBUG may differ between PEs, but whether the collectives check every call
  // (a collective exchange) must not: every PE checks every call when any PE debugs.
  rt.coll_check_every_call = false;
  for (const PeInfo& p : all) rt.coll_check_every_call = rt.coll_check_every_call || p.debug >= 1;
  TMASHMEM_TRY(agree(choose_handle_type(rt, all), "choosing the memory handle type"));

  st = TMASHMEM_SUCCESS;
  if (rt.handle_type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)  // the same on every PE
    st = rt.channel.open(bs, rt.first_local_pe, rt.n_local_pes, rt.config.fd_socket,
                         rt.config.debug);
  rt.job_id = rt.channel.job_id();
  TMASHMEM_TRY(agree(st, "opening the handle-exchange socket"));

  HeapSetup setup;
  setup.bootstrap = &bs;
  setup.channel = &rt.channel;
  setup.job_id = rt.job_id;
  setup.device_ordinal = rt.device_ordinal;
  setup.handle_type = rt.handle_type;
  setup.heap_max = rt.config.heap_max;
  setup.chunk_size = rt.config.chunk_size;
  setup.timeout_ms = rt.config.bootstrap_timeout_ms;
  setup.debug = rt.config.debug;
  setup.first_local_pe = rt.first_local_pe;
  setup.my_slot = rt.my_slot;
  setup.reachable = rt.reachable;
  TMASHMEM_TRY(agree(rt.heap.create(setup), "reserving the heap window"));
  // Gated (docs/design.md, decision 7); before the first growth, so every chunk is bound.
  TMASHMEM_TRY(rt.multicast.setup(rt));
  if (rt.multicast.active()) rt.heap.attach_multicast(&rt.multicast);
  rt.allocator.reset(rt.heap.max_bytes());
  rt.initialized = true;  // the collective allocation below needs it

  // The library's own symmetric region, zeroed on every PE before any PE uses it.
  st = symmetric_alloc("tmashmem_init (signal pad)", TMASHMEM_SIGNAL_PAD_BYTES, kHeapAlignment,
                       true, {}, &rt.signal_pad);
  if (st != TMASHMEM_SUCCESS && rt.multicast.fall_back_after_first_growth(rt))
    st = symmetric_alloc("tmashmem_init (signal pad)", TMASHMEM_SIGNAL_PAD_BYTES, kHeapAlignment,
                         true, {}, &rt.signal_pad);
  if (st != TMASHMEM_SUCCESS) return st;
  TMASHMEM_TRY(coll_low_latency_init(rt));

  if (rt.config.debug >= 1) {
    char name[128] = {0};
    driver().cuDeviceGetName(name, sizeof name - 1, rt.device);
    std::fprintf(stderr,
                 "[tmashmem rank %d] init: bootstrap %s, %d PEs (%d on this node, slot %d), CUDA "
                 "device %d (%s), handles %s, heap window %s per PE, chunk %s\n",
                 bs.rank(), bs.name(), bs.size(), rt.n_local_pes, rt.my_slot, rt.device_ordinal,
                 name, rt.handle_type == CU_MEM_HANDLE_TYPE_FABRIC ? "fabric" : "posix_fd",
                 format_size(rt.heap.max_bytes()).c_str(),
                 format_size(rt.config.chunk_size).c_str());
  }
  return TMASHMEM_SUCCESS;
}

}  // namespace

Runtime& runtime() {
  static Runtime instance;
  return instance;
}

tmashmem_status_t check_initialized(const char* call) {
  if (runtime().initialized) return TMASHMEM_SUCCESS;
  return set_error(TMASHMEM_ERROR_NOT_INITIALIZED,
                   "%s called before tmashmem_init (or after tmashmem_finalize)", call);
}

tmashmem_status_t require_initialized(const char* call) {
  Runtime& rt = runtime();
  TMASHMEM_TRY(check_initialized(call));
  // Calls may come from any host thread: the runtime's context must be current there
  // for the driver calls that follow (cuMemsetD8, synchronisation, tensor tables).
  CUcontext current = nullptr;
  if (driver().cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != rt.context)
    TMASHMEM_CU(cuCtxSetCurrent(rt.context));
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

void tmashmem_init_attr_set_defaults(tmashmem_init_attr_t* attr) {
  if (!attr) return;
  std::memset(attr, 0, sizeof *attr);
  attr->version = TMASHMEM_INIT_ATTR_VERSION;
}

tmashmem_status_t tmashmem_init(void) { return tmashmem_init_attr(nullptr); }

tmashmem_status_t tmashmem_init_attr(const tmashmem_init_attr_t* attr) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (rt.initialized)
    return set_error(TMASHMEM_ERROR_ALREADY_INITIALIZED,
                     "tmashmem_init called twice: call tmashmem_finalize first");
  clear_error();
  tmashmem_status_t st = init_locked(rt, attr);
  if (st != TMASHMEM_SUCCESS) {
    std::string message = last_error();
    teardown(rt);
    return restore_error(st, message);
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t tmashmem_finalize(void) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  TMASHMEM_TRY(require_initialized("tmashmem_finalize"));
  // No PE unmaps while another may still be reading or writing through its mappings.
  tmashmem_status_t st = synchronize_context();
  tmashmem_status_t barrier = rt.bootstrap->barrier();
  if (st == TMASHMEM_SUCCESS) st = barrier;
  std::string message = last_error();
  teardown(rt);
  return st == TMASHMEM_SUCCESS ? TMASHMEM_SUCCESS : restore_error(st, message);
}

}  // extern "C"
#pragma GCC visibility pop
