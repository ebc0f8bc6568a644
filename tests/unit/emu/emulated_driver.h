// A CPU emulation of the CUDA driver table (runtime/driver.h), so the whole host runtime
// runs in CI on machines without a GPU (docs/design.md, decision 8).
//
// What is real and what is pretend:
//  - "Device memory" from cuMemCreate is a memfd; cuMemMap mmaps it MAP_SHARED into a
//    reservation made by cuMemAddressReserve, so two mappings of one handle alias the same
//    bytes, and exported file descriptors really share memory between processes. The CPU
//    reads and writes it directly once cuMemSetAccess granted access (mprotect).
//  - cuMemAlloc memory is ordinary host memory. Devices, contexts, UUIDs, attributes are
//    bookkeeping. cuTensorMapEncodeTiled checks the documented TMA rules and writes a
//    recognisable, decodable encoding (layout below), not the hardware format.
//
// State is per process: each process that calls install() has its own devices, handles and
// reservations; processes share memory only through real fds (POSIX handles, or the
// emulated fabric handle, which names the exporter's memfd through /proc/<pid>/fd/<n>).
//
// Deliberate differences from libcuda, so tests see the contract rather than luck:
//  - cuDriverGetVersion, cuGetErrorName and cuGetErrorString work before cuInit (as in
//    libcuda: the runtime formats the error of a failed cuInit with them); every other
//    entry point returns CUDA_ERROR_NOT_INITIALIZED until cuInit succeeds.
//  - cuGetErrorName/String of an unknown code return CUDA_ERROR_INVALID_VALUE but still
//    store a printable string (libcuda stores NULL).
//  - Calls that need a context in libcuda (cuCtxGetDevice, cuCtxSynchronize, cuMemGetInfo,
//    cuMemAlloc, cuMemcpyHtoD/DtoH, cuMemsetD8) return CUDA_ERROR_INVALID_CONTEXT with no
//    current context, and CUDA_ERROR_CONTEXT_IS_DESTROYED once its primary context was
//    released to refcount 0. The VMM and device queries need none. cuMemAlloc memory is
//    filled with 0xa5 (device memory is not zeroed; VMM memory reads as zero here).
//  - cuMemcpyHtoD/DtoH and cuMemsetD8 check that the device range is cuMemAlloc memory or
//    mapped VMM memory with access granted (CUDA_ERROR_INVALID_VALUE otherwise), instead of
//    faulting later on the GPU.
//  - cuMemAddressFree of a reservation that still has mappings is CUDA_ERROR_INVALID_VALUE
//    (unmap first), so leaked mappings show up as errors.
//  - cuMemCreate asking for a handle type the device does not support (POSIX fd without
//    posix_fd_supported, FABRIC without fabric_supported, any Win32 type) fails with
//    CUDA_ERROR_NOT_SUPPORTED. With fabric_supported but !fabric_export_works, creation
//    succeeds and only the export fails (like a machine with no IMEX channel).
//  - The emulated device is sm_90: the Blackwell-only tensor-map data types (16U4/16U6)
//    and swizzles (128B_ATOM_*) are rejected with CUDA_ERROR_INVALID_VALUE.
//  - Device memory in use (cuMemGetInfo, the OOM budget) counts both cuMemCreate'd
//    allocations (until the handle is released AND unmapped everywhere, like CUDA) and
//    live cuMemAlloc buffers of that device. Imported handles use no budget here: their
//    memory belongs to the exporter.
//  - cuMemSetAccess for device d on memory created on device e != d fails with
//    CUDA_ERROR_INVALID_DEVICE if (d, e) is in Options::no_p2p. The creating device of an
//    imported fd is read back from the memfd's name, so this works across processes too.
//  - Stream memory operations: there are no streams, so the `stream` argument is ignored and
//    each operation happens during the call, in the calling thread. Both need a current
//    context (CUDA_ERROR_INVALID_CONTEXT otherwise), an 8-byte aligned address that is
//    cuMemAlloc memory or mapped VMM memory with access granted (read-write for the write,
//    read for the wait; CUDA_ERROR_INVALID_VALUE otherwise), and
//    Options::stream_mem_ops_64 (CUDA_ERROR_NOT_SUPPORTED otherwise; it is also the answer
//    to CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS).
//    cuStreamWriteValue64 is one seq_cst 64-bit atomic store (flags DEFAULT or
//    NO_MEMORY_BARRIER). cuStreamWaitValue64 evaluates its condition (GEQ as CUDA's cyclic
//    (int64_t)(*addr - value) >= 0, EQ, AND, NOR) on seq_cst 64-bit atomic loads and, until
//    it holds, polls about every 50 us without holding the emulator's lock (another thread
//    or process can write meanwhile). libcuda would hold the stream forever; here the wait
//    gives up after Options::stream_wait_timeout_ms and returns CUDA_ERROR_TIMEOUT, so a
//    test with a missing write fails instead of hanging. The address is re-checked on every
//    poll, so unmapping it during a wait is CUDA_ERROR_INVALID_VALUE, not a fault.
//    CU_STREAM_WAIT_VALUE_FLUSH is CUDA_ERROR_NOT_SUPPORTED (the emulated device reports
//    CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES = 0).
//  - Multicast objects (cuMulticast*, docs/multicast.md). An object is a small memfd holding
//    the team's shared state (size, numDevices, the devices added so far), so the POSIX fd
//    and the emulated fabric handle export and import it between processes like memory.
//    The driver's rules are checked: sizes, offsets and map addresses are multiples of
//    Options::multicast_granularity (CU_MULTICAST_GRANULARITY_MINIMUM); cuMemMap of a
//    multicast handle needs offset 0; a device is added once and at most numDevices are;
//    the bound memory must be shareable, created on an added device, and not overlap
//    another bind of that device; cuMulticastUnbind must name exactly one earlier bind's
//    device, offset and size (CUDA_ERROR_INVALID_VALUE otherwise). Differences: a bind
//    before every device was added is CUDA_ERROR_ILLEGAL_STATE (libcuda blocks until the
//    last cuMulticastAddDevice, so a missing one would hang instead of failing), and
//    nothing multicasts: the multicast mapping of a process shows, at each bound range,
//    the memory THIS process bound there (a CPU store through it lands in this process's
//    own memory only), and reads as unmapped (PROT_NONE) where this process bound
//    nothing. What the tests check is the call order, the arguments, and that every
//    failure unwinds. Memory stays alive while bound, a multicast object while mapped or
//    bound (as with the driver's reference counts), so a wrong teardown order shows up in
//    counts() and multicast_log() rather than as a fault.
//  - Every cuMulticast* call counts in Counts::multicast_calls, as does every other call
//    given a multicast handle (export, import, map, access, unmap, release), whether it
//    succeeds or not, before cuInit too: the multicast gate's tests assert it stays 0.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tmashmem {
namespace emu {

// Where an injected multicast failure happens (Options::multicast_fail).
enum class MulticastStep {
  None,
  Granularity,  // cuMulticastGetGranularity
  Create,       // cuMulticastCreate
  Export,       // cuMemExportToShareableHandle of a multicast handle
  Import,       // cuMemImportFromShareableHandle of a multicast handle
  AddDevice,    // cuMulticastAddDevice
  Map,          // cuMemMap of a multicast handle
  SetAccess,    // cuMemSetAccess of a multicast mapping
  Bind,         // cuMulticastBindMem
};

// The devices this process sees. install() throws std::invalid_argument for options it
// cannot emulate (device_count outside 0..kMaxDevices, granularity not a power of two
// multiple of the page size, a negative stream_wait_timeout_ms).
struct Options {
  int device_count = 1;  // 0: cuInit fails with CUDA_ERROR_NO_DEVICE
  bool vmm_supported = true;
  bool posix_fd_supported = true;
  bool fabric_supported = false;     // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
  bool fabric_export_works = false;  // if false, exporting CU_MEM_HANDLE_TYPE_FABRIC fails
                                     // with CUDA_ERROR_NOT_SUPPORTED (no IMEX)
  bool multicast_supported = false;
  std::vector<std::pair<int, int>> no_p2p;       // pairs (either order): cuDeviceCanAccessPeer 0
  size_t device_memory_bytes = size_t(8) << 30;  // per device, per process
  size_t granularity = size_t(2) << 20;
  int sm_count = 132;
  const char* device_name = "tmashmem emulated H200";
  bool init_fails = false;            // cuInit returns CUDA_ERROR_NO_DEVICE
  bool stream_mem_ops_64 = true;      // CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS
  int stream_wait_timeout_ms = 2000;  // bound on one cuStreamWaitValue64 (>= 0)
  // Multicast. multicast_supported (above) is CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED and
  // what cuMulticastCreate needs; without multicast_entries the table has no cuMulticast*
  // entry points at all (a pre-12.1 driver).
  bool multicast_entries = true;
  size_t multicast_granularity = size_t(2) << 20;              // MINIMUM: power of two * page
  size_t multicast_recommended_granularity = size_t(2) << 20;  // RECOMMENDED: multiple of it
  MulticastStep multicast_fail = MulticastStep::None;  // that step fails with
  int multicast_fail_call = 1;  // CUDA_ERROR_NOT_PERMITTED on its Nth call here (1 = first)
  // N > 0: the process's Nth cuMemCreate of this install raises SIGKILL (the fault tests'
  // PE that dies inside a heap growth step); 0: never.
  int kill_at_mem_create = 0;
};

constexpr int kMaxDevices = 64;

// Environment overrides applied by install() on top of the Options passed in, so that
// tests under mpiexec can differ per process (e.g. `-x TMASHMEM_EMU_DEVICES=2`):
//   TMASHMEM_EMU_DEVICES=N   device_count = N (0..kMaxDevices; anything else throws)
constexpr const char* kEnvDevices = "TMASHMEM_EMU_DEVICES";
//   TMASHMEM_EMU_MULTICAST_FAIL=STEP[:N]  multicast_fail = STEP (granularity, create, export,
//                            import, add_device, map, set_access, bind), multicast_fail_call = N
constexpr const char* kEnvMulticastFail = "TMASHMEM_EMU_MULTICAST_FAIL";

// Builds the table with a fresh emulator state and installs it with
// tmashmem::install_driver(). A previous emulator's live objects stay mapped and open
// (pointers into them keep working) but are forgotten: handles from it are invalid in the
// new one, and counts() reports the new state only. Not thread-safe (like install_driver).
void install(const Options& options = Options());

// install_driver(nullptr). Frees nothing that is still live, so that memory a test leaked
// stays readable and counts() still reports the leak after uninstall.
void uninstall();

// A stream of `device` that cuStreamGetCtx knows (the emulator runs nothing asynchronously,
// so streams are only names); destroy_stream forgets it, and cuStreamGetCtx then returns
// CUDA_ERROR_INVALID_HANDLE for it, as for any handle the emulator never made.
CUstream create_stream(int device);
void destroy_stream(CUstream stream);
// Whether cuStreamIsCapturing reports `stream` (one of create_stream's) as capturing.
void set_capturing(CUstream stream, bool capturing);

// The origin string of the installed table (DriverApi::origin).
constexpr const char* kOrigin = "tmashmem-emu";

// Live objects of the most recently installed emulator, right now, in this process.
struct Counts {
  long allocations;      // handles from cuMemCreate / import not yet cuMemRelease'd
  long mappings;         // cuMemMap ranges not yet unmapped
  long reservations;     // cuMemAddressReserve ranges not yet freed
  long device_buffers;   // cuMemAlloc buffers not yet freed
  long open_memfds;      // memfds the emulator holds (released handles that are still mapped
                         // keep theirs); exported fds belong to the caller and are not counted
  size_t created_bytes;  // bytes of cuMemCreate'd allocations still alive (not imported ones)
  long multicast_calls;     // cuMulticast* calls and calls given a multicast handle (header)
  long multicast_objects;   // multicast objects alive here (handle held, mapped or bound)
  long multicast_binds;     // cuMulticastBindMem ranges not yet unbound
  long multicast_mappings;  // cuMemMap ranges of multicast handles not yet unmapped
};
Counts counts();

// This process's multicast events since install(), in order: every successful call that
// counts in multicast_calls, one line each ("cuMulticastBindMem offset=0 size=2097152",
// "cuMemUnmap(multicast)", "cuMemAddressFree(multicast window)", ...), plus
// "cuMemRelease(bound memory)" when memory is released while still bound.
std::vector<std::string> multicast_log();

// ---- Emulated fabric handle (CUmemFabricHandle, 64 bytes) ----
// Names the exporter's memfd: the importer opens /proc/<pid>/fd/<fd>, which works between
// processes of one user on one machine, and checks inode and size so that a stale handle
// (exporter gone, fd number reused) fails with CUDA_ERROR_INVALID_VALUE instead of mapping
// the wrong file.
constexpr uint64_t kFabricMagic = 0x46424d45484d5454ull;  // "TTMHEMBF" little-endian
struct FabricHandleLayout {
  uint64_t magic;
  int32_t pid;
  int32_t fd;
  uint64_t inode;
  uint64_t bytes;
  int32_t device;  // creating device ordinal in the exporter
  uint8_t reserved[28];
};
static_assert(sizeof(FabricHandleLayout) == sizeof(CUmemFabricHandle),
              "the emulated fabric handle must fill CUmemFabricHandle exactly");

// ---- Emulated CUtensorMap (128 bytes = 16 uint64 words) ----
//   word 0       kTensorMapMagic
//   word 1       bits 0-7 dtype, 8-15 rank, 16-23 interleave, 24-31 swizzle,
//                32-39 l2 promotion, 40-47 oob fill
//   word 2       global address
//   words 3-7    globalDim[0..4]           (0 beyond rank)
//   words 8-11   globalStrides[0..3] bytes (0 beyond rank - 1)
//   word 12      boxDim[0..3], 16 bits each
//   word 13      bits 0-15 boxDim[4]; bits 16+8i..23+8i elementStrides[i], i = 0..4
//   words 14-15  0
// decode_tensor_map() reads it back; tests compare against what they encoded.
constexpr uint64_t kTensorMapMagic = 0x554d455f50414d54ull;  // "TMAP_EMU" little-endian
struct TensorMapFields {
  CUtensorMapDataType dtype;
  uint32_t rank;
  uint64_t address;
  uint64_t dims[5];
  uint64_t strides[4];
  uint32_t box[5];
  uint32_t element_strides[5];
  CUtensorMapInterleave interleave;
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2_promotion;
  CUtensorMapFloatOOBfill oob_fill;
};
// False if `map` was not written by the emulator's cuTensorMapEncodeTiled.
bool decode_tensor_map(const CUtensorMap& map, TensorMapFields* out);

// Size in bytes of one element of an sm_90 tensor-map data type; 0 for others.
size_t tensor_element_bytes(CUtensorMapDataType dtype);

}  // namespace emu
}  // namespace tmashmem
