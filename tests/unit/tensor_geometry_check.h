// Checks that a tensor map's geometry (from the emulator's decoder or from
// tensor_map_args) is the descriptor's, dimension by dimension.
#pragma once

#include <cstdint>

#include "common/catch.h"
#include "tmashmem/tensor.h"

namespace tmashmem_test {

template <typename Map>
void check_geometry(const Map& m, const tmashmem_tensor_desc_t& d) {
  for (uint32_t i = 0; i < 5; ++i) {
    CHECK(m.dims[i] == d.dims[i]);
    CHECK(m.box[i] == d.box[i]);
    CHECK(m.element_strides[i] == d.element_strides[i]);
    if (i < 4) CHECK(m.strides[i] == d.byte_strides[i]);
  }
}

}  // namespace tmashmem_test
