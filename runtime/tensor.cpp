// Symmetric tensors: descriptor checks, the backing store, one CUtensorMap per reachable
// local PE in a device table (plus one on the tensor's multicast address when the heap has
// a multicast object), and the POD handle kernels take (docs/design.md, decisions 6 and 7).
//
// Collective calls agree on every step: a descriptor that fails validation, differs between
// PEs, or cannot be encoded on one PE is an error on every PE, never a hang.
#include "tmashmem/tensor.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/agreement.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/reachable.h"
#include "runtime/runtime.h"
#include "runtime/tensor_desc.h"

static_assert(sizeof(CUtensorMap) == TMASHMEM_TENSOR_MAP_BYTES,
              "the map table holds 128-byte CUtensorMaps");

struct tmashmem_tensor {
  uint64_t job_id = 0;  // the tmashmem_init generation the tensor belongs to
  bool owns_memory = false;
  tmashmem_tensor_desc_t desc{};
  tmashmem::TensorLayout layout;
  void* data = nullptr;
  uint64_t offset = 0;  // of data in the heap
  int my_pe = 0;
  int first_local_pe = 0;
  int n_local_pes = 0;
  uint64_t reachable = 0;      // bit s: maps[s] is valid
  bool has_multicast = false;  // maps[n_local_pes] is the map on the multicast address
  uint64_t peer_stride = 0;
  std::vector<CUtensorMap> maps;  // n_local_pes + 1: the last slot is for multicast (else zero)
  CUdeviceptr table = 0;
};

