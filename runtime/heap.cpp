#include "runtime/heap.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "bootstrap/bootstrap.h"
#include "runtime/agreement.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/multicast.h"

namespace tmashmem {
namespace {

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

CUmemAllocationProp allocation_prop(const HeapSetup& setup) {
  return device_allocation_prop(setup.device_ordinal, setup.handle_type);
}

}  // namespace

CUmemAllocationProp device_allocation_prop(int device_ordinal,
                                           CUmemAllocationHandleType handle_type) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_ordinal;
  prop.requestedHandleTypes = handle_type;
  return prop;
}

tmashmem_status_t SymmetricHeap::create(const HeapSetup& setup) {
  destroy();
  setup_ = setup;
  CUmemAllocationProp prop = allocation_prop(setup_);
  TMASHMEM_CU(
      cuMemGetAllocationGranularity(&granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  if (granularity_ == 0) granularity_ = size_t(2) << 20;
  const size_t limit = ~size_t(0) - granularity_;
  if (setup_.heap_max == 0 || setup_.heap_max > limit || setup_.chunk_size == 0 ||
      setup_.chunk_size > limit)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "TMASHMEM_HEAP_MAX=%zu / TMASHMEM_CHUNK_SIZE=%zu: each must be between 1 and "
                     "%zu bytes",
                     setup_.heap_max, setup_.chunk_size, limit);
  max_bytes_ = round_up(setup_.heap_max, granularity_);
  chunk_bytes_ = round_up(setup_.chunk_size, granularity_);
  if (chunk_bytes_ > max_bytes_) chunk_bytes_ = max_bytes_;
  stride_ = max_bytes_;
  size_t slots = setup_.reachable.size();
  if (slots == 0 || setup_.my_slot < 0 || static_cast<size_t>(setup_.my_slot) >= slots)
    return set_error(TMASHMEM_ERROR_INTERNAL, "heap created with slot %d of %zu", setup_.my_slot,
                     slots);
  if (max_bytes_ > (~size_t(0)) / slots)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "TMASHMEM_HEAP_MAX=%zu times %zu local PEs overflows the address space: lower "
                     "TMASHMEM_HEAP_MAX",
                     max_bytes_, slots);
  reserved_ = max_bytes_ * slots;
  CUresult r = driver().cuMemAddressReserve(&base_, reserved_, granularity_, 0, 0);
  if (r != CUDA_SUCCESS) {
    base_ = 0;
    cuda_error(r, "cuMemAddressReserve", __FILE__, __LINE__);
    return set_error(TMASHMEM_ERROR_OUT_OF_MEMORY,
                     "could not reserve %zu bytes of GPU virtual address space for %zu local PEs x "
                     "TMASHMEM_HEAP_MAX=%zu: lower TMASHMEM_HEAP_MAX (%s)",
                     reserved_, slots, max_bytes_, last_error().c_str());
  }
  return TMASHMEM_SUCCESS;
}

void SymmetricHeap::destroy() {
  if (multicast_) multicast_->destroy();  // unbinds before the memory is released
  multicast_ = nullptr;
  for (auto it = chunks_.rbegin(); it != chunks_.rend(); ++it) release_chunk(&*it);
  chunks_.clear();
  if (base_) driver().cuMemAddressFree(base_, reserved_);
  base_ = 0;
  reserved_ = 0;
  backed_ = 0;
  growth_sequence_ = 0;
}

bool SymmetricHeap::offset_of(const void* ptr, size_t* offset) const {
  auto address = reinterpret_cast<uintptr_t>(ptr);
  CUdeviceptr mine = my_base();
  if (!base_ || address < mine || address - mine >= max_bytes_) return false;
  *offset = address - mine;
  return true;
}

bool SymmetricHeap::slot_reachable(int slot) const {
  return slot >= 0 && static_cast<size_t>(slot) < setup_.reachable.size() &&
         setup_.reachable[static_cast<size_t>(slot)];
}

void* SymmetricHeap::translate(const void* ptr, int pe) const {
  size_t offset = 0;
  if (!offset_of(ptr, &offset) || offset >= backed_) return nullptr;
  int slot = pe - setup_.first_local_pe;
  if (!slot_reachable(slot)) return nullptr;
  return reinterpret_cast<void*>(slot_base(slot) + offset);
}

tmashmem_status_t SymmetricHeap::agree(tmashmem_status_t mine, const char* what) {
  return tmashmem::agree(*setup_.bootstrap, mine, "heap growth (nothing was kept)", what);
}

