// Every TMASHMEM_* setting, once. The Config fields, their defaults, the environment
// parsing and its error messages (runtime/config.cpp), tmashmem-info's listing and the
// README's settings table all come from this table; test_config fails when README.md's
// table differs from it (`tmashmem-info --markdown` prints the table to paste there).
//
// Adding a setting is one row:
//   X(config_field, "TMASHMEM_NAME", Type, Scope, "default as the user writes it", "one-line help")
// where Type is a setting type of runtime/setting_types.h (Size, IntAtLeast0, IntAtLeast1,
// Switch, Text, or a choice such as HandleTypeChoice) and the default must parse as Type.
// Scope says whether PEs may differ: Scope::Job settings must have the same value on every
// PE (init all-gathers them and fails with TMASHMEM_ERROR_SYMMETRY naming the setting, the
// PEs and the values); Scope::Pe settings are each PE's own. TMASHMEM_BOOTSTRAP is Pe: PEs
// that disagree on it do not reach one another to compare (and auto may resolve to the
// same bootstrap as an explicit choice).
// Rows are listed (tmashmem-info, README) and parsed in this order. Help text must not
// contain '|' (it becomes a Markdown table cell).
#pragma once

#include "runtime/setting_types.h"

// clang-format off
#define TMASHMEM_SETTINGS(X)                                                                       \
  X(heap_max, "TMASHMEM_HEAP_MAX", Size, Scope::Job, "32G",                                        \
    "bytes of symmetric heap each PE may allocate (virtual reservation rounded up to the "         \
    "allocation granularity, 2M on current GPUs; memory is created on demand)")                    \
  X(chunk_size, "TMASHMEM_CHUNK_SIZE", Size, Scope::Job, "256M",                                   \
    "bytes of device memory created per heap growth step (rounded up to the allocation "           \
    "granularity)")                                                                                \
  X(handle_type, "TMASHMEM_HANDLE_TYPE", HandleTypeChoice, Scope::Job, "auto",                     \
    "how heap memory is shared between PEs: auto (fabric if exporting one works, else "            \
    "posix_fd), posix_fd, fabric")                                                                 \
  X(bootstrap, "TMASHMEM_BOOTSTRAP", BootstrapChoice, Scope::Pe, "auto",                           \
    "how PEs find each other: auto (MPI when launched by mpirun or MPI is initialised, else "      \
    "single), mpi, single")                                                                        \
  X(bootstrap_timeout_ms, "TMASHMEM_BOOTSTRAP_TIMEOUT_MS", IntAtLeast1, Scope::Job, "120000",      \
    "bound in milliseconds on every blocking bootstrap call; a missing PE becomes an error "       \
    "naming it")                                                                                   \
  X(multicast, "TMASHMEM_MULTICAST", MulticastChoice, Scope::Job, "auto",                          \
    "NVLink multicast objects: auto, on, off (not used by this release; reported by "              \
    "tmashmem-info)")                                                                              \
  X(stream_mem_ops, "TMASHMEM_STREAM_MEM_OPS", Switch, Scope::Pe, "on",                            \
    "on: on-stream signal SET and EQ/GE/GT waits use CUDA stream memory operations where the "     \
    "device supports them; off (or 0): always the library's one-thread kernels")                   \
  X(debug, "TMASHMEM_DEBUG", IntAtLeast0, Scope::Pe, "0",                                          \
    "0 quiet, 1 prints init decisions to stderr, 2 also traces heap growth")
// clang-format on