namespace tmashmem {
namespace {

std::set<tmashmem_tensor*>& live_tensors() {
  static std::set<tmashmem_tensor*> live;
  return live;
}

}  // namespace

void release_tensor_tables() {
  for (tmashmem_tensor* t : live_tensors()) {
    if (t->table) driver().cuMemFree(t->table);
    t->table = 0;
  }
}

namespace {

// COLLECTIVE: every PE learns whether any PE failed `step`, with that PE's message.
tmashmem_status_t agree(const char* call, const char* step, tmashmem_status_t mine) {
  return tmashmem::agree(*runtime().bootstrap, mine, call, step);
}

// The descriptor as named values, in a fixed order, for the symmetry check.
std::vector<NamedArg> named_fields(const tmashmem_tensor_desc_t& d) {
  std::vector<NamedArg> f;
  f.emplace_back("desc.dtype", d.dtype);
  f.emplace_back("desc.rank", d.rank);
  for (int i = 0; i < TMASHMEM_TENSOR_MAX_RANK; ++i)
    f.emplace_back(format_string("desc.dims[%d]", i), d.dims[i]);
  for (int i = 0; i < TMASHMEM_TENSOR_MAX_RANK - 1; ++i)
    f.emplace_back(format_string("desc.byte_strides[%d]", i), d.byte_strides[i]);
  for (int i = 0; i < TMASHMEM_TENSOR_MAX_RANK; ++i)
    f.emplace_back(format_string("desc.box[%d]", i), d.box[i]);
  for (int i = 0; i < TMASHMEM_TENSOR_MAX_RANK; ++i)
    f.emplace_back(format_string("desc.element_strides[%d]", i), d.element_strides[i]);
  f.emplace_back("desc.interleave", d.interleave);
  f.emplace_back("desc.swizzle", d.swizzle);
  f.emplace_back("desc.l2_promotion", d.l2_promotion);
  f.emplace_back("desc.oob_fill", d.oob_fill);
  return f;
}

// Looks `t` up among the live tensors of this init generation.
tmashmem_status_t find_tensor(const char* call, tmashmem_tensor_t t) {
  Runtime& rt = runtime();
  TMASHMEM_TRY(require_initialized(call));
  if (!t || live_tensors().count(t) == 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s(%p): not a live tensor; pass a handle from tmashmem_tensor_create or "
                     "tmashmem_tensor_view that has not been destroyed",
                     call, static_cast<void*>(t));
  if (t->job_id != rt.job_id)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s(%p): the tensor was created before tmashmem_finalize and died with it; "
                     "create it again after tmashmem_init",
                     call, static_cast<void*>(t));
  return TMASHMEM_SUCCESS;
}

// Encodes the map of `address` (PE `pe`'s copy, or the multicast address when `pe` < 0) into
// `map`. Local.
tmashmem_status_t encode_map(const char* call, const TensorMapArgs& a, void* address, int pe,
                             CUtensorMap* map) {
  CUresult r = driver().cuTensorMapEncodeTiled(map, a.dtype, a.rank, address, a.dims, a.strides,
                                               a.box, a.element_strides, a.interleave, a.swizzle,
                                               a.l2_promotion, a.oob_fill);
  if (r == CUDA_SUCCESS) return TMASHMEM_SUCCESS;
  cuda_error(r, "cuTensorMapEncodeTiled", __FILE__, __LINE__);
  const std::string whose =
      pe < 0 ? std::string("the multicast address") : format_string("PE %d", pe);
  return set_error(TMASHMEM_ERROR_CUDA,
                   "%s: encoding the tensor map of %s at %p failed although the descriptor "
                   "passed tmashmem's checks (please report it; TMASHMEM_MULTICAST=off avoids "
                   "the multicast map): %s",
                   call, whose.c_str(), address, last_error().c_str());
}

// Encodes the maps and uploads the table. Local; the caller agrees on the outcome.
tmashmem_status_t build_maps(const char* call, tmashmem_tensor* t) {
  Runtime& rt = runtime();
  const TensorMapArgs a = tensor_map_args(t->desc);
  t->maps.assign(static_cast<size_t>(t->n_local_pes) + 1, CUtensorMap{});
  for (int slot = 0; slot < t->n_local_pes; ++slot) {
    if (!rt.reachable[static_cast<size_t>(slot)]) continue;  // stays all-zero
    int pe = t->first_local_pe + slot;
    void* address = rt.heap.translate(t->data, pe);
    if (!address)
      return set_error(
          TMASHMEM_ERROR_INTERNAL,
          "%s: PE %d is reachable but the heap has no address for it (heap offset %llu)", call, pe,
          static_cast<unsigned long long>(t->offset));
    TMASHMEM_TRY(encode_map(call, a, address, pe, &t->maps[static_cast<size_t>(slot)]));
    t->reachable |= uint64_t(1) << slot;
  }
  // The multicast map: mc_base + the tensor's heap offset (tmashmem_mc_ptr), when the heap
  // has a multicast object; every PE decided that alike at init (docs/multicast.md).
  if (rt.multicast.active()) {
    void* address = reinterpret_cast<void*>(rt.multicast.base() + t->offset);
    TMASHMEM_TRY(encode_map(call, a, address, -1, &t->maps[static_cast<size_t>(t->n_local_pes)]));
    t->has_multicast = true;
  }
  const size_t bytes = t->maps.size() * sizeof(CUtensorMap);
  TMASHMEM_CU(cuMemAlloc(&t->table, bytes));
  if (t->table % TMASHMEM_TENSOR_MAP_BYTES != 0)
    return set_error(TMASHMEM_ERROR_INTERNAL, "%s: cuMemAlloc returned %p, not 128-byte aligned",
                     call, reinterpret_cast<void*>(t->table));
  TMASHMEM_CU(cuMemcpyHtoD(t->table, t->maps.data(), bytes));
  return TMASHMEM_SUCCESS;
}

// COLLECTIVE. tensor_create (view == nullptr) and tensor_view.
tmashmem_status_t make_tensor(const char* call, bool is_view, void* view,
                              const tmashmem_tensor_desc_t* desc, tmashmem_tensor_t* out) {
  Runtime& rt = runtime();
  if (out) *out = nullptr;
  TMASHMEM_TRY(require_initialized(call));

  // 1. Local checks; every PE learns every verdict before anything is allocated.
  TensorLayout layout;
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  size_t offset = 0;
  if (!out)
    st = set_error(TMASHMEM_ERROR_INVALID_VALUE,
                   "%s: out is NULL: pass a tmashmem_tensor_t to fill", call);
  if (st == TMASHMEM_SUCCESS) st = validate_tensor_desc(call, desc, &layout);
  if (st == TMASHMEM_SUCCESS && is_view) {
    if (!view)
      st = set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: symmetric_ptr is NULL; pass memory from tmashmem_malloc", call);
    else if (!rt.heap.offset_of(view, &offset))
      st =
          set_error(TMASHMEM_ERROR_INVALID_VALUE,
                    "%s: symmetric_ptr %p is not in this PE's symmetric heap [%p, %p); pass memory "
                    "from tmashmem_malloc (or a tensor's data)",
                    call, view, reinterpret_cast<void*>(rt.heap.my_base()),
                    reinterpret_cast<void*>(rt.heap.my_base() + rt.heap.max_bytes()));
    else
      st = validate_tensor_placement(call, layout, reinterpret_cast<uint64_t>(view),
                                     rt.heap.my_base(), rt.heap.my_base() + rt.heap.backed_bytes(),
                                     "the heap's backed range");
  }
  TMASHMEM_TRY(agree(call, "checking its arguments", st));
  // Every PE's descriptor is valid: now they must all be the same one (and a view's
  // pointer at the same heap offset), checked field by field like any collective's arguments.
  std::vector<NamedArg> fields = named_fields(*desc);
  if (is_view) fields.emplace_back("the heap offset of symmetric_ptr", offset);
  TMASHMEM_TRY(check_symmetric(
      call, fields,
      is_view ? "every PE must pass the same descriptor and a pointer at the same heap offset"
              : "every PE must pass the same descriptor"));
  Bootstrap& bs = *rt.bootstrap;

  // 2. The backing store.
  auto t = std::unique_ptr<tmashmem_tensor>(new tmashmem_tensor);
  t->job_id = rt.job_id;
  t->desc = *desc;
  t->layout = layout;
  t->my_pe = bs.rank();
  t->first_local_pe = rt.first_local_pe;
  t->n_local_pes = rt.n_local_pes;
  t->peer_stride = rt.heap.stride();
  if (is_view) {
    t->data = view;
    t->offset = offset;
  } else {
    TMASHMEM_TRY(symmetric_alloc(call, static_cast<size_t>(layout.extent_bytes), kHeapAlignment,
                                 false, {}, &t->data));
    t->owns_memory = true;
    rt.heap.offset_of(t->data, &offset);
    t->offset = offset;
  }

  // 3. Maps and table, agreed; on any PE's failure every PE releases what it made.
  st = agree(call, "encoding the tensor maps", build_maps(call, t.get()));
  if (st != TMASHMEM_SUCCESS) {
    std::string message = last_error();
    if (t->table) driver().cuMemFree(t->table);
    if (t->owns_memory) symmetric_free(call, t->data);
    return restore_error(st, message);
  }
  live_tensors().insert(t.get());
  *out = t.release();
  return TMASHMEM_SUCCESS;
}

}  // namespace
}  // namespace tmashmem