tmashmem_status_t SymmetricHeap::grow(size_t bytes) {
  if (bytes <= backed_) return TMASHMEM_SUCCESS;
  if (bytes > max_bytes_)
    return set_error(TMASHMEM_ERROR_OUT_OF_MEMORY,
                     "the symmetric heap needs %zu bytes but TMASHMEM_HEAP_MAX is %zu: raise "
                     "TMASHMEM_HEAP_MAX",
                     bytes, max_bytes_);
  size_t target = round_up(bytes - backed_, chunk_bytes_) + backed_;
  if (target > max_bytes_) target = max_bytes_;
  Chunk chunk;
  chunk.offset = backed_;
  chunk.bytes = target - backed_;
  chunk.slots.resize(setup_.reachable.size());
  uint32_t sequence = ++growth_sequence_;

  tmashmem_status_t st = agree(create_own(&chunk), "creating device memory");
  if (st == TMASHMEM_SUCCESS) {
    st = setup_.handle_type == CU_MEM_HANDLE_TYPE_FABRIC ? share_fabric(&chunk)
                                                         : share_posix_fd(&chunk, sequence);
    st = agree(st, "sharing the new memory with the node's PEs");
  }
  if (st == TMASHMEM_SUCCESS && multicast_)
    st = agree(multicast_->bind(chunk.slots[static_cast<size_t>(setup_.my_slot)].handle,
                                chunk.offset, chunk.bytes),
               "binding the new memory to the multicast object");
  if (st != TMASHMEM_SUCCESS) {
    std::string message = last_error();
    if (multicast_) multicast_->unbind(chunk.offset);
    release_chunk(&chunk);
    return restore_error(st, message);
  }
  if (setup_.debug >= 2)
    std::fprintf(stderr, "[tmashmem rank %d] heap grew by %zu bytes to %zu (chunk %zu)\n",
                 setup_.bootstrap->rank(), chunk.bytes, target, chunks_.size());
  chunks_.push_back(std::move(chunk));
  backed_ = target;
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t SymmetricHeap::create_own(Chunk* chunk) {
  CUmemAllocationProp prop = allocation_prop(setup_);
  CUmemGenericAllocationHandle handle = 0;
  CUresult r = driver().cuMemCreate(&handle, chunk->bytes, &prop, 0);
  if (r != CUDA_SUCCESS) {
    // cuda_error's status: OUT_OF_MEMORY for an out-of-memory result, else CUDA.
    const tmashmem_status_t st = cuda_error(r, "cuMemCreate", __FILE__, __LINE__);
    return set_error(st,
                     "could not create %zu bytes of device memory on CUDA device %d for the "
                     "symmetric heap (%s); free device memory or lower the allocation",
                     chunk->bytes, setup_.device_ordinal, last_error().c_str());
  }
  return map_slot(chunk, setup_.my_slot, handle);
}

tmashmem_status_t SymmetricHeap::map_slot(Chunk* chunk, int slot,
                                          CUmemGenericAllocationHandle handle) {
  Mapping& m = chunk->slots[static_cast<size_t>(slot)];
  m.handle = handle;
  CUdeviceptr address = slot_base(slot) + chunk->offset;
  TMASHMEM_CU(cuMemMap(address, chunk->bytes, 0, handle, 0));
  m.address = address;
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof access);
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = setup_.device_ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  TMASHMEM_CU(cuMemSetAccess(address, chunk->bytes, &access, 1));
  return TMASHMEM_SUCCESS;
}

void SymmetricHeap::release_chunk(Chunk* chunk) {
  for (Mapping& m : chunk->slots) {
    if (m.address) driver().cuMemUnmap(m.address, chunk->bytes);
    if (m.handle) driver().cuMemRelease(m.handle);
    m = Mapping();
  }
}

