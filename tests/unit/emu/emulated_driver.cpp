// CPU emulation of the driver table. Contracts and deliberate differences from libcuda are
// listed in emulated_driver.h; comments here explain how the emulation keeps them.
// One file past the usual size on purpose: every entry point works on the one State under
// the one lock below, and splitting it would put that state in a header for no reader.
#include "unit/emu/emulated_driver.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "runtime/driver.h"

namespace tmashmem {
namespace emu {
namespace {

// ---------------------------------------------------------------------------------------
// State

struct Allocation {
  int fd = -1;
  size_t bytes = 0;
  int device = -1;            // creating device; -1 if unknown
  bool created = false;       // by cuMemCreate here: uses this process's device budget
  unsigned handle_types = 0;  // CUmemAllocationHandleType bits it may be exported as
  bool handle_live = true;    // false once cuMemRelease'd; the memory lives on while mapped
  long map_count = 0;
  long bind_count = 0;  // multicast binds of it (they keep it alive too)
};

// The part of a multicast object every process holding it shares: it lives in the
// object's memfd, so cuMulticastAddDevice in one process is seen by binds in another.
constexpr uint64_t kMulticastMagic = 0x544d5443554d5454ull;
struct MulticastTeam {
  uint64_t magic;
  uint64_t size;
  uint32_t num_devices;
  uint32_t added;       // devices added so far (atomic)
  uint64_t added_mask;  // bit d: device ordinal d was added (atomic)
};

struct McBind {
  int device = -1;
  size_t mc_offset = 0;
  CUmemGenericAllocationHandle memory = 0;
  size_t mem_offset = 0;
  size_t bytes = 0;
};

struct Multicast {
  int fd = -1;  // the team memfd; exported as the POSIX handle
  MulticastTeam* team = nullptr;
  size_t team_bytes = 0;
  unsigned handle_types = 0;
  bool handle_live = true;
  long map_count = 0;
  std::vector<McBind> binds;  // this process's binds
};

struct Mapping {
  size_t bytes = 0;
  bool multicast = false;                           // handle is a Multicast, not an Allocation
  CUmemGenericAllocationHandle handle = 0;          // key of the Allocation it maps
  std::array<unsigned char, kMaxDevices> access{};  // CUmemAccess_flags per device
  int prot = PROT_NONE;
};

struct Buffer {
  size_t bytes = 0;
  int device = 0;
};

struct State {
  Options options;
  uint64_t generation = 0;
  bool initialized = false;
  std::map<CUmemGenericAllocationHandle, Allocation> allocations;
  CUmemGenericAllocationHandle next_handle = 0;
  std::map<uintptr_t, size_t> reservations;  // start -> bytes
  std::map<uintptr_t, Mapping> mappings;     // start -> mapping
  std::map<uintptr_t, Buffer> buffers;       // cuMemAlloc start -> buffer
  std::array<long, kMaxDevices> ctx_refs{};
  std::array<size_t, kMaxDevices> used_bytes{};  // device budget in use
  std::map<CUmemGenericAllocationHandle, Multicast> multicasts;
  std::map<uintptr_t, bool> multicast_windows;  // reservations that held a multicast mapping
  std::array<int, 16> multicast_step_calls{};   // by MulticastStep, for injected failures
  std::vector<std::string> multicast_log;
  struct Stream {
    int device;
    bool capturing;  // set_capturing
  };
  std::map<CUstream, Stream> streams;  // create_stream's live streams
  int mem_creates = 0;                 // cuMemCreate calls so far
};

// One mutex around everything: the runtime may call the driver from several threads, and
// the emulator's maps are not worth finer locking.
std::mutex g_mutex;
State* g_state = nullptr;
long g_multicast_calls = 0;  // under g_mutex; reset by install()
uint64_t g_generation = 0;
DriverApi g_table;

// Fake primary contexts: the address of one byte per device, so handles are distinct,
// stable across installs, and never null.
char g_context_tokens[kMaxDevices];

// The thread's current context, valid only for the install that set it (a stale one from a
// previous install reads as "no current context").
struct CurrentContext {
  uint64_t generation = 0;
  CUcontext context = nullptr;
};
thread_local CurrentContext t_current;

constexpr unsigned kKnownHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                       CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT |
                                       CU_MEM_HANDLE_TYPE_FABRIC;
constexpr const char* kMemfdPrefix = "tmashmem-emu-dev";
constexpr const char* kMulticastMemfdName = "tmashmem-emu-multicast";

bool valid_device(const State& s, int device) {
  return device >= 0 && device < s.options.device_count;
}

bool is_power_of_two(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

bool can_access_peer(const State& s, int a, int b) {
  if (a == b) return false;  // not a peer query; cuDeviceCanAccessPeer reports 0
  for (const auto& pair : s.options.no_p2p)
    if ((pair.first == a && pair.second == b) || (pair.first == b && pair.second == a))
      return false;
  return true;
}

CUcontext context_of(int device) { return reinterpret_cast<CUcontext>(&g_context_tokens[device]); }

// Device of a fake context handle, or -1 if it is not one.
int device_of(CUcontext context) {
  auto p = reinterpret_cast<uintptr_t>(context);
  auto first = reinterpret_cast<uintptr_t>(g_context_tokens);
  if (p < first || p >= first + kMaxDevices) return -1;
  return static_cast<int>(p - first);
}

// The current context's device, with the errors libcuda gives without a usable context.
CUresult current_device(const State& s, int* device) {
  if (t_current.generation != s.generation || t_current.context == nullptr)
    return CUDA_ERROR_INVALID_CONTEXT;
  int d = device_of(t_current.context);
  if (!valid_device(s, d)) return CUDA_ERROR_INVALID_CONTEXT;
  if (s.ctx_refs[static_cast<size_t>(d)] == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *device = d;
  return CUDA_SUCCESS;
}

// Frees an allocation's memory once nothing refers to it any more: released handle and no
// mappings, as in CUDA.
void maybe_destroy(State& s, CUmemGenericAllocationHandle handle) {
  auto it = s.allocations.find(handle);
  if (it == s.allocations.end()) return;
  Allocation& a = it->second;
  if (a.handle_live || a.map_count > 0 || a.bind_count > 0) return;
  if (a.fd >= 0) ::close(a.fd);
  if (a.created && valid_device(s, a.device))
    s.used_bytes[static_cast<size_t>(a.device)] -= a.bytes;
  s.allocations.erase(it);
}

Allocation* live_allocation(State& s, CUmemGenericAllocationHandle handle) {
  auto it = s.allocations.find(handle);
  if (it == s.allocations.end() || !it->second.handle_live) return nullptr;
  return &it->second;
}

// -- Multicast bookkeeping

Multicast* find_multicast(State& s, CUmemGenericAllocationHandle handle) {
  auto it = s.multicasts.find(handle);
  return it == s.multicasts.end() ? nullptr : &it->second;
}

Multicast* live_multicast(State& s, CUmemGenericAllocationHandle handle) {
  Multicast* m = find_multicast(s, handle);
  return m && m->handle_live ? m : nullptr;
}

// True when the injected failure is due at this call of `step`.
bool inject(State& s, MulticastStep step) {
  int& calls = s.multicast_step_calls[static_cast<size_t>(step)];
  ++calls;
  return s.options.multicast_fail == step && calls == s.options.multicast_fail_call;
}

void log_multicast(State& s, const std::string& line) { s.multicast_log.push_back(line); }

void maybe_destroy_multicast(State& s, CUmemGenericAllocationHandle handle) {
  auto it = s.multicasts.find(handle);
  if (it == s.multicasts.end()) return;
  Multicast& m = it->second;
  if (m.handle_live || m.map_count > 0 || !m.binds.empty()) return;
  if (m.team) ::munmap(m.team, m.team_bytes);
  if (m.fd >= 0) ::close(m.fd);
  s.multicasts.erase(it);
}

// Registers a team memfd (ours now) as a multicast handle.
CUresult adopt_multicast_fd(State& s, int fd, unsigned types, CUmemGenericAllocationHandle* out) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(MulticastTeam))) {
    ::close(fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p =
      ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    ::close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Multicast m;
  m.fd = fd;
  m.team = static_cast<MulticastTeam*>(p);
  m.team_bytes = static_cast<size_t>(st.st_size);
  m.handle_types = types;
  if (m.team->magic != kMulticastMagic) {
    ::munmap(p, m.team_bytes);
    ::close(fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUmemGenericAllocationHandle handle = ++s.next_handle;
  s.multicasts.emplace(handle, m);
  *out = handle;
  return CUDA_SUCCESS;
}

// The multicast mappings of `handle` show this process's bound memory at each bound range
// (the documented simplification: no store reaches another process) and stay PROT_NONE
// reserved space elsewhere. Called after every change of binds, mappings or access.
void refresh_multicast_views(State& s, CUmemGenericAllocationHandle handle);

// The mappings that tile [ptr, ptr + bytes) exactly: the first starts at ptr, each next one
// starts where the previous ended, the last ends at ptr + bytes. cuMemSetAccess and
// cuMemUnmap accept only such ranges (no partial mappings, no holes).
bool exact_mappings(State& s, uintptr_t ptr, size_t bytes,
                    std::vector<std::map<uintptr_t, Mapping>::iterator>* out) {
  out->clear();
  if (bytes == 0 || ptr + bytes < ptr) return false;
  uintptr_t cursor = ptr, end = ptr + bytes;
  auto it = s.mappings.find(ptr);
  while (cursor < end) {
    if (it == s.mappings.end() || it->first != cursor) return false;
    cursor += it->second.bytes;
    out->push_back(it);
    ++it;
  }
  return cursor == end;
}

// True if [ptr, ptr + bytes) is device memory the CPU may touch now: inside one cuMemAlloc
// buffer, or covered by adjacent VMM mappings whose access allows it.
bool accessible(const State& s, uintptr_t ptr, size_t bytes, bool write) {
  if (bytes == 0) return true;
  if (ptr + bytes < ptr) return false;
  auto b = s.buffers.upper_bound(ptr);
  if (b != s.buffers.begin()) {
    --b;
    if (ptr >= b->first && ptr + bytes <= b->first + b->second.bytes) return true;
  }
  auto m = s.mappings.upper_bound(ptr);
  if (m == s.mappings.begin()) return false;
  --m;
  if (ptr >= m->first + m->second.bytes) return false;
  uintptr_t cursor = ptr, end = ptr + bytes;
  int need = write ? (PROT_READ | PROT_WRITE) : PROT_READ;
  while (cursor < end) {
    if (m == s.mappings.end() || m->first > cursor) return false;
    if ((m->second.prot & need) != need) return false;
    cursor = m->first + m->second.bytes;
    ++m;
  }
  return true;
}

int prot_of(const Mapping& m) {
  unsigned char best = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  for (unsigned char a : m.access) best = a > best ? a : best;
  if (best == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return PROT_READ | PROT_WRITE;
  if (best == CU_MEM_ACCESS_FLAGS_PROT_READ) return PROT_READ;
  return PROT_NONE;
}

// Turns a range back into plain reserved address space (what cuMemUnmap leaves behind).
bool reserve_fixed(uintptr_t ptr, size_t bytes) {
  void* p = ::mmap(reinterpret_cast<void*>(ptr), bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return p != MAP_FAILED;
}

void refresh_multicast_views(State& s, CUmemGenericAllocationHandle handle) {
  Multicast* mc = find_multicast(s, handle);
  for (auto& entry : s.mappings) {
    const Mapping& m = entry.second;
    if (!m.multicast || m.handle != handle) continue;
    reserve_fixed(entry.first, m.bytes);
    if (!mc) continue;
    const int prot = prot_of(m);
    for (const McBind& b : mc->binds) {
      if (b.mc_offset >= m.bytes) continue;
      auto a = s.allocations.find(b.memory);
      if (a == s.allocations.end() || a->second.fd < 0) continue;
      const size_t bytes = b.bytes < m.bytes - b.mc_offset ? b.bytes : m.bytes - b.mc_offset;
      ::mmap(reinterpret_cast<void*>(entry.first + b.mc_offset), bytes, prot,
             MAP_SHARED | MAP_FIXED, a->second.fd, static_cast<off_t>(b.mem_offset));
    }
  }
}

// What follows "/memfd:<prefix>" in the link target of `fd` (a memfd named <prefix>...),
// or false for any other fd.
bool memfd_name_rest(int fd, const char* prefix, std::string* rest) {
  char link[64], target[256];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = ::readlink(link, target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  const std::string expected = std::string("/memfd:") + prefix;
  if (std::strncmp(target, expected.c_str(), expected.size()) != 0) return false;
  *rest = target + expected.size();
  return true;
}

// True for the team memfd of an emulated multicast object.
bool is_multicast_fd(int fd) {
  std::string rest;
  return memfd_name_rest(fd, kMulticastMemfdName, &rest);
}

// The creating device recorded in the name of an emulator memfd ("/memfd:<prefix><N>"), so
// an importer in another process knows where the memory lives. False for any other fd.
bool memfd_device(int fd, int* device) {
  std::string rest;
  if (!memfd_name_rest(fd, kMemfdPrefix, &rest)) return false;
  char* end = nullptr;
  const long d = std::strtol(rest.c_str(), &end, 10);
  if (end == rest.c_str() || d < 0 || d >= kMaxDevices) return false;
  *device = static_cast<int>(d);
  return true;
}

// Registers an imported fd (ours now) as a new handle after checking it is emulator memory
// of a mappable size.
CUresult adopt_imported_fd(State& s, int fd, unsigned type, CUmemGenericAllocationHandle* out) {
  struct stat st;
  int device = -1;
  if (::fstat(fd, &st) != 0 || !memfd_device(fd, &device) || st.st_size <= 0 ||
      static_cast<size_t>(st.st_size) % s.options.granularity != 0) {
    ::close(fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  Allocation a;
  a.fd = fd;
  a.bytes = static_cast<size_t>(st.st_size);
  a.device = device;
  a.created = false;
  a.handle_types = type;
  CUmemGenericAllocationHandle handle = ++s.next_handle;
  s.allocations.emplace(handle, a);
  *out = handle;
  return CUDA_SUCCESS;
}

// Takes the emulator lock and rejects calls before a successful cuInit.
#define EMU_ENTER()                                                         \
  std::lock_guard<std::mutex> emu_lock_(g_mutex);                           \
  if (!g_state || !g_state->initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  State& s = *g_state

// EMU_ENTER for a query of `device` that answers through `out`: CUDA checks the pointer
// first, then the device.
#define EMU_ENTER_DEVICE_QUERY(out, device)    \
  EMU_ENTER();                                 \
  if (!(out)) return CUDA_ERROR_INVALID_VALUE; \
  if (!valid_device(s, device)) return CUDA_ERROR_INVALID_DEVICE

// A query of `device` whose whole answer is `value`, through `out`.
#define EMU_DEVICE_ANSWER(out, device, value) \
  EMU_ENTER_DEVICE_QUERY(out, device);        \
  *(out) = (value);                           \
  return CUDA_SUCCESS

// EMU_ENTER for a call that counts in Counts::multicast_calls (counted even when it fails).
#define EMU_ENTER_MULTICAST()                                               \
  std::lock_guard<std::mutex> emu_lock_(g_mutex);                           \
  ++g_multicast_calls;                                                      \
  if (!g_state || !g_state->initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  State& s = *g_state

// Whether `handle` is a multicast object's: a call on one counts in Counts::multicast_calls
// (entry points that take either kind of handle). Under the emulator lock.
bool counted_multicast(State& s, CUmemGenericAllocationHandle handle) {
  if (!find_multicast(s, handle)) return false;
  ++g_multicast_calls;
  return true;
}

// ---------------------------------------------------------------------------------------
// Entry points. Declared from the table's own signatures: a table entry without an emu_
// function, or with a different signature, does not build.

#define TMASHMEM_EMU_DECLARE(name, sig) std::remove_pointer_t<sig> emu_##name;
TMASHMEM_DRIVER_FUNCTIONS(TMASHMEM_EMU_DECLARE)
TMASHMEM_DRIVER_MULTICAST_FUNCTIONS(TMASHMEM_EMU_DECLARE)
#undef TMASHMEM_EMU_DECLARE

// -- Initialization and errors

CUresult emu_cuInit(unsigned int flags) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_state) return CUDA_ERROR_NOT_INITIALIZED;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (g_state->options.init_fails || g_state->options.device_count == 0)
    return CUDA_ERROR_NO_DEVICE;
  g_state->initialized = true;
  return CUDA_SUCCESS;
}

CUresult emu_cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
     "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_TIMEOUT, "CUDA_ERROR_TIMEOUT", "the wait operation has timed out"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* find_error(CUresult code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

CUresult emu_cuGetErrorName(CUresult error, const char** out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  *out = e ? e->name : "CUDA_ERROR_UNRECOGNIZED";
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult emu_cuGetErrorString(CUresult error, const char** out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  *out = e ? e->text : "unrecognized CUresult (tmashmem emulated driver)";
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// -- Devices

CUresult emu_cuDeviceGetCount(int* count) {
  EMU_ENTER();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = s.options.device_count;
  return CUDA_SUCCESS;
}

CUresult emu_cuDeviceGet(CUdevice* device, int ordinal) {
  EMU_DEVICE_ANSWER(device, ordinal, ordinal);
}

CUresult emu_cuDeviceGetName(char* name, int length, CUdevice device) {
  EMU_ENTER();
  if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(s, device)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(length), "%s", s.options.device_name);
  return CUDA_SUCCESS;
}

// Derived from the ordinal only, so every process of a "node" sees the same UUID for the
// same device and PEs can tell which of them share a GPU.
CUresult emu_cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  EMU_ENTER_DEVICE_QUERY(uuid, device);
  static const unsigned char kPrefix[12] = {0x74, 0x6d, 0x61, 0x73, 0x68, 0x6d,
                                            0x65, 0x6d, 0x2d, 0x65, 0x6d, 0x75};
  std::memcpy(uuid->bytes, kPrefix, sizeof kPrefix);
  auto d = static_cast<uint32_t>(device);
  for (int i = 0; i < 4; ++i) uuid->bytes[12 + i] = static_cast<char>((d >> (8 * (3 - i))) & 0xff);
  return CUDA_SUCCESS;
}

CUresult emu_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  EMU_ENTER_DEVICE_QUERY(value, device);
  if (static_cast<int>(attribute) <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  const Options& o = s.options;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      *value = o.vmm_supported;
      break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
      *value = o.posix_fd_supported;
      break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
      *value = o.fabric_supported;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
      *value = o.multicast_supported;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = o.sm_count;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1980000;
      break;  // kHz
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *value = 0x18 + device;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
      *value = o.stream_mem_ops_64;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
      *value = 1;
      break;
    default:
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

CUresult emu_cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  EMU_DEVICE_ANSWER(bytes, device, s.options.device_memory_bytes);
}

CUresult emu_cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  EMU_ENTER();
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(s, device) || !valid_device(s, peer)) return CUDA_ERROR_INVALID_DEVICE;
  *can = can_access_peer(s, device, peer) ? 1 : 0;
  return CUDA_SUCCESS;
}

// -- Contexts

CUresult emu_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  EMU_ENTER_DEVICE_QUERY(context, device);
  ++s.ctx_refs[static_cast<size_t>(device)];
  *context = context_of(device);
  return CUDA_SUCCESS;
}

CUresult emu_cuDevicePrimaryCtxRelease(CUdevice device) {
  EMU_ENTER();
  if (!valid_device(s, device)) return CUDA_ERROR_INVALID_DEVICE;
  if (s.ctx_refs[static_cast<size_t>(device)] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --s.ctx_refs[static_cast<size_t>(device)];
  return CUDA_SUCCESS;
}

CUresult emu_cuCtxGetCurrent(CUcontext* context) {
  EMU_ENTER();
  if (!context) return CUDA_ERROR_INVALID_VALUE;
  *context = t_current.generation == s.generation ? t_current.context : nullptr;
  return CUDA_SUCCESS;
}

// Only a retained primary context (or NULL) can be made current.
CUresult emu_cuCtxSetCurrent(CUcontext context) {
  EMU_ENTER();
  if (context != nullptr) {
    int d = device_of(context);
    if (!valid_device(s, d) || s.ctx_refs[static_cast<size_t>(d)] == 0)
      return CUDA_ERROR_INVALID_CONTEXT;
  }
  t_current.generation = s.generation;
  t_current.context = context;
  return CUDA_SUCCESS;
}

CUresult emu_cuCtxGetDevice(CUdevice* device) {
  EMU_ENTER();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  int d = 0;
  CUresult r = current_device(s, &d);
  if (r != CUDA_SUCCESS) return r;
  *device = d;
  return CUDA_SUCCESS;
}

// Nothing is asynchronous here; still needs a context, as in libcuda.
CUresult emu_cuCtxSynchronize() {
  EMU_ENTER();
  int d = 0;
  return current_device(s, &d);
}

// -- Plain device memory

CUresult emu_cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  EMU_ENTER();
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  int d = 0;
  CUresult r = current_device(s, &d);
  if (r != CUDA_SUCCESS) return r;
  size_t used = s.used_bytes[static_cast<size_t>(d)];
  *total_bytes = s.options.device_memory_bytes;
  *free_bytes = used < *total_bytes ? *total_bytes - used : 0;
  return CUDA_SUCCESS;
}

// Host memory standing in for device memory, filled with a nonzero pattern because device
// memory is not zeroed either.
CUresult emu_cuMemAlloc(CUdeviceptr* dptr, size_t bytes) {
  EMU_ENTER();
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int d = 0;
  CUresult r = current_device(s, &d);
  if (r != CUDA_SUCCESS) return r;
  size_t rounded = (bytes + 255) / 256 * 256;
  size_t& used = s.used_bytes[static_cast<size_t>(d)];
  if (rounded < bytes || rounded > s.options.device_memory_bytes - used)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = nullptr;
  if (::posix_memalign(&p, 256, rounded) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(p, 0xa5, rounded);
  Buffer b;
  b.bytes = rounded;
  b.device = d;
  s.buffers.emplace(reinterpret_cast<uintptr_t>(p), b);
  used += rounded;
  *dptr = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

// Like cudaFree(nullptr), freeing 0 is a no-op.
CUresult emu_cuMemFree(CUdeviceptr dptr) {
  EMU_ENTER();
  if (dptr == 0) return CUDA_SUCCESS;
  auto it = s.buffers.find(dptr);
  if (it == s.buffers.end()) return CUDA_ERROR_INVALID_VALUE;
  s.used_bytes[static_cast<size_t>(it->second.device)] -= it->second.bytes;
  std::free(reinterpret_cast<void*>(it->first));
  s.buffers.erase(it);
  return CUDA_SUCCESS;
}

CUresult emu_cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  EMU_ENTER();
  int d = 0;
  CUresult r = current_device(s, &d);
  if (r != CUDA_SUCCESS) return r;
  if ((bytes && !src) || !accessible(s, dst, bytes, true)) return CUDA_ERROR_INVALID_VALUE;
  if (bytes) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult emu_cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  EMU_ENTER();
  int d = 0;
  CUresult r = current_device(s, &d);
  if (r != CUDA_SUCCESS) return r;
  if ((bytes && !dst) || !accessible(s, src, bytes, false)) return CUDA_ERROR_INVALID_VALUE;
  if (bytes) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult emu_cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  EMU_ENTER();
  int d = 0;
  CUresult r = current_device(s, &d);
  if (r != CUDA_SUCCESS) return r;
  if (!accessible(s, dst, count, true)) return CUDA_ERROR_INVALID_VALUE;
  if (count) std::memset(reinterpret_cast<void*>(dst), value, count);
  return CUDA_SUCCESS;
}

// -- Virtual memory management

// Requested handle types this machine can export: no Windows handles, and POSIX fds or
// fabric handles only where the options say the device supports them.
CUresult check_handle_types(const State& s, unsigned types) {
  if (types & (CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT))
    return CUDA_ERROR_NOT_SUPPORTED;
  if ((types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) && !s.options.posix_fd_supported)
    return CUDA_ERROR_NOT_SUPPORTED;
  if ((types & CU_MEM_HANDLE_TYPE_FABRIC) && !s.options.fabric_supported)
    return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

// Checks a CUmemAllocationProp the way cuMemCreate and the granularity query do.
CUresult check_prop(const State& s, const CUmemAllocationProp* prop) {
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  if (!s.options.vmm_supported) return CUDA_ERROR_NOT_SUPPORTED;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(s, prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  if ((static_cast<unsigned>(prop->requestedHandleTypes) & ~kKnownHandleTypes) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult emu_cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                           CUmemAllocationGranularity_flags flags) {
  EMU_ENTER();
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ALLOC_GRANULARITY_MINIMUM && flags != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_prop(s, prop);
  if (r != CUDA_SUCCESS) return r;
  *granularity = s.options.granularity;
  return CUDA_SUCCESS;
}

CUresult emu_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                         const CUmemAllocationProp* prop, unsigned long long flags) {
  EMU_ENTER();
  if (++s.mem_creates == s.options.kill_at_mem_create) ::raise(SIGKILL);
  if (!handle || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_prop(s, prop);
  if (r != CUDA_SUCCESS) return r;
  const unsigned types = static_cast<unsigned>(prop->requestedHandleTypes);
  r = check_handle_types(s, types);
  if (r != CUDA_SUCCESS) return r;
  if (bytes == 0 || bytes % s.options.granularity != 0) return CUDA_ERROR_INVALID_VALUE;
  int device = prop->location.id;
  size_t& used = s.used_bytes[static_cast<size_t>(device)];
  if (bytes > s.options.device_memory_bytes - used) return CUDA_ERROR_OUT_OF_MEMORY;

  // The memfd's name records the device, for importers (see memfd_device()).
  char name[64];
  std::snprintf(name, sizeof name, "%s%d", kMemfdPrefix, device);
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.fd = fd;
  a.bytes = bytes;
  a.device = device;
  a.created = true;
  a.handle_types = types;
  // Handles are never reused and never 0, so a stale or zero handle is always an error.
  CUmemGenericAllocationHandle h = ++s.next_handle;
  s.allocations.emplace(h, a);
  used += bytes;
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult emu_cuMemRelease(CUmemGenericAllocationHandle handle) {
  EMU_ENTER();
  if (counted_multicast(s, handle)) {
    Multicast* mc = live_multicast(s, handle);
    if (!mc) return CUDA_ERROR_INVALID_VALUE;
    mc->handle_live = false;
    log_multicast(s, "cuMemRelease(multicast)");
    maybe_destroy_multicast(s, handle);
    return CUDA_SUCCESS;
  }
  Allocation* a = live_allocation(s, handle);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  if (a->bind_count > 0) log_multicast(s, "cuMemRelease(bound memory)");
  a->handle_live = false;
  maybe_destroy(s, handle);
  return CUDA_SUCCESS;
}

// The two exported forms of memfd-backed memory: a duplicate of the fd (the caller owns
// and closes it; ours stays with the object), or fabric-handle bytes naming the fd, its
// inode, the size and the device (-1 for a multicast object).
CUresult export_posix_fd(int fd, void* shareable) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  *static_cast<int*>(shareable) = copy;
  return CUDA_SUCCESS;
}

CUresult export_fabric(int fd, uint64_t bytes, int device, void* shareable) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return CUDA_ERROR_OPERATING_SYSTEM;
  FabricHandleLayout f;
  std::memset(&f, 0, sizeof f);
  f.magic = kFabricMagic;
  f.pid = static_cast<int32_t>(::getpid());
  f.fd = fd;
  f.inode = static_cast<uint64_t>(st.st_ino);
  f.bytes = bytes;
  f.device = device;
  std::memcpy(shareable, &f, sizeof f);
  return CUDA_SUCCESS;
}

CUresult emu_cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                          CUmemAllocationHandleType type,
                                          unsigned long long flags) {
  EMU_ENTER();
  if (counted_multicast(s, handle)) {
    Multicast* mc = live_multicast(s, handle);
    if (!shareable || flags != 0 || !mc) return CUDA_ERROR_INVALID_VALUE;
    if (inject(s, MulticastStep::Export)) return CUDA_ERROR_NOT_PERMITTED;
    if (!(mc->handle_types & static_cast<unsigned>(type))) return CUDA_ERROR_NOT_SUPPORTED;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR && type != CU_MEM_HANDLE_TYPE_FABRIC)
      return CUDA_ERROR_NOT_SUPPORTED;
    const CUresult r = type == CU_MEM_HANDLE_TYPE_FABRIC
                           ? export_fabric(mc->fd, mc->team_bytes, -1, shareable)
                           : export_posix_fd(mc->fd, shareable);
    if (r != CUDA_SUCCESS) return r;
    log_multicast(s, type == CU_MEM_HANDLE_TYPE_FABRIC
                         ? "cuMemExportToShareableHandle(multicast, fabric)"
                         : "cuMemExportToShareableHandle(multicast, posix fd)");
    return CUDA_SUCCESS;
  }
  if (!shareable || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Allocation* a = live_allocation(s, handle);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    if (!(a->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
        !s.options.posix_fd_supported)
      return CUDA_ERROR_NOT_SUPPORTED;
    return export_posix_fd(a->fd, shareable);
  }
  if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
    if (!(a->handle_types & CU_MEM_HANDLE_TYPE_FABRIC) || !s.options.fabric_supported ||
        !s.options.fabric_export_works)
      return CUDA_ERROR_NOT_SUPPORTED;
    return export_fabric(a->fd, a->bytes, a->device, shareable);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

// The import of a multicast object's handle (counted, injectable, logged).
CUresult import_multicast(State& s, int fd, unsigned type, CUmemGenericAllocationHandle* out) {
  ++g_multicast_calls;
  if (inject(s, MulticastStep::Import)) {
    ::close(fd);
    return CUDA_ERROR_NOT_PERMITTED;
  }
  CUresult r = adopt_multicast_fd(s, fd, type, out);
  if (r == CUDA_SUCCESS)
    log_multicast(s, type == CU_MEM_HANDLE_TYPE_FABRIC
                         ? "cuMemImportFromShareableHandle(multicast, fabric)"
                         : "cuMemImportFromShareableHandle(multicast, posix fd)");
  return r;
}

CUresult emu_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* os_handle,
                                            CUmemAllocationHandleType type) {
  EMU_ENTER();
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    if (!s.options.posix_fd_supported) return CUDA_ERROR_NOT_SUPPORTED;
    // Duplicated: the caller may close its fd right after the import.
    int fd = ::fcntl(static_cast<int>(reinterpret_cast<intptr_t>(os_handle)), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
    if (is_multicast_fd(fd))
      return import_multicast(s, fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, handle);
    return adopt_imported_fd(s, fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, handle);
  }
  if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
    if (!s.options.fabric_supported) return CUDA_ERROR_NOT_SUPPORTED;
    if (!os_handle) return CUDA_ERROR_INVALID_VALUE;
    FabricHandleLayout f;
    std::memcpy(&f, os_handle, sizeof f);
    if (f.magic != kFabricMagic) return CUDA_ERROR_INVALID_VALUE;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%d", f.pid, f.fd);
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
    struct stat st;
    if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_ino) != f.inode ||
        static_cast<uint64_t>(st.st_size) != f.bytes) {
      ::close(fd);
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_multicast_fd(fd)) return import_multicast(s, fd, CU_MEM_HANDLE_TYPE_FABRIC, handle);
    return adopt_imported_fd(s, fd, CU_MEM_HANDLE_TYPE_FABRIC, handle);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Over-reserves by the alignment and trims both ends, since mmap only aligns to pages.
CUresult emu_cuMemAddressReserve(CUdeviceptr* ptr, size_t bytes, size_t alignment, CUdeviceptr addr,
                                 unsigned long long flags) {
  EMU_ENTER();
  const size_t g = s.options.granularity;
  if (!ptr || flags != 0 || bytes == 0 || bytes % g != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && !is_power_of_two(alignment)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment < g) alignment = g;
  const int mflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  uintptr_t start = 0;
  if (addr != 0 && addr % alignment == 0) {  // a hint: used only if that range is free
    void* p = ::mmap(reinterpret_cast<void*>(addr), bytes, PROT_NONE, mflags, -1, 0);
    if (p != MAP_FAILED && reinterpret_cast<uintptr_t>(p) == addr)
      start = addr;
    else if (p != MAP_FAILED)
      ::munmap(p, bytes);
  }
  if (start == 0) {
    size_t total = bytes + alignment;
    if (total < bytes) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = ::mmap(nullptr, total, PROT_NONE, mflags, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    auto raw = reinterpret_cast<uintptr_t>(p);
    start = (raw + alignment - 1) / alignment * alignment;
    if (start > raw) ::munmap(p, start - raw);
    uintptr_t end = start + bytes, raw_end = raw + total;
    if (raw_end > end) ::munmap(reinterpret_cast<void*>(end), raw_end - end);
  }
  s.reservations.emplace(start, bytes);
  *ptr = start;
  return CUDA_SUCCESS;
}

// Must name a whole reservation with nothing mapped in it (see the header).
CUresult emu_cuMemAddressFree(CUdeviceptr ptr, size_t bytes) {
  EMU_ENTER();
  auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || it->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  auto m = s.mappings.lower_bound(ptr);
  if (m != s.mappings.end() && m->first < ptr + bytes) return CUDA_ERROR_INVALID_VALUE;
  ::munmap(reinterpret_cast<void*>(ptr), bytes);
  s.reservations.erase(it);
  if (s.multicast_windows.erase(ptr)) {
    ++g_multicast_calls;
    log_multicast(s, "cuMemAddressFree(multicast window)");
  }
  return CUDA_SUCCESS;
}

// Start of the reservation that holds [ptr, ptr + bytes) with no mapping in that range;
// 0 when there is none.
uintptr_t free_reserved_range(const State& s, uintptr_t ptr, size_t bytes) {
  if (ptr + bytes < ptr) return 0;
  auto r = s.reservations.upper_bound(ptr);
  if (r == s.reservations.begin()) return 0;
  --r;
  if (ptr < r->first || ptr + bytes > r->first + r->second) return 0;
  // Not overlapping a mapping: the one starting at or after ptr must start at or after the
  // end, and the one before must end at or before ptr.
  auto next = s.mappings.lower_bound(ptr);
  if (next != s.mappings.end() && next->first < ptr + bytes) return 0;
  if (next != s.mappings.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes > ptr) return 0;
  }
  return r->first;
}

// cuMemMap of a multicast handle: the whole object from offset 0 (the driver's rule), at
// multicast granularity; the range shows this process's binds (refresh_multicast_views).
CUresult map_multicast(State& s, CUdeviceptr ptr, size_t bytes, size_t offset,
                       CUmemGenericAllocationHandle handle, unsigned long long flags) {
  ++g_multicast_calls;
  Multicast* mc = live_multicast(s, handle);
  const size_t g = s.options.multicast_granularity;
  if (!mc || flags != 0 || offset != 0 || bytes == 0 || ptr % g != 0 || bytes % g != 0 ||
      bytes > mc->team->size)
    return CUDA_ERROR_INVALID_VALUE;
  if (inject(s, MulticastStep::Map)) return CUDA_ERROR_NOT_PERMITTED;
  const uintptr_t reservation = free_reserved_range(s, ptr, bytes);
  if (reservation == 0) return CUDA_ERROR_INVALID_VALUE;
  Mapping m;
  m.bytes = bytes;
  m.multicast = true;
  m.handle = handle;
  s.mappings.emplace(ptr, m);
  ++mc->map_count;
  s.multicast_windows[reservation] = true;
  refresh_multicast_views(s, handle);
  log_multicast(s, "cuMemMap(multicast) size=" + std::to_string(bytes));
  return CUDA_SUCCESS;
}

CUresult emu_cuMemMap(CUdeviceptr ptr, size_t bytes, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags) {
  EMU_ENTER();
  if (find_multicast(s, handle)) return map_multicast(s, ptr, bytes, offset, handle, flags);
  const size_t g = s.options.granularity;
  if (flags != 0 || bytes == 0 || ptr % g != 0 || bytes % g != 0 || offset % g != 0)
    return CUDA_ERROR_INVALID_VALUE;
  Allocation* a = live_allocation(s, handle);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  if (offset > a->bytes || bytes > a->bytes - offset) return CUDA_ERROR_INVALID_VALUE;
  if (free_reserved_range(s, ptr, bytes) == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = ::mmap(reinterpret_cast<void*>(ptr), bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, a->fd,
                   static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    reserve_fixed(ptr, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Mapping m;
  m.bytes = bytes;
  m.handle = handle;
  s.mappings.emplace(ptr, m);
  ++a->map_count;
  return CUDA_SUCCESS;
}

CUresult emu_cuMemUnmap(CUdeviceptr ptr, size_t bytes) {
  EMU_ENTER();
  std::vector<std::map<uintptr_t, Mapping>::iterator> covered;
  if (!exact_mappings(s, ptr, bytes, &covered)) return CUDA_ERROR_INVALID_VALUE;
  for (auto it : covered) {
    // Back to PROT_NONE reserved space, so the reservation stays ours until freed.
    reserve_fixed(it->first, it->second.bytes);
    CUmemGenericAllocationHandle h = it->second.handle;
    if (it->second.multicast) {
      ++g_multicast_calls;
      s.mappings.erase(it);
      if (Multicast* mc = find_multicast(s, h)) --mc->map_count;
      log_multicast(s, "cuMemUnmap(multicast)");
      maybe_destroy_multicast(s, h);
      continue;
    }
    s.mappings.erase(it);
    auto a = s.allocations.find(h);
    if (a != s.allocations.end()) --a->second.map_count;
    maybe_destroy(s, h);
  }
  return CUDA_SUCCESS;
}

// The CPU has one address space for all emulated devices, so the protection applied is the
// most permissive access any device was granted; per-device flags are kept for P2P checks.
CUresult emu_cuMemSetAccess(CUdeviceptr ptr, size_t bytes, const CUmemAccessDesc* desc,
                            size_t count) {
  EMU_ENTER();
  const size_t g = s.options.granularity;
  if (!desc || count == 0 || ptr % g != 0 || bytes % g != 0) return CUDA_ERROR_INVALID_VALUE;
  std::vector<std::map<uintptr_t, Mapping>::iterator> covered;
  if (!exact_mappings(s, ptr, bytes, &covered)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemAccessDesc& d = desc[i];
    if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, d.location.id)) return CUDA_ERROR_INVALID_DEVICE;
    if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
    for (auto it : covered) {
      auto a = s.allocations.find(it->second.handle);
      int home = a == s.allocations.end() ? -1 : a->second.device;
      if (home >= 0 && home != d.location.id && d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
          !can_access_peer(s, d.location.id, home))
        return CUDA_ERROR_INVALID_DEVICE;
    }
  }
  for (auto it : covered) {
    if (!it->second.multicast) continue;
    ++g_multicast_calls;
    if (inject(s, MulticastStep::SetAccess)) return CUDA_ERROR_NOT_PERMITTED;
  }
  for (auto it : covered) {
    Mapping& m = it->second;
    for (size_t i = 0; i < count; ++i)
      m.access[static_cast<size_t>(desc[i].location.id)] =
          static_cast<unsigned char>(desc[i].flags);
    if (m.multicast) {
      // m.prot stays PROT_NONE: copies and memsets through a multicast address are refused.
      refresh_multicast_views(s, m.handle);
      log_multicast(s, "cuMemSetAccess(multicast)");
      continue;
    }
    int prot = prot_of(m);
    if (::mprotect(reinterpret_cast<void*>(it->first), m.bytes, prot) != 0)
      return CUDA_ERROR_OPERATING_SYSTEM;
    m.prot = prot;
  }
  return CUDA_SUCCESS;
}

// -- Multicast objects (see the header)

CUresult check_multicast_prop(const State& s, const CUmulticastObjectProp* prop) {
  if (!prop || prop->flags != 0 || prop->numDevices == 0 || prop->numDevices > kMaxDevices)
    return CUDA_ERROR_INVALID_VALUE;
  const auto types = static_cast<unsigned>(prop->handleTypes);
  if ((types & ~kKnownHandleTypes) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!s.options.multicast_supported) return CUDA_ERROR_NOT_SUPPORTED;
  return check_handle_types(s, types);
}

CUresult emu_cuMulticastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                       CUmulticastGranularity_flags option) {
  EMU_ENTER_MULTICAST();
  if (inject(s, MulticastStep::Granularity)) return CUDA_ERROR_NOT_PERMITTED;
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_multicast_prop(s, prop);
  if (r != CUDA_SUCCESS) return r;
  if (option == CU_MULTICAST_GRANULARITY_MINIMUM)
    *granularity = s.options.multicast_granularity;
  else if (option == CU_MULTICAST_GRANULARITY_RECOMMENDED)
    *granularity = s.options.multicast_recommended_granularity;
  else
    return CUDA_ERROR_INVALID_VALUE;
  log_multicast(s, "cuMulticastGetGranularity");
  return CUDA_SUCCESS;
}

CUresult emu_cuMulticastCreate(CUmemGenericAllocationHandle* handle,
                               const CUmulticastObjectProp* prop) {
  EMU_ENTER_MULTICAST();
  if (inject(s, MulticastStep::Create)) return CUDA_ERROR_NOT_PERMITTED;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_multicast_prop(s, prop);
  if (r != CUDA_SUCCESS) return r;
  if (prop->size == 0 || prop->size % s.options.multicast_granularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  int fd = ::memfd_create(kMulticastMemfdName, MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t bytes = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    ::close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto* team = static_cast<MulticastTeam*>(p);
  team->magic = kMulticastMagic;
  team->size = prop->size;
  team->num_devices = prop->numDevices;
  Multicast m;
  m.fd = fd;
  m.team = team;
  m.team_bytes = bytes;
  m.handle_types = static_cast<unsigned>(prop->handleTypes);
  CUmemGenericAllocationHandle h = ++s.next_handle;
  s.multicasts.emplace(h, m);
  *handle = h;
  log_multicast(s, "cuMulticastCreate size=" + std::to_string(prop->size) +
                       " devices=" + std::to_string(prop->numDevices));
  return CUDA_SUCCESS;
}

CUresult emu_cuMulticastAddDevice(CUmemGenericAllocationHandle handle, CUdevice device) {
  EMU_ENTER_MULTICAST();
  if (inject(s, MulticastStep::AddDevice)) return CUDA_ERROR_NOT_PERMITTED;
  Multicast* mc = live_multicast(s, handle);
  if (!mc) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(s, device)) return CUDA_ERROR_INVALID_DEVICE;
  const uint64_t bit = uint64_t(1) << device;
  MulticastTeam* team = mc->team;
  if (__atomic_fetch_or(&team->added_mask, bit, __ATOMIC_SEQ_CST) & bit)
    return CUDA_ERROR_INVALID_VALUE;  // added twice
  if (__atomic_add_fetch(&team->added, 1u, __ATOMIC_SEQ_CST) > team->num_devices) {
    __atomic_sub_fetch(&team->added, 1u, __ATOMIC_SEQ_CST);
    __atomic_fetch_and(&team->added_mask, ~bit, __ATOMIC_SEQ_CST);
    return CUDA_ERROR_INVALID_VALUE;  // more devices than numDevices
  }
  log_multicast(s, "cuMulticastAddDevice device=" + std::to_string(device));
  return CUDA_SUCCESS;
}

CUresult emu_cuMulticastBindMem(CUmemGenericAllocationHandle handle, size_t mc_offset,
                                CUmemGenericAllocationHandle memory, size_t mem_offset,
                                size_t bytes, unsigned long long flags) {
  EMU_ENTER_MULTICAST();
  if (inject(s, MulticastStep::Bind)) return CUDA_ERROR_NOT_PERMITTED;
  Multicast* mc = live_multicast(s, handle);
  Allocation* a = live_allocation(s, memory);
  const size_t g = s.options.multicast_granularity;
  if (!mc || !a || flags != 0 || bytes == 0 || mc_offset % g != 0 || mem_offset % g != 0 ||
      bytes % g != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const MulticastTeam* team = mc->team;
  if (mc_offset > team->size || bytes > team->size - mc_offset || mem_offset > a->bytes ||
      bytes > a->bytes - mem_offset)
    return CUDA_ERROR_INVALID_VALUE;
  // libcuda blocks here until every device was added; the emulator refuses instead.
  if (__atomic_load_n(&team->added, __ATOMIC_SEQ_CST) != team->num_devices)
    return CUDA_ERROR_ILLEGAL_STATE;
  if (a->device < 0 || !((__atomic_load_n(&team->added_mask, __ATOMIC_SEQ_CST) >> a->device) & 1u))
    return CUDA_ERROR_INVALID_DEVICE;
  if (a->handle_types == 0) return CUDA_ERROR_NOT_SUPPORTED;  // shareable objects need it
  for (const McBind& b : mc->binds)
    if (b.device == a->device && mc_offset < b.mc_offset + b.bytes &&
        b.mc_offset < mc_offset + bytes)
      return CUDA_ERROR_INVALID_VALUE;  // overlaps an earlier bind of that device
  McBind b;
  b.device = a->device;
  b.mc_offset = mc_offset;
  b.memory = memory;
  b.mem_offset = mem_offset;
  b.bytes = bytes;
  mc->binds.push_back(b);
  ++a->bind_count;
  refresh_multicast_views(s, handle);
  log_multicast(s, "cuMulticastBindMem offset=" + std::to_string(mc_offset) +
                       " size=" + std::to_string(bytes));
  return CUDA_SUCCESS;
}

CUresult emu_cuMulticastUnbind(CUmemGenericAllocationHandle handle, CUdevice device,
                               size_t mc_offset, size_t bytes) {
  EMU_ENTER_MULTICAST();
  Multicast* mc = find_multicast(s, handle);
  if (!mc) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(s, device)) return CUDA_ERROR_INVALID_DEVICE;
  for (auto it = mc->binds.begin(); it != mc->binds.end(); ++it) {
    if (it->device != device || it->mc_offset != mc_offset || it->bytes != bytes) continue;
    CUmemGenericAllocationHandle memory = it->memory;
    mc->binds.erase(it);
    auto a = s.allocations.find(memory);
    if (a != s.allocations.end()) --a->second.bind_count;
    maybe_destroy(s, memory);
    refresh_multicast_views(s, handle);
    log_multicast(s, "cuMulticastUnbind offset=" + std::to_string(mc_offset) +
                         " size=" + std::to_string(bytes));
    maybe_destroy_multicast(s, handle);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;  // must match one bind exactly
}

// -- Stream memory operations (no streams: each happens during the call; see the header)

// The checks both operations make on every attempt, with the lock held.
CUresult check_mem_op(const State& s, CUdeviceptr addr, bool write) {
  int d = 0;
  CUresult r = current_device(s, &d);
  if (r != CUDA_SUCCESS) return r;
  if (!s.options.stream_mem_ops_64) return CUDA_ERROR_NOT_SUPPORTED;
  if (addr % sizeof(uint64_t) != 0 || !accessible(s, addr, sizeof(uint64_t), write))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// The condition of a CUstreamWaitValue_flags type (FLUSH bit removed), as cuda.h defines it.
bool wait_condition_holds(uint64_t seen, uint64_t value, unsigned type) {
  switch (type) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return static_cast<int64_t>(seen - value) >= 0;  // cyclic, not unsigned
    case CU_STREAM_WAIT_VALUE_EQ:
      return seen == value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (seen & value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR:
      return ~(seen | value) != 0;
    default:
      return false;
  }
}

// The special handles name the current context's streams; other handles must be live
// streams of create_stream (a destroyed or made-up one is CUDA_ERROR_INVALID_HANDLE, where
// libcuda's behaviour is undefined). *entry (when given) gets create_stream's record of the
// stream, nullptr for the special handles. The caller holds the emulator's lock.
CUresult stream_context(const State& s, CUstream stream, CUcontext* context,
                        const State::Stream** entry = nullptr) {
  if (entry) *entry = nullptr;
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    if (t_current.generation != s.generation || t_current.context == nullptr)
      return CUDA_ERROR_INVALID_CONTEXT;
    *context = t_current.context;
    return CUDA_SUCCESS;
  }
  auto it = s.streams.find(stream);
  if (it == s.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  *context = context_of(it->second.device);
  if (entry) *entry = &it->second;
  return CUDA_SUCCESS;
}

CUresult emu_cuStreamGetCtx(CUstream stream, CUcontext* context) {
  EMU_ENTER();
  if (!context) return CUDA_ERROR_INVALID_VALUE;
  return stream_context(s, stream, context);
}

// A stream is capturing from set_capturing(stream, true) to set_capturing(stream, false);
// the special handles never are. Handles as in cuStreamGetCtx.
CUresult emu_cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  EMU_ENTER();
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  CUcontext owner = nullptr;
  const State::Stream* live = nullptr;
  const CUresult r = stream_context(s, stream, &owner, &live);
  if (r != CUDA_SUCCESS) return r;
  *status = live && live->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                    : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult emu_cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                  unsigned int flags) {
  EMU_ENTER();
  (void)stream;
  if (flags != CU_STREAM_WRITE_VALUE_DEFAULT && flags != CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_mem_op(s, addr, true);
  if (r != CUDA_SUCCESS) return r;
  __atomic_store_n(reinterpret_cast<uint64_t*>(addr), static_cast<uint64_t>(value),
                   __ATOMIC_SEQ_CST);
  return CUDA_SUCCESS;
}

// Polls with the lock taken only around each check and load, so that writers (other
// threads, other processes through shared memory) make progress while it waits.
CUresult emu_cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                 unsigned int flags) {
  (void)stream;
  const unsigned flush = static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH);
  const unsigned type = flags & ~flush;
  std::chrono::steady_clock::time_point deadline;
  for (bool first = true;; first = false) {
    {
      EMU_ENTER();
      if (first) {
        if (type > static_cast<unsigned>(CU_STREAM_WAIT_VALUE_NOR)) return CUDA_ERROR_INVALID_VALUE;
        if (flags & flush) return CUDA_ERROR_NOT_SUPPORTED;  // CAN_FLUSH_REMOTE_WRITES is 0
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(s.options.stream_wait_timeout_ms);
      }
      CUresult r = check_mem_op(s, addr, false);
      if (r != CUDA_SUCCESS) return r;
      const uint64_t seen =
          __atomic_load_n(reinterpret_cast<const uint64_t*>(addr), __ATOMIC_SEQ_CST);
      if (wait_condition_holds(seen, static_cast<uint64_t>(value), type)) return CUDA_SUCCESS;
    }
    if (std::chrono::steady_clock::now() >= deadline) return CUDA_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// -- Tensor maps

bool sm90_dtype(CUtensorMapDataType dtype) {
  return static_cast<int>(dtype) >= 0 &&
         static_cast<int>(dtype) <= static_cast<int>(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ);
}

bool float_dtype(CUtensorMapDataType dtype) {
  switch (dtype) {
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return true;
    default:
      return false;
  }
}

// The rules of the cuTensorMapEncodeTiled documentation, for an sm_90 device.
bool tiled_arguments_valid(const CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank,
                           const void* address, const cuuint64_t* dims, const cuuint64_t* strides,
                           const cuuint32_t* box, const cuuint32_t* estrides,
                           CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                           CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  if (!map || reinterpret_cast<uintptr_t>(map) % 64 != 0) return false;
  if (!sm90_dtype(dtype)) return false;
  const size_t esize = tensor_element_bytes(dtype);
  if (rank < 1 || rank > 5) return false;
  // Through int: the enums' underlying type may be unsigned.
  if (static_cast<int>(interleave) < 0 || interleave > CU_TENSOR_MAP_INTERLEAVE_32B) return false;
  if (static_cast<int>(swizzle) < 0 || swizzle > CU_TENSOR_MAP_SWIZZLE_128B) return false;
  if (static_cast<int>(l2) < 0 || l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B) return false;
  if (oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE &&
      (oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA || !float_dtype(dtype)))
    return false;
  const bool interleaved = interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  if (interleaved && rank < 3) return false;
  const uintptr_t addr_align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (reinterpret_cast<uintptr_t>(address) % addr_align != 0) return false;
  if (!dims || !box || !estrides || (rank > 1 && !strides)) return false;
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (uint64_t(1) << 32)) return false;
    if (box[i] == 0 || box[i] > 256) return false;
    if (estrides[i] == 0 || estrides[i] > 8) return false;
  }
  const uint64_t stride_align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  for (cuuint32_t i = 0; i + 1 < rank; ++i)
    if (strides[i] % stride_align != 0 || strides[i] >= (uint64_t(1) << 40)) return false;
  const size_t inner_bytes = box[0] * esize;
  if (!interleaved && inner_bytes % 16 != 0) return false;
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
    return false;
  if (!interleaved && swizzle != CU_TENSOR_MAP_SWIZZLE_NONE) {
    size_t span = swizzle == CU_TENSOR_MAP_SWIZZLE_32B   ? 32
                  : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                                                         : 128;
    if (inner_bytes > span) return false;
  }
  return true;
}

// No kernels run on the emulated driver (the CPU tests link no device library).
CUresult emu_cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void**, void**) {
  EMU_ENTER();
  (void)s;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult emu_cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank,
                                    void* address, const cuuint64_t* dims,
                                    const cuuint64_t* strides, const cuuint32_t* box,
                                    const cuuint32_t* estrides, CUtensorMapInterleave interleave,
                                    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                    CUtensorMapFloatOOBfill oob) {
  EMU_ENTER();
  (void)s;
  if (!tiled_arguments_valid(map, dtype, rank, address, dims, strides, box, estrides, interleave,
                             swizzle, l2, oob))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t* w = map->opaque;
  std::memset(w, 0, sizeof map->opaque);
  w[0] = kTensorMapMagic;
  w[1] = uint64_t(static_cast<uint8_t>(dtype)) | uint64_t(static_cast<uint8_t>(rank)) << 8 |
         uint64_t(static_cast<uint8_t>(interleave)) << 16 |
         uint64_t(static_cast<uint8_t>(swizzle)) << 24 | uint64_t(static_cast<uint8_t>(l2)) << 32 |
         uint64_t(static_cast<uint8_t>(oob)) << 40;
  w[2] = reinterpret_cast<uintptr_t>(address);
  for (cuuint32_t i = 0; i < rank; ++i) {
    w[3 + i] = dims[i];
    if (i + 1 < rank) w[8 + i] = strides[i];
    if (i < 4)
      w[12] |= uint64_t(box[i]) << (16 * i);
    else
      w[13] |= uint64_t(box[i]);
    w[13] |= uint64_t(estrides[i]) << (16 + 8 * i);
  }
  return CUDA_SUCCESS;
}

#undef EMU_ENTER
#undef EMU_ENTER_MULTICAST

void build_table(const Options& options) {
  g_table = DriverApi();
#define TMASHMEM_EMU_ASSIGN(name, sig) g_table.name = &emu_##name;
  TMASHMEM_DRIVER_FUNCTIONS(TMASHMEM_EMU_ASSIGN)
  if (options.multicast_entries) {
    TMASHMEM_DRIVER_MULTICAST_FUNCTIONS(TMASHMEM_EMU_ASSIGN)
  }
#undef TMASHMEM_EMU_ASSIGN
  g_table.origin = kOrigin;
}

bool state_is_empty(const State& s) {
  return s.allocations.empty() && s.mappings.empty() && s.reservations.empty() &&
         s.buffers.empty() && s.multicasts.empty();
}

}  // namespace

size_t tensor_element_bytes(CUtensorMapDataType dtype) {
  switch (dtype) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

bool decode_tensor_map(const CUtensorMap& map, TensorMapFields* out) {
  const uint64_t* w = map.opaque;
  if (w[0] != kTensorMapMagic || !out) return false;
  TensorMapFields f;
  std::memset(&f, 0, sizeof f);
  f.dtype = static_cast<CUtensorMapDataType>(w[1] & 0xff);
  f.rank = static_cast<uint32_t>((w[1] >> 8) & 0xff);
  f.interleave = static_cast<CUtensorMapInterleave>((w[1] >> 16) & 0xff);
  f.swizzle = static_cast<CUtensorMapSwizzle>((w[1] >> 24) & 0xff);
  f.l2_promotion = static_cast<CUtensorMapL2promotion>((w[1] >> 32) & 0xff);
  f.oob_fill = static_cast<CUtensorMapFloatOOBfill>((w[1] >> 40) & 0xff);
  if (f.rank < 1 || f.rank > 5) return false;
  f.address = w[2];
  for (uint32_t i = 0; i < 5; ++i) {
    f.dims[i] = w[3 + i];
    if (i < 4) {
      f.strides[i] = w[8 + i];
      f.box[i] = static_cast<uint32_t>((w[12] >> (16 * i)) & 0xffff);
    } else {
      f.box[i] = static_cast<uint32_t>(w[13] & 0xffff);
    }
    f.element_strides[i] = static_cast<uint32_t>((w[13] >> (16 + 8 * i)) & 0xff);
  }
  *out = f;
  return true;
}

namespace {

// TMASHMEM_EMU_MULTICAST_FAIL=STEP[:N] (see the header).
void parse_multicast_fail(const char* text, Options* o) {
  static const std::pair<const char*, MulticastStep> kSteps[] = {
      {"granularity", MulticastStep::Granularity}, {"create", MulticastStep::Create},
      {"export", MulticastStep::Export},           {"import", MulticastStep::Import},
      {"add_device", MulticastStep::AddDevice},    {"map", MulticastStep::Map},
      {"set_access", MulticastStep::SetAccess},    {"bind", MulticastStep::Bind}};
  std::string value(text), name = value, count;
  const size_t colon = value.find(':');
  if (colon != std::string::npos) {
    name = value.substr(0, colon);
    count = value.substr(colon + 1);
  }
  for (const auto& step : kSteps) {
    if (name != step.first) continue;
    o->multicast_fail = step.second;
    o->multicast_fail_call = 1;
    if (!count.empty()) {
      char* end = nullptr;
      long n = std::strtol(count.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 1000000)
        throw std::invalid_argument(std::string(kEnvMulticastFail) + "=" + value +
                                    ": the call number after ':' must be 1 or more");
      o->multicast_fail_call = static_cast<int>(n);
    }
    return;
  }
  throw std::invalid_argument(std::string(kEnvMulticastFail) + "=" + value +
                              ": expected granularity, create, export, import, add_device, map, "
                              "set_access or bind, optionally :N");
}

}  // namespace

void install(const Options& options) {
  Options o = options;
  if (const char* env = std::getenv(kEnvDevices)) {
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || errno != 0 || n < 0 || n > kMaxDevices)
      throw std::invalid_argument(std::string(kEnvDevices) + "=" + env +
                                  ": expected a device count from 0 to 64");
    o.device_count = static_cast<int>(n);
  }
  if (o.device_count < 0 || o.device_count > kMaxDevices)
    throw std::invalid_argument("tmashmem::emu::Options::device_count must be 0..64");
  long page = ::sysconf(_SC_PAGESIZE);
  if (!is_power_of_two(o.granularity) || page <= 0 ||
      o.granularity % static_cast<size_t>(page) != 0)
    throw std::invalid_argument(
        "tmashmem::emu::Options::granularity must be a power of two multiple of the page size");
  for (const auto& pair : o.no_p2p)
    if (pair.first < 0 || pair.second < 0 || pair.first >= kMaxDevices ||
        pair.second >= kMaxDevices)
      throw std::invalid_argument("tmashmem::emu::Options::no_p2p names a device outside 0..63");
  if (const char* env = std::getenv(kEnvMulticastFail)) parse_multicast_fail(env, &o);
  if (!is_power_of_two(o.multicast_granularity) || page <= 0 ||
      o.multicast_granularity % static_cast<size_t>(page) != 0 ||
      o.multicast_recommended_granularity == 0 ||
      o.multicast_recommended_granularity % o.multicast_granularity != 0)
    throw std::invalid_argument(
        "tmashmem::emu::Options: multicast_granularity must be a power of two multiple of the "
        "page size, and multicast_recommended_granularity a multiple of it");
  if (o.stream_wait_timeout_ms < 0)
    throw std::invalid_argument("tmashmem::emu::Options::stream_wait_timeout_ms must be >= 0");
  if (!o.device_name) o.device_name = "";

  {
    std::lock_guard<std::mutex> lock(g_mutex);
    // A previous emulator with live objects is leaked on purpose: the runtime or a test may
    // still hold pointers into its mappings, which must stay valid.
    if (g_state && state_is_empty(*g_state)) {
      for (const auto& stream : g_state->streams) delete reinterpret_cast<char*>(stream.first);
      delete g_state;
    }
    g_state = new State();
    g_state->options = o;
    g_state->generation = ++g_generation;
    g_multicast_calls = 0;
    build_table(o);
  }
  install_driver(&g_table);
}

void uninstall() { install_driver(nullptr); }

CUstream create_stream(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_state || !valid_device(*g_state, device))
    throw std::invalid_argument("tmashmem::emu::create_stream: no such device");
  auto stream = reinterpret_cast<CUstream>(new char);
  g_state->streams[stream] = State::Stream{device, false};
  return stream;
}

void destroy_stream(CUstream stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state && g_state->streams.erase(stream)) delete reinterpret_cast<char*>(stream);
}

void set_capturing(CUstream stream, bool capturing) {
  std::lock_guard<std::mutex> lock(g_mutex);
  State::Stream* live = nullptr;
  if (g_state) {
    const auto it = g_state->streams.find(stream);
    if (it != g_state->streams.end()) live = &it->second;
  }
  if (!live) throw std::invalid_argument("tmashmem::emu::set_capturing: no such stream");
  live->capturing = capturing;
}

Counts counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  Counts c;
  std::memset(&c, 0, sizeof c);
  if (!g_state) return c;
  const State& s = *g_state;
  for (const auto& entry : s.allocations) {
    const Allocation& a = entry.second;
    if (a.handle_live) ++c.allocations;
    if (a.fd >= 0) ++c.open_memfds;
    if (a.created) c.created_bytes += a.bytes;
  }
  c.mappings = static_cast<long>(s.mappings.size());
  c.reservations = static_cast<long>(s.reservations.size());
  c.device_buffers = static_cast<long>(s.buffers.size());
  c.multicast_calls = g_multicast_calls;
  for (const auto& entry : s.multicasts) {
    ++c.multicast_objects;
    ++c.open_memfds;
    c.multicast_binds += static_cast<long>(entry.second.binds.size());
  }
  for (const auto& entry : s.mappings) c.multicast_mappings += entry.second.multicast ? 1 : 0;
  return c;
}

std::vector<std::string> multicast_log() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_state ? g_state->multicast_log : std::vector<std::string>();
}

}  // namespace emu
}  // namespace tmashmem