using namespace tmashmem;

#pragma GCC visibility push(default)  // the C API (runtime/libtmashmem.map)
extern "C" {

tmashmem_status_t tmashmem_tensor_desc_init(tmashmem_tensor_desc_t* desc, tmashmem_dtype_t dtype,
                                            uint32_t rank, const uint64_t* dims,
                                            const uint32_t* box) {
  const char* call = "tmashmem_tensor_desc_init";
  if (!desc || !dims || !box)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: desc, dims and box must not be NULL (desc %p, "
                     "dims %p, box %p)",
                     call, static_cast<void*>(desc), static_cast<const void*>(dims),
                     static_cast<const void*>(box));
  const uint32_t elem = dtype_bytes(static_cast<uint32_t>(dtype));
  if (elem == 0)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: dtype = %d is not a tmashmem_dtype_t; use a TMASHMEM_DTYPE_* constant",
                     call, static_cast<int>(dtype));
  if (rank < 1 || rank > TMASHMEM_TENSOR_MAX_RANK)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: rank = %u is outside 1..5: TMA tensors have 1 to 5 dimensions", call,
                     rank);
  std::memset(desc, 0, sizeof *desc);
  desc->version = TMASHMEM_TENSOR_DESC_VERSION;
  desc->dtype = static_cast<uint32_t>(dtype);
  desc->rank = rank;
  unsigned __int128 stride = elem;
  for (uint32_t i = 0; i < rank; ++i) {
    desc->dims[i] = dims[i];
    desc->box[i] = box[i];
    desc->element_strides[i] = 1;
    stride *= dims[i];
    if (i + 1 < rank) {
      if (stride > static_cast<unsigned __int128>(~uint64_t(0)))
        return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                         "%s: dims[0..%u] multiply out to more than 2^64 bytes of %s; check dims",
                         call, i, dtype_name(static_cast<uint32_t>(dtype)));
      desc->byte_strides[i] = static_cast<uint64_t>(stride);
    }
  }
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t tmashmem_tensor_desc_check(const tmashmem_tensor_desc_t* desc,
                                             size_t* extent_bytes) {
  TensorLayout layout;
  TMASHMEM_TRY(validate_tensor_desc("tmashmem_tensor_desc_check", desc, &layout));
  if (extent_bytes) *extent_bytes = static_cast<size_t>(layout.extent_bytes);
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t tmashmem_tensor_create(const tmashmem_tensor_desc_t* desc,
                                         tmashmem_tensor_t* out) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  return make_tensor("tmashmem_tensor_create", false, nullptr, desc, out);
}

tmashmem_status_t tmashmem_tensor_view(void* symmetric_ptr, const tmashmem_tensor_desc_t* desc,
                                       tmashmem_tensor_t* out) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  return make_tensor("tmashmem_tensor_view", true, symmetric_ptr, desc, out);
}

