// The hardware's async groups: <NAME>_commit() closes the operations this thread (bulk
// copies) or warpgroup (wgmma) issued since the last commit into one group, and
// <NAME>_wait<N>() returns once at most N of its groups are pending. The families differ
// only in their PTX prefix and qualifiers, so one macro spells both functions for each.
#pragma once

// NAME##_commit() and NAME##_wait<N>() (0 <= N <= MAX): PTX `PREFIX.commit_group QUAL;`
// and `PREFIX.wait_group QUAL N;`.
#define TMASHMEM_ASYNC_GROUP(NAME, PREFIX, QUAL, MAX)                   \
  __device__ __forceinline__ void NAME##_commit() {                     \
    asm volatile(PREFIX ".commit_group" QUAL ";" ::: "memory");         \
  }                                                                     \
  template <int N>                                                      \
  __device__ __forceinline__ void NAME##_wait() {                       \
    static_assert(N >= 0 && N <= MAX, #NAME "_wait<N>: N is 0.." #MAX); \
    asm volatile(PREFIX ".wait_group" QUAL " %0;" ::"n"(N) : "memory"); \
  }
