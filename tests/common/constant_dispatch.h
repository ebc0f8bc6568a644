// Turns a run-time choice into a template argument: one call site instead of a switch
// with a case per value that differs only in the constant it passes on.
#pragma once

#include <type_traits>
#include <utility>

namespace tmashmem_test {

namespace detail {
template <class R, class F, int... I>
R dispatch_constant(int v, R fallback, F& f, std::integer_sequence<int, I...>) {
  R result = fallback;
  (void)((v == I ? (result = f(std::integral_constant<int, I>{}), true) : false) || ...);
  return result;
}
}  // namespace detail

// f(std::integral_constant<int, v>{}) for v in [0, N); `fallback` for any other v.
template <int N, class R, class F>
R dispatch_constant(int v, R fallback, F&& f) {
  return detail::dispatch_constant(v, fallback, f, std::make_integer_sequence<int, N>{});
}

}  // namespace tmashmem_test