tmashmem_status_t tmashmem_tensor_destroy(tmashmem_tensor_t tensor) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  const char* call = "tmashmem_tensor_destroy";
  TMASHMEM_TRY(require_initialized(call));
  tmashmem_status_t found = tensor ? find_tensor(call, tensor) : TMASHMEM_SUCCESS;
  std::string message = last_error();
  // The key every PE must agree on: NULL, an invalid handle, or the tensor's heap offset.
  constexpr uint64_t kNull = ~uint64_t(0) - 1, kInvalid = ~uint64_t(0);
  uint64_t key = !tensor ? kNull : found != TMASHMEM_SUCCESS ? kInvalid : tensor->offset;
  TMASHMEM_TRY(check_symmetric(call, {{"heap offset of the tensor", key}}));
  if (!tensor) return TMASHMEM_SUCCESS;
  if (found != TMASHMEM_SUCCESS) {
    if (live_tensors().count(tensor) && tensor->job_id != rt.job_id) {
      live_tensors().erase(tensor);  // a previous generation's: only the host part is left
      delete tensor;
    }
    return restore_error(found, message);
  }
  live_tensors().erase(tensor);
  tmashmem_status_t st = TMASHMEM_SUCCESS;
  CUresult r = driver().cuMemFree(tensor->table);
  if (r != CUDA_SUCCESS) st = cuda_error(r, "cuMemFree (tensor map table)", __FILE__, __LINE__);
  message = last_error();
  tmashmem_status_t freed =
      tensor->owns_memory ? symmetric_free(call, tensor->data) : TMASHMEM_SUCCESS;
  delete tensor;
  if (freed != TMASHMEM_SUCCESS) return freed;
  return st == TMASHMEM_SUCCESS ? st : restore_error(st, message);
}

void* tmashmem_tensor_data(tmashmem_tensor_t tensor) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  if (find_tensor("tmashmem_tensor_data", tensor) != TMASHMEM_SUCCESS) return nullptr;
  return tensor->data;
}

tmashmem_status_t tmashmem_tensor_get_map(tmashmem_tensor_t tensor, int pe, void* out128) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  const char* call = "tmashmem_tensor_get_map";
  TMASHMEM_TRY(find_tensor(call, tensor));
  if (!out128)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: out128 is NULL; pass 128 bytes (a CUtensorMap) to fill", call);
  int slot = pe - tensor->first_local_pe;
  if (pe < 0 || pe >= rt.bootstrap->size() || slot < 0 || slot >= tensor->n_local_pes)
    return set_error(
        TMASHMEM_ERROR_INVALID_VALUE,
        "%s: pe = %d is not a PE of this node (PEs %d..%d of %d): tensor maps exist only "
        "for load/store reachable PEs",
        call, pe, tensor->first_local_pe, tensor->first_local_pe + tensor->n_local_pes - 1,
        rt.bootstrap->size());
  if (!((tensor->reachable >> slot) & 1))
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: pe = %d is on this node but not load/store reachable from PE %d (no peer "
                     "access between their GPUs), so it has no tensor map",
                     call, pe, tensor->my_pe);
  std::memcpy(out128, &tensor->maps[static_cast<size_t>(slot)], sizeof(CUtensorMap));
  return TMASHMEM_SUCCESS;
}

tmashmem_status_t tmashmem_tensor_handle(tmashmem_tensor_t tensor, tmashmem_tensor_handle_t* out) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  const char* call = "tmashmem_tensor_handle";
  TMASHMEM_TRY(find_tensor(call, tensor));
  if (!out)
    return set_error(TMASHMEM_ERROR_INVALID_VALUE,
                     "%s: out is NULL; pass a tmashmem_tensor_handle_t", call);
  const tmashmem_tensor_desc_t& d = tensor->desc;
  std::memset(out, 0, sizeof *out);
  out->version = TMASHMEM_TENSOR_HANDLE_VERSION;
  out->dtype = d.dtype;
  out->rank = d.rank;
  out->elem_bytes = tensor->layout.elem_bytes;
  for (int i = 0; i < TMASHMEM_TENSOR_MAX_RANK; ++i) {
    out->box[i] = d.box[i];
    out->dims[i] = d.dims[i];
  }
  out->box_bytes = tensor->layout.box_bytes;
  out->smem_bytes = tensor->layout.smem_bytes;
  out->swizzle = d.swizzle;
  out->interleave = d.interleave;
  out->my_pe = tensor->my_pe;
  out->first_local_pe = tensor->first_local_pe;
  out->n_local_pes = tensor->n_local_pes;
  out->reachable = reachable_mask(runtime());
  out->has_multicast = tensor->has_multicast ? 1u : 0u;
  out->maps = static_cast<uint64_t>(tensor->table);
  out->data = reinterpret_cast<uint64_t>(tensor->data);
  out->peer_stride = tensor->peer_stride;
  return TMASHMEM_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
