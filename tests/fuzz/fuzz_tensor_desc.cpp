// Fuzzes tensor-descriptor validation (runtime/tensor_desc.cpp), the rules a user's
// descriptor meets before any map is encoded. Contract checked on every input:
//  - the check returns SUCCESS or INVALID_VALUE, never anything else, never crashes;
//  - a failure leaves a message that names the call and the field;
//  - a success implies a layout the tile calls can rely on: 1 <= rank <= 5, every box
//    extent within its dimension's rules, box_bytes within an mbarrier's transaction
//    count, smem_bytes >= box_bytes, and the encode arguments mirror the descriptor.
#include <cstdint>
#include <cstring>

#include "fuzz_contract.h"
#include "runtime/tensor_desc.h"
#include "tmashmem/tensor.h"
#include "tmashmem/tmashmem.h"

using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tmashmem_tensor_desc_t desc;
  std::memset(&desc, 0, sizeof desc);
  std::memcpy(&desc, data, size < sizeof desc ? size : sizeof desc);
  // Half the inputs keep a valid version so that the fuzzer reaches the deeper rules.
  if (size > 0 && (data[0] & 1)) desc.version = TMASHMEM_TENSOR_DESC_VERSION;

  size_t extent = 0;
  const tmashmem_status_t public_status = tmashmem_tensor_desc_check(&desc, &extent);
  tmashmem::TensorLayout layout;
  const tmashmem_status_t status = tmashmem::validate_tensor_desc("fuzz", &desc, &layout);
  require(status == public_status, "public and internal checks agree");
  if (status != TMASHMEM_SUCCESS) {
    require(status == TMASHMEM_ERROR_INVALID_VALUE, "a bad descriptor is INVALID_VALUE");
    const char* message = tmashmem_last_error();
    require(message != nullptr && std::strstr(message, "fuzz") != nullptr,
            "the message names the call");
    require(std::strstr(message, "desc") != nullptr, "the message names the field");
    return 0;
  }
  require(desc.rank >= 1 && desc.rank <= TMASHMEM_TENSOR_MAX_RANK, "rank in 1..5");
  require(layout.elem_bytes > 0, "a known dtype");
  require(layout.box_bytes > 0 && layout.box_bytes <= tmashmem::kMaxBoxBytes,
          "box bytes within an mbarrier transaction count");
  require(layout.smem_bytes >= layout.box_bytes, "smem bytes hold the box");
  require(extent == layout.extent_bytes && extent % 16 == 0, "extent in whole 16-byte units");
  const tmashmem::TensorMapArgs args = tmashmem::tensor_map_args(desc);
  require(args.rank == desc.rank, "encode rank mirrors the descriptor");
  for (uint32_t i = 0; i < desc.rank; ++i) {
    require(args.dims[i] == desc.dims[i] && args.box[i] == desc.box[i], "encode dims and box");
    require(desc.box[i] >= 1 && desc.box[i] <= 256, "box extents 1..256");
    require(desc.element_strides[i] >= 1 && desc.element_strides[i] <= 8, "element strides 1..8");
  }
  for (uint32_t i = 0; i + 1 < desc.rank; ++i)
    require(desc.byte_strides[i] % 16 == 0 && desc.byte_strides[i] > 0,
            "strides positive multiples of 16");
  return 0;
}
