// The heap's multicast object: gate, setup, growth binding, teardown (see multicast.h),
// and tmashmem_mc_ptr.
#include "runtime/multicast.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "runtime/agreement.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/multicast_gate.h"
#include "runtime/runtime.h"

namespace tmashmem {
namespace {

// The fd-channel step of the multicast handle. Heap growth steps count from 1 and drop
// a message of an earlier step as left over, so a stray one never reaches a heap import.
constexpr uint32_t kMulticastFdSequence = 0;

tmashmem_status_t agree_step(Runtime& rt, tmashmem_status_t mine, const char* step) {
  return agree(*rt.bootstrap, mine, "multicast setup (nothing was kept)", step);
}

// What is wrong with this PE's node for multicast ("" when nothing): one GPU per PE and
// every pair of its PEs load/store reachable; and whether this PE's GPU supports
// multicast. COLLECTIVE (all-gathers the GPU UUIDs, also when a query failed here, so
// that every PE reaches the agreement that follows).
tmashmem_status_t query_node(Runtime& rt, std::string* problem, bool* supported) {
  Bootstrap& bs = *rt.bootstrap;
  CUuuid mine;
  std::memset(&mine, 0, sizeof mine);
  int attribute = 0;
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  CUresult r = driver().cuDeviceGetUuid(&mine, rt.device);
  if (r != CUDA_SUCCESS) st = cuda_error(r, "cuDeviceGetUuid", __FILE__, __LINE__);
  if (st == TMASHMEM_SUCCESS) {
    r = driver().cuDeviceGetAttribute(&attribute, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED,
                                      rt.device);
    if (r != CUDA_SUCCESS)
      st = cuda_error(r, "cuDeviceGetAttribute(MULTICAST_SUPPORTED)", __FILE__, __LINE__);
  }
  *supported = attribute == 1;
  std::vector<CUuuid> all(static_cast<size_t>(bs.size()));
  TMASHMEM_TRY(bs.allgather(&mine, all.data(), sizeof mine));
  TMASHMEM_TRY(st);
  problem->clear();
  for (int a = 0; a < rt.n_local_pes && problem->empty(); ++a) {
    if (!rt.reachable[static_cast<size_t>(a)])
      *problem = format_string("PE %d cannot load/store PE %d's GPU (no peer access)", bs.rank(),
                               rt.first_local_pe + a);
    for (int b = a + 1; b < rt.n_local_pes && problem->empty(); ++b)
      if (std::memcmp(&all[static_cast<size_t>(rt.first_local_pe + a)],
                      &all[static_cast<size_t>(rt.first_local_pe + b)], sizeof(CUuuid)) == 0)
        *problem =
            format_string("PEs %d and %d share one GPU (a multicast team needs one GPU per PE)",
                          rt.first_local_pe + a, rt.first_local_pe + b);
  }
  return TMASHMEM_SUCCESS;
}

}  // namespace

tmashmem_status_t HeapMulticast::setup(Runtime& rt) {
  destroy();
  Bootstrap& bs = *rt.bootstrap;
  bool supported = false;
  std::string problem;
  TMASHMEM_TRY(agree_step(rt, query_node(rt, &problem, &supported), "checking the node's GPUs"));
  MulticastVote vote =
      multicast_vote(rt.config, supported, driver().missing_multicast_entry() == nullptr, problem);
  std::vector<MulticastVote> votes(static_cast<size_t>(bs.size()));
  TMASHMEM_TRY(bs.allgather(&vote, votes.data(), sizeof vote));
  const MulticastDecision decision = decide_multicast(votes);
  required_ = decision.required;
  if (!decision.use) {
    // Every PE decided the same from the same votes: the same outcome everywhere.
    status_ = decision.why;
    if (decision.required)
      return set_error(TMASHMEM_ERROR_NOT_SUPPORTED,
                       "TMASHMEM_MULTICAST=on but multicast cannot be used: %s; set "
                       "TMASHMEM_MULTICAST=auto to fall back to unicast",
                       decision.why.c_str());
    if (rt.config.debug >= 1)
      std::fprintf(stderr, "[tmashmem rank %d] multicast: %s\n", bs.rank(), status_.c_str());
    return TMASHMEM_SUCCESS;
  }
  tmashmem_status_t st = build(rt);
  if (st == TMASHMEM_SUCCESS) {
    status_ = "used";
    if (rt.config.debug >= 1)
      std::fprintf(stderr,
                   "[tmashmem rank %d] multicast: used, %zu bytes mapped at %p (granularity %zu)\n",
                   bs.rank(), size_, reinterpret_cast<void*>(mapped_), granularity_);
    return TMASHMEM_SUCCESS;
  }
  std::string message = last_error();
  destroy();
  status_ = "off: setup failed: " + message;
  if (decision.required) return restore_error(st, message);
  // auto: a failure is worth a line even without TMASHMEM_DEBUG; init goes on unicast.
  std::fprintf(stderr, "[tmashmem rank %d] multicast: falling back to unicast: %s\n", bs.rank(),
               message.c_str());
  clear_error();
  return TMASHMEM_SUCCESS;
}

// Each step is agreed: past an agreement every PE has finished the step before, so the
// creator's handle outlives every import, and an unwinding PE never leaves another
// waiting for a message that will not come.
tmashmem_status_t HeapMulticast::build(Runtime& rt) {
  device_ = rt.device;
  CUmulticastObjectProp prop;
  TMASHMEM_TRY(agree_step(rt, check_granularity(rt, &prop), "checking the multicast granularity"));
  size_ = prop.size;
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  if (rt.my_slot == 0) {
    CUresult r = driver().cuMulticastCreate(&handle_, &prop);
    if (r != CUDA_SUCCESS) {
      handle_ = 0;
      st = cuda_error(r, "cuMulticastCreate", __FILE__, __LINE__);
    }
  }
  TMASHMEM_TRY(agree_step(rt, st, "creating the multicast object"));
  TMASHMEM_TRY(share(rt));
  st = TMASHMEM_SUCCESS;
  CUresult r = driver().cuMulticastAddDevice(handle_, device_);
  if (r != CUDA_SUCCESS) st = cuda_error(r, "cuMulticastAddDevice", __FILE__, __LINE__);
  // The barrier between every PE's AddDevice and anyone's BindMem (or mapping).
  TMASHMEM_TRY(agree_step(rt, st, "adding this PE's GPU to the multicast object"));
  return agree_step(rt, map(rt), "mapping the multicast object");
}

tmashmem_status_t HeapMulticast::check_granularity(Runtime& rt, CUmulticastObjectProp* prop) {
  std::memset(prop, 0, sizeof *prop);
  prop->numDevices = static_cast<unsigned>(rt.n_local_pes);
  prop->size = rt.heap.max_bytes();
  prop->handleTypes = static_cast<unsigned long long>(rt.handle_type);
  size_t minimum = 0, recommended = 0;
  TMASHMEM_CU(cuMulticastGetGranularity(&minimum, prop, CU_MULTICAST_GRANULARITY_MINIMUM));
  TMASHMEM_CU(cuMulticastGetGranularity(&recommended, prop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  if (minimum == 0)
    return set_error(TMASHMEM_ERROR_INTERNAL, "cuMulticastGetGranularity reported 0 bytes");
  granularity_ = minimum;
  // Chunks are bound at their heap offsets: every chunk size and offset must be a
  // multiple of the bind granularity, which holds when the chunk size and the window are.
  const size_t chunk = rt.heap.chunk_bytes();
  if (chunk % minimum != 0 || rt.heap.max_bytes() % minimum != 0)
    return set_error(
        TMASHMEM_ERROR_INVALID_VALUE,
        "multicast binds heap chunks in multiples of %zu bytes "
        "(cuMulticastGetGranularity, minimum), but the chunk size is %zu and the heap "
        "window %zu: set TMASHMEM_CHUNK_SIZE and TMASHMEM_HEAP_MAX to multiples of %s, "
        "or TMASHMEM_MULTICAST=off",
        minimum, chunk, rt.heap.max_bytes(), format_size(minimum).c_str());
  if (rt.config.debug >= 1 && chunk % recommended != 0)
    std::fprintf(stderr,
                 "[tmashmem rank %d] multicast: TMASHMEM_CHUNK_SIZE=%zu is not a multiple of the "
                 "recommended multicast granularity %zu (slower binds)\n",
                 rt.bootstrap->rank(), chunk, recommended);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t HeapMulticast::share(Runtime& rt) {
  if (rt.n_local_pes == 1) return TMASHMEM_SUCCESS;
  return rt.handle_type == CU_MEM_HANDLE_TYPE_FABRIC ? share_fabric(rt) : share_posix_fd(rt);
}

tmashmem_status_t HeapMulticast::share_posix_fd(Runtime& rt) {
  int fd = -1;
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  if (rt.my_slot == 0) {
    CUresult r = driver().cuMemExportToShareableHandle(&fd, handle_,
                                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS) {
      fd = -1;
      st = cuda_error(r, "cuMemExportToShareableHandle(multicast, posix fd)", __FILE__, __LINE__);
    }
  }
  TMASHMEM_TRY(agree_step(rt, st, "exporting the multicast handle"));
  FdMessage message;
  std::memset(&message, 0, sizeof message);
  message.job_id = rt.job_id;
  message.sequence = kMulticastFdSequence;
  message.from_pe = rt.first_local_pe;
  message.bytes = size_;
  if (rt.my_slot == 0) {
    for (int s = 1; s < rt.n_local_pes && st == TMASHMEM_SUCCESS; ++s)
      st = rt.channel.send(rt.first_local_pe + s, message, fd, rt.config.bootstrap_timeout_ms);
    ::close(fd);
  } else {
    FdMessage in;
    int peer_fd = -1;
    st = rt.channel.receive(&in, &peer_fd, rt.config.bootstrap_timeout_ms,
                            std::to_string(rt.first_local_pe));
    if (st == TMASHMEM_SUCCESS) {
      if (in.sequence != kMulticastFdSequence || in.from_pe != rt.first_local_pe ||
          in.bytes != size_) {
        st = set_error(TMASHMEM_ERROR_INTERNAL,
                       "unexpected handle from PE %d (step %u, %llu bytes) while waiting for the "
                       "multicast handle of PE %d (%zu bytes)",
                       in.from_pe, in.sequence, static_cast<unsigned long long>(in.bytes),
                       rt.first_local_pe, size_);
      } else {
        CUresult r = driver().cuMemImportFromShareableHandle(
            &handle_, reinterpret_cast<void*>(static_cast<uintptr_t>(peer_fd)),
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        if (r != CUDA_SUCCESS) {
          handle_ = 0;
          st = cuda_error(r, "cuMemImportFromShareableHandle(multicast, posix fd)", __FILE__,
                          __LINE__);
        }
      }
      ::close(peer_fd);
    }
  }
  return agree_step(rt, st, "importing the multicast handle");
}

tmashmem_status_t HeapMulticast::share_fabric(Runtime& rt) {
  CUmemFabricHandle mine;
  std::memset(&mine, 0, sizeof mine);
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  if (rt.my_slot == 0) {
    CUresult r =
        driver().cuMemExportToShareableHandle(&mine, handle_, CU_MEM_HANDLE_TYPE_FABRIC, 0);
    if (r != CUDA_SUCCESS)
      st = cuda_error(r, "cuMemExportToShareableHandle(multicast, fabric)", __FILE__, __LINE__);
  }
  TMASHMEM_TRY(agree_step(rt, st, "exporting the multicast handle"));
  std::vector<CUmemFabricHandle> all(static_cast<size_t>(rt.bootstrap->size()));
  TMASHMEM_TRY(rt.bootstrap->allgather(&mine, all.data(), sizeof mine));
  if (rt.my_slot != 0) {
    CUresult r = driver().cuMemImportFromShareableHandle(
        &handle_, &all[static_cast<size_t>(rt.first_local_pe)], CU_MEM_HANDLE_TYPE_FABRIC);
    if (r != CUDA_SUCCESS) {
      handle_ = 0;
      st = cuda_error(r, "cuMemImportFromShareableHandle(multicast, fabric)", __FILE__, __LINE__);
    }
  }
  return agree_step(rt, st, "importing the multicast handle");
}

tmashmem_status_t HeapMulticast::map(Runtime& rt) {
  // The heap's own alignment (its granularity) is a multiple of the page; the mapping
  // also needs the multicast granularity.
  const size_t alignment =
      granularity_ > rt.heap.granularity() ? granularity_ : rt.heap.granularity();
  CUresult r = driver().cuMemAddressReserve(&reserved_, size_, alignment, 0, 0);
  if (r != CUDA_SUCCESS) {
    reserved_ = 0;
    return cuda_error(r, "cuMemAddressReserve(multicast window)", __FILE__, __LINE__);
  }
  TMASHMEM_CU(cuMemMap(reserved_, size_, 0, handle_, 0));
  va_mapped_ = true;
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof access);
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = rt.device_ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  TMASHMEM_CU(cuMemSetAccess(reserved_, size_, &access, 1));
  mapped_ = reserved_;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t HeapMulticast::bind(CUmemGenericAllocationHandle memory, size_t offset,
                                      size_t bytes) {
  if (!active()) return TMASHMEM_SUCCESS;
  if (offset % granularity_ != 0 || bytes % granularity_ != 0 || offset + bytes > size_)
    return set_error(TMASHMEM_ERROR_INTERNAL,
                     "heap chunk [%zu, +%zu) does not fit the multicast object (%zu bytes, "
                     "granularity %zu)",
                     offset, bytes, size_, granularity_);
  CUresult r = driver().cuMulticastBindMem(handle_, offset, memory, 0, bytes, 0);
  if (r != CUDA_SUCCESS) {
    // cuda_error's status: OUT_OF_MEMORY for an out-of-memory result, else CUDA.
    const tmashmem_status_t st = cuda_error(r, "cuMulticastBindMem", __FILE__, __LINE__);
    return set_error(st,
                     "could not bind %zu bytes of new heap memory at offset %zu to the multicast "
                     "object (%s); set TMASHMEM_MULTICAST=off to use unicast only",
                     bytes, offset, last_error().c_str());
  }
  binds_.emplace_back(offset, bytes);
  return TMASHMEM_SUCCESS;
}

void HeapMulticast::unbind(size_t offset) {
  for (auto it = binds_.begin(); it != binds_.end(); ++it) {
    if (it->first != offset) continue;
    driver().cuMulticastUnbind(handle_, device_, it->first, it->second);
    binds_.erase(it);
    return;
  }
}

bool HeapMulticast::fall_back_after_first_growth(Runtime& rt) {
  if (!active() || required_) return false;
  std::string message = last_error();
  rt.heap.attach_multicast(nullptr);
  destroy();
  status_ = "off: the first heap growth failed with multicast: " + message;
  std::fprintf(stderr, "[tmashmem rank %d] multicast: falling back to unicast: %s\n",
               rt.bootstrap->rank(), message.c_str());
  clear_error();
  return true;
}

void HeapMulticast::destroy() {
  if (va_mapped_) driver().cuMemUnmap(reserved_, size_);
  va_mapped_ = false;
  mapped_ = 0;
  // Exactly each bind's offset and size, as cuMulticastUnbind requires.
  for (const auto& b : binds_) driver().cuMulticastUnbind(handle_, device_, b.first, b.second);
  binds_.clear();
  if (reserved_) driver().cuMemAddressFree(reserved_, size_);
  reserved_ = 0;
  if (handle_) driver().cuMemRelease(handle_);
  handle_ = 0;
  size_ = 0;
  granularity_ = 0;
}

}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API

extern "C" void* tmashmem_mc_ptr(const void* ptr) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (!rt.initialized) {
    set_error(TMASHMEM_ERROR_NOT_INITIALIZED, "tmashmem_mc_ptr called before tmashmem_init");
    return nullptr;
  }
  size_t offset = 0;
  if (!rt.multicast.active() || !rt.heap.offset_of(ptr, &offset) ||
      offset >= rt.heap.backed_bytes())
    return nullptr;
  return reinterpret_cast<void*>(rt.multicast.base() + offset);
}

#pragma GCC visibility pop
