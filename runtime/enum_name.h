// The name of a value of a C enumeration whose values run 0, 1, ..., N-1: one table
// in the enumeration's order instead of a switch with a case per value.
#pragma once

#include <cstddef>

namespace tmashmem {

template <size_t N>
const char* enum_name(const char* const (&names)[N], long value, const char* unknown) {
  return value >= 0 && static_cast<size_t>(value) < N ? names[value] : unknown;
}

}  // namespace tmashmem
