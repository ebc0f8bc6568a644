// The hardware layer's tensor copies (PTX cp.async.bulk.tensor, cp.reduce.async.
// bulk.tensor, cp.async.bulk.prefetch.tensor), tile mode, one wrapper per
// instruction with the rank as a template parameter.
//
// A tensor instruction names its rank in the opcode (.1d .. .5d) and takes that many
// coordinates, so each wrapper spells its five forms once; with_rank() is the one
// place that turns a tensor's run-time rank into the template parameter. `map` is the
// generic address of a 128-byte CUtensorMap, `c` the coordinates, innermost first.
#pragma once

#include <stdint.h>

#include <type_traits>

namespace tmashmem {
namespace detail {

template <int R>
using Rank = std::integral_constant<int, R>;

// Calls f(Rank<n>{}) for n in 1..4, and f(Rank<5>{}) otherwise (the handle's rank
// is 1..5; debug builds check the coordinate count before this).
template <int R = 1, class F>
__device__ __forceinline__ void with_rank(int n, F&& f) {
  if constexpr (R == 5)
    f(Rank<5>{});
  else if (n == R)
    f(Rank<R>{});
  else
    with_rank<R + 1>(n, f);
}

// global (tensor) -> shared, completing the box's bytes on the mbarrier `bar`.
template <int R>
__device__ __forceinline__ void tensor_load(uint32_t dst, uint64_t map, uint32_t bar,
                                            const int32_t* c) {
  if constexpr (R == 1)
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3}], [%2];" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c[0])
        : "memory");
  else if constexpr (R == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c[0]), "r"(c[1])
        : "memory");
  else if constexpr (R == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2])
        : "memory");
  else if constexpr (R == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
        : "memory");
}

// The same, delivered to every CTA of the cluster in `cta_mask` at the same offsets.
template <int R>
__device__ __forceinline__ void tensor_load_multicast(uint32_t dst, uint64_t map, uint32_t bar,
                                                      uint16_t cta_mask, const int32_t* c) {
  if constexpr (R == 1)
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%4}], [%2], %3;" ::"r"(dst),
        "l"(map), "r"(bar), "h"(cta_mask), "r"(c[0])
        : "memory");
  else if constexpr (R == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(dst),
        "l"(map), "r"(bar), "h"(cta_mask), "r"(c[0]), "r"(c[1])
        : "memory");
  else if constexpr (R == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(dst),
        "l"(map), "r"(bar), "h"(cta_mask), "r"(c[0]), "r"(c[1]), "r"(c[2])
        : "memory");
  else if constexpr (R == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;" ::"r"(dst),
        "l"(map), "r"(bar), "h"(cta_mask), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;" ::"r"(dst),
        "l"(map), "r"(bar), "h"(cta_mask), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
        : "memory");
}

// A hint to bring the box into L2; no completion.
template <int R>
__device__ __forceinline__ void tensor_prefetch(uint64_t map, const int32_t* c) {
  if constexpr (R == 1)
    asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global [%0, {%1}];" ::"l"(map), "r"(c[0])
                 : "memory");
  else if constexpr (R == 2)
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global [%0, {%1, %2}];" ::"l"(map), "r"(c[0]),
                 "r"(c[1])
                 : "memory");
  else if constexpr (R == 3)
    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global [%0, {%1, %2, %3}];" ::"l"(map),
                 "r"(c[0]), "r"(c[1]), "r"(c[2])
                 : "memory");
  else if constexpr (R == 4)
    asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global [%0, {%1, %2, %3, %4}];" ::"l"(map),
                 "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                 : "memory");
  else
    asm volatile(
        "cp.async.bulk.prefetch.tensor.5d.L2.global [%0, {%1, %2, %3, %4, %5}];" ::"l"(map),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
        : "memory");
}

// shared -> global (tensor), in the current bulk async-group.
template <int R>
__device__ __forceinline__ void tensor_store(uint64_t map, uint32_t src, const int32_t* c) {
  if constexpr (R == 1)
    asm volatile(
        "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(map),
        "r"(src), "r"(c[0])
        : "memory");
  else if constexpr (R == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
        "r"(src), "r"(c[0]), "r"(c[1])
        : "memory");
  else if constexpr (R == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
            map),
        "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2])
        : "memory");
  else if constexpr (R == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(
            map),
        "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], "
        "[%1];" ::"l"(map),
        "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
        : "memory");
}

// X(op, mnemonic) for every element-wise operation of the tensor reduce,
// global[i] = op(global[i], shared[i]): the one map from TensorReduceOp to its PTX mnemonic.
// clang-format off
#define TMASHMEM_TENSOR_REDUCE_OPS(X) \
  X(add, "add") X(min, "min") X(max, "max") X(inc, "inc") X(dec, "dec") \
  X(bit_and, "and") X(bit_or, "or") X(bit_xor, "xor")
// clang-format on

#define TMASHMEM_TENSOR_REDUCE_ENUMERATOR(OP, MNEMONIC) OP,
enum class TensorReduceOp { TMASHMEM_TENSOR_REDUCE_OPS(TMASHMEM_TENSOR_REDUCE_ENUMERATOR) };
#undef TMASHMEM_TENSOR_REDUCE_ENUMERATOR

// The reduce's opcode differs per operation as well as per rank, and inline PTX takes
// only literal text: this macro spells the five rank forms once, for one mnemonic.
#define TMASHMEM_TENSOR_REDUCE_FORMS(OP)                                          \
  if constexpr (R == 1)                                                           \
    asm volatile("cp.reduce.async.bulk.tensor.1d.global.shared::cta." OP          \
                 ".tile.bulk_group [%0, {%2}], [%1];" ::"l"(map),                 \
                 "r"(src), "r"(c[0])                                              \
                 : "memory");                                                     \
  else if constexpr (R == 2)                                                      \
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta." OP          \
                 ".tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),             \
                 "r"(src), "r"(c[0]), "r"(c[1])                                   \
                 : "memory");                                                     \
  else if constexpr (R == 3)                                                      \
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta." OP          \
                 ".tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map),         \
                 "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2])                        \
                 : "memory");                                                     \
  else if constexpr (R == 4)                                                      \
    asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta." OP          \
                 ".tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(map),     \
                 "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])             \
                 : "memory");                                                     \
  else                                                                            \
    asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta." OP          \
                 ".tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];" ::"l"(map), \
                 "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])  \
                 : "memory");

// shared (op) global -> global (tensor), element-wise atomic, in the current bulk
// async-group.
#define TMASHMEM_TENSOR_REDUCE_CASE(OP, MNEMONIC) \
  if constexpr (Op == TensorReduceOp::OP) {       \
    TMASHMEM_TENSOR_REDUCE_FORMS(MNEMONIC)        \
  } else
template <TensorReduceOp Op, int R>
__device__ __forceinline__ void tensor_reduce(uint64_t map, uint32_t src, const int32_t* c) {
  TMASHMEM_TENSOR_REDUCE_OPS(TMASHMEM_TENSOR_REDUCE_CASE) {}
}
#undef TMASHMEM_TENSOR_REDUCE_CASE

#undef TMASHMEM_TENSOR_REDUCE_FORMS
#undef TMASHMEM_TENSOR_REDUCE_OPS

}  // namespace detail
}  // namespace tmashmem