tmashmem_status_t SymmetricHeap::share_posix_fd(Chunk* chunk, uint32_t sequence) {
  const int me = setup_.my_slot;
  bool any_peer = false;
  for (size_t s = 0; s < chunk->slots.size(); ++s)
    any_peer = any_peer || (static_cast<int>(s) != me && setup_.reachable[s]);
  if (!any_peer) return TMASHMEM_SUCCESS;  // nothing to export
  int fd = -1;
  TMASHMEM_CU(cuMemExportToShareableHandle(&fd, chunk->slots[static_cast<size_t>(me)].handle,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  FdMessage message;
  std::memset(&message, 0, sizeof message);
  message.job_id = setup_.job_id;
  message.sequence = sequence;
  message.from_pe = setup_.first_local_pe + me;
  message.bytes = chunk->bytes;
  std::vector<int> targets;  // local slots that get (and send) this chunk
  for (size_t s = 0; s < chunk->slots.size(); ++s)
    if (static_cast<int>(s) != me && setup_.reachable[s]) targets.push_back(static_cast<int>(s));
  std::vector<bool> received(chunk->slots.size(), false);
  size_t pending = targets.size();

  // Imports and maps one peer's chunk.
  auto accept = [&](const FdMessage& in, int peer_fd) -> tmashmem_status_t {
    int slot = in.from_pe - setup_.first_local_pe;
    if (in.sequence < sequence) {  // left over from a growth step that failed elsewhere
      ::close(peer_fd);
      return TMASHMEM_SUCCESS;
    }
    if (in.sequence != sequence || !slot_reachable(slot) || received[static_cast<size_t>(slot)] ||
        in.bytes != chunk->bytes) {
      ::close(peer_fd);
      return set_error(TMASHMEM_ERROR_INTERNAL,
                       "unexpected heap handle from PE %d (step %u, %llu bytes; expected step %u, "
                       "%zu bytes)",
                       in.from_pe, in.sequence, static_cast<unsigned long long>(in.bytes), sequence,
                       chunk->bytes);
    }
    CUmemGenericAllocationHandle handle = 0;
    CUresult r = driver().cuMemImportFromShareableHandle(
        &handle, reinterpret_cast<void*>(static_cast<uintptr_t>(peer_fd)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ::close(peer_fd);
    if (r != CUDA_SUCCESS)
      return cuda_error(r, "cuMemImportFromShareableHandle(posix fd)", __FILE__, __LINE__);
    received[static_cast<size_t>(slot)] = true;
    --pending;
    return map_slot(chunk, slot, handle);
  };
  auto missing = [&]() {
    std::string list;
    for (int slot : targets)
      if (!received[static_cast<size_t>(slot)])
        list += (list.empty() ? "" : ",") + std::to_string(setup_.first_local_pe + slot);
    return list;
  };

  // Every PE sends to every peer, then receives. A datagram queue holds only a few
  // messages (net.unix.max_dgram_qlen), so while a peer's queue is full this PE
  // drains its own: with everyone doing that, nobody waits on a full queue forever.
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(setup_.timeout_ms);
  for (size_t next = 0; st == TMASHMEM_SUCCESS && next < targets.size();) {
    const int to = setup_.first_local_pe + targets[next];
    bool sent = false;
    st = setup_.channel->try_send(to, message, fd, &sent);
    if (st != TMASHMEM_SUCCESS) break;
    if (sent) {
      ++next;
      continue;
    }
    FdMessage in;
    int peer_fd = -1;
    bool got = false;
    st = setup_.channel->try_receive(&in, &peer_fd, &got);
    if (st == TMASHMEM_SUCCESS && got) st = accept(in, peer_fd);
    if (st == TMASHMEM_SUCCESS && !got) {
      if (std::chrono::steady_clock::now() > deadline)
        st = set_error(TMASHMEM_ERROR_TIMEOUT,
                       "sending a heap handle to PE %d timed out after %d ms: its socket queue "
                       "stayed full (is PE %d alive?)",
                       to, setup_.timeout_ms, to);
      else
        usleep(100);
    }
  }
  ::close(fd);
  TMASHMEM_TRY(st);
  while (pending > 0) {
    FdMessage in;
    int peer_fd = -1;
    TMASHMEM_TRY(setup_.channel->receive(&in, &peer_fd, setup_.timeout_ms, missing()));
    TMASHMEM_TRY(accept(in, peer_fd));
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t SymmetricHeap::share_fabric(Chunk* chunk) {
  Bootstrap& bs = *setup_.bootstrap;
  CUmemFabricHandle mine;
  std::memset(&mine, 0, sizeof mine);
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  CUresult r = driver().cuMemExportToShareableHandle(
      &mine, chunk->slots[static_cast<size_t>(setup_.my_slot)].handle, CU_MEM_HANDLE_TYPE_FABRIC,
      0);
  if (r != CUDA_SUCCESS)
    st = cuda_error(r, "cuMemExportToShareableHandle(fabric)", __FILE__, __LINE__);
  TMASHMEM_TRY(agree(st, "exporting a fabric handle"));
  std::vector<CUmemFabricHandle> all(static_cast<size_t>(bs.size()));
  TMASHMEM_TRY(bs.allgather(&mine, all.data(), sizeof mine));
  for (size_t s = 0; s < chunk->slots.size(); ++s) {
    if (static_cast<int>(s) == setup_.my_slot || !setup_.reachable[s]) continue;
    size_t pe = static_cast<size_t>(setup_.first_local_pe) + s;
    CUmemGenericAllocationHandle handle = 0;
    TMASHMEM_CU(cuMemImportFromShareableHandle(&handle, &all[pe], CU_MEM_HANDLE_TYPE_FABRIC));
    TMASHMEM_TRY(map_slot(chunk, static_cast<int>(s), handle));
  }
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
