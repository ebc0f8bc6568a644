// Every TMASHMEM_* setting, once. The Config fields, their defaults, the environment
// parsing and its error messages (runtime/config.cpp), tmashmem-info's listing and the
// README's settings table all come from this table; test_config fails when README.md's
// table differs from it (`tmashmem-info --markdown` prints the table to paste there).
//
// Adding a setting is one row, one line (wider than the 100 columns of .clang-format, so
// that the table reads row by row like the README's):
//   X(config_field, "TMASHMEM_NAME", Type, Scope, "default as the user writes it", "one-line help")
// where Type is a setting type of runtime/setting_types.h (Size, IntAtLeast0, IntAtLeast1,
// Switch, Text, or a choice such as HandleTypeChoice) and the default must parse as Type.
// Scope says whether PEs may differ: Scope::Job settings must have the same value on every
// PE (init all-gathers them and fails with TMASHMEM_ERROR_SYMMETRY naming the setting, the
// PEs and the values); Scope::Pe settings are each PE's own. The bootstrap's own settings
// (TMASHMEM_BOOTSTRAP, TMASHMEM_BOOTSTRAP_UID*) are Pe: PEs that disagree on them do not
// reach one another to compare (the unique-id bootstrap checks the job size itself).
// Rows are listed (tmashmem-info, README) and parsed in this order. Help text must not
// contain '|' (it becomes a Markdown table cell).
#pragma once

#include "runtime/setting_types.h"

// clang-format off
#define TMASHMEM_SETTINGS(X) \
  X(heap_max, "TMASHMEM_HEAP_MAX", Size, Scope::Job, "32G", "bytes of symmetric heap each PE may allocate (virtual reservation rounded up to the allocation granularity, 2M on current GPUs; memory is created on demand)") \
  X(chunk_size, "TMASHMEM_CHUNK_SIZE", Size, Scope::Job, "256M", "bytes of device memory created per heap growth step (rounded up to the allocation granularity)") \
  X(handle_type, "TMASHMEM_HANDLE_TYPE", HandleTypeChoice, Scope::Job, "auto", "how heap memory is shared between PEs: auto (fabric if exporting one works, else posix_fd), posix_fd, fabric") \
  X(bootstrap, "TMASHMEM_BOOTSTRAP", BootstrapChoice, Scope::Pe, "auto", "how PEs find each other: auto (NCCL with an attr nccl_comm; MPI under an MPI launcher or once MPI is initialised; uid when TMASHMEM_BOOTSTRAP_UID is set; else single), mpi, uid, nccl, single") \
  X(bootstrap_uid, "TMASHMEM_BOOTSTRAP_UID", Text, Scope::Pe, "none", "unique id of the job (hex or base64 text, as tmashmem_uniqueid_to_string writes it): starts the unique-id bootstrap") \
  X(bootstrap_uid_rank, "TMASHMEM_BOOTSTRAP_UID_RANK", Text, Scope::Pe, "none", "this process's rank in [0, TMASHMEM_BOOTSTRAP_UID_SIZE) for the unique-id bootstrap") \
  X(bootstrap_uid_size, "TMASHMEM_BOOTSTRAP_UID_SIZE", Text, Scope::Pe, "none", "number of PEs of the unique-id bootstrap (the same on every PE)") \
  X(bootstrap_uid_ifname, "TMASHMEM_BOOTSTRAP_UID_IFNAME", Text, Scope::Pe, "auto", "interface whose address a new unique id names (default: the first that is up, skipping docker/veth/virbr/tun and link-local IPv6; loopback only when nothing else is up)") \
  X(bootstrap_uid_family, "TMASHMEM_BOOTSTRAP_UID_FAMILY", UidFamilyChoice, Scope::Pe, "auto", "address family of a new unique id's root: auto (IPv4 first), AF_INET, AF_INET6") \
  X(bootstrap_uid_addr, "TMASHMEM_BOOTSTRAP_UID_ADDR", Text, Scope::Pe, "auto", "explicit numeric address of this host for a new unique id's root (overrides the interface choice)") \
  X(fd_socket, "TMASHMEM_FD_SOCKET", FdSocketChoice, Scope::Job, "auto", "where the node's PEs pass heap fds: auto (abstract Unix sockets, or a private directory when the PEs are in different network namespaces), abstract, filesystem") \
  X(bootstrap_timeout_ms, "TMASHMEM_BOOTSTRAP_TIMEOUT_MS", IntAtLeast1, Scope::Job, "120000", "bound in milliseconds on every blocking bootstrap call; a missing PE becomes an error naming it") \
  X(multicast, "TMASHMEM_MULTICAST", MulticastChoice, Scope::Job, "auto", "NVLink multicast over the heap: auto (used when every condition allows; docs/multicast.md), on (its absence is an init error), off") \
  X(stream_mem_ops, "TMASHMEM_STREAM_MEM_OPS", Switch, Scope::Pe, "on", "on: on-stream signal SET and EQ/GE/GT waits use CUDA stream memory operations where the device supports them; off (or 0): always the library's one-thread kernels") \
  X(coll_staged, "TMASHMEM_COLL_STAGED", CollStagedChoice, Scope::Job, "gather", "which on-stream collectives of at most 256 KiB per peer run in one handshake through the staging region (docs/collectives.md): gather (all-gather and all-to-all: measured fastest, docs/runs.md), all (also reduce-scatter, one-shot all-reduce, broadcast), off") \
  X(coll_ll_bytes, "TMASHMEM_COLL_LL_BYTES", SizeOrZero, Scope::Job, "256K", "largest piece per peer that an on-stream collective (not alltoallv; all-reduce one-shot) sends in the low-latency form, data and flag in every 8-byte word, one pass and no handshake, where it fits (512K per peer at 2 PEs, 256K at 4: docs/collectives.md); its 4 MiB state is made at init with 2 PEs or more and a heap of 256 MiB or more; 0: never (and no state)") \
  X(coll_pdl, "TMASHMEM_COLL_PDL", Switch, Scope::Pe, "on", "on: an on-stream collective that fits on the GPU twice is launched with programmatic dependent launch (its launch overlapping the end of the kernel before it on the stream; not on the default or per-thread stream) and lets the next kernel be scheduled before it ends; off (or 0): plain stream order, and no collective lets a later kernel in early (docs/collectives.md, Launch: its known limits)") \
  X(debug, "TMASHMEM_DEBUG", IntAtLeast0, Scope::Pe, "0", "0 quiet, 1 prints init decisions to stderr, 2 also traces heap growth")
// clang-format on
