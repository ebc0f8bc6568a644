// Device RMA against a CPU reference (tmashmem/device/rma.cuh): ptr, p/g, and
// put/get at thread, warp and block scope and as bulk nbi copies. Sizes from 1 byte
// to 64 MiB, odd sizes, misaligned source and destination starts, guard bytes
// around every destination, fresh random data every run, every PE with every PE.
#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu_test_util.cuh"

using namespace gpu_test;
using tmashmem::BulkStage;

namespace {

constexpr size_t kGuard = 64;                   // checked bytes before and after each case
constexpr size_t kMaxBytes = size_t(64) << 20;  // largest transfer
constexpr size_t kBufferBytes = kMaxBytes + (size_t(1) << 20);
constexpr size_t kThreadScopeMax = (size_t(1) << 20) + 3;  // one thread copies at most this much
constexpr int kNbiThreads = 4;
constexpr uint32_t kStageBytes = 8192;

enum class Op { Put, Get };
enum class Scope { Thread, Warp, Block, Nbi };

const char* name(Op op) { return op == Op::Put ? "put" : "get"; }
const char* name(Scope s) {
  constexpr const char* kNames[] = {"thread", "warp", "block", "nbi"};  // in Scope's order
  return kNames[static_cast<int>(s)];
}

// One transfer: `bytes` from source-buffer offset `src` to destination-buffer
// offset `dst`. Put: local buffer -> the peer's symmetric buffer. Get: the peer's
// symmetric buffer -> local buffer.
struct Case {
  uint64_t src;
  uint64_t dst;
  uint64_t bytes;
};

struct Batch {
  std::vector<Case> cases;
  size_t dst_bytes = 0;  // destination bytes covered, guards included
};

template <Op kOp, Scope kScope>
__device__ void run_case(const tmashmem_ctx_t& ctx, const Case& c, uint8_t* sym, uint8_t* loc,
                         int pe, BulkStage stage) {
  // A put reads local memory and writes the peer's symmetric copy; a get the other way.
  constexpr bool kPut = kOp == Op::Put;
  uint8_t* dst = kPut ? sym + c.dst : loc + c.dst;
  const uint8_t* src = kPut ? loc + c.src : sym + c.src;
  if constexpr (kPut && kScope == Scope::Thread) tmashmem::putmem(ctx, dst, src, c.bytes, pe);
  if constexpr (kPut && kScope == Scope::Warp) tmashmem::putmem_warp(ctx, dst, src, c.bytes, pe);
  if constexpr (kPut && kScope == Scope::Block) tmashmem::putmem_block(ctx, dst, src, c.bytes, pe);
  if constexpr (kPut && kScope == Scope::Nbi)
    tmashmem::putmem_nbi(ctx, dst, src, c.bytes, pe, stage);
  if constexpr (!kPut && kScope == Scope::Thread) tmashmem::getmem(ctx, dst, src, c.bytes, pe);
  if constexpr (!kPut && kScope == Scope::Warp) tmashmem::getmem_warp(ctx, dst, src, c.bytes, pe);
  if constexpr (!kPut && kScope == Scope::Block) tmashmem::getmem_block(ctx, dst, src, c.bytes, pe);
  if constexpr (!kPut && kScope == Scope::Nbi)
    tmashmem::getmem_nbi(ctx, dst, src, c.bytes, pe, stage);
}

// Thread scope: thread t runs cases t, t + threads, ... Warp scope: warp w runs
// cases w, w + warps, ... (launched with a partial last warp). Block scope: the
// block runs them all. Nbi: kNbiThreads threads, each with its own staging of a
// different size and alignment, then quiet().
template <Op kOp, Scope kScope>
__global__ void transfer_kernel(const __grid_constant__ tmashmem_ctx_t ctx, const Case* cases,
                                int n_cases, uint8_t* sym, uint8_t* loc, int pe) {
  __shared__ __align__(16) uint8_t stage_memory[kNbiThreads][kStageBytes + 32];
  const unsigned tid = tmashmem::detail::block_thread_rank();
  const unsigned threads = tmashmem::detail::block_thread_count();
  if constexpr (kScope == Scope::Thread) {
    for (int c = static_cast<int>(tid); c < n_cases; c += static_cast<int>(threads))
      run_case<kOp, kScope>(ctx, cases[c], sym, loc, pe, BulkStage{});
  } else if constexpr (kScope == Scope::Warp) {
    const int warp = static_cast<int>(tid / 32), warps = static_cast<int>((threads + 31) / 32);
    for (int c = warp; c < n_cases; c += warps)
      run_case<kOp, kScope>(ctx, cases[c], sym, loc, pe, BulkStage{});
  } else if constexpr (kScope == Scope::Block) {
    for (int c = 0; c < n_cases; ++c)
      run_case<kOp, kScope>(ctx, cases[c], sym, loc, pe, BulkStage{});
  } else {
    // Stages: full size; odd size at an odd address; the minimum; mid-size, misaligned.
    const uint32_t offsets[kNbiThreads] = {0, 5, 16, 3};
    const uint32_t sizes[kNbiThreads] = {kStageBytes, 1000, tmashmem::kBulkStageMinBytes, 4096 + 7};
    if (tid < kNbiThreads) {
      const BulkStage stage{stage_memory[tid] + offsets[tid], sizes[tid]};
      for (int c = static_cast<int>(tid); c < n_cases; c += kNbiThreads)
        run_case<kOp, kScope>(ctx, cases[c], sym, loc, pe, stage);
      tmashmem::quiet();
    }
  }
}

template <Op kOp, Scope kScope>
cudaError_t launch_transfer(const tmashmem_ctx_t& ctx, const Case* cases, int n_cases, uint8_t* sym,
                            uint8_t* loc, int pe) {
  dim3 block;
  switch (kScope) {
    case Scope::Thread:
      block = dim3(64);
      break;
    case Scope::Warp:
      block = dim3(80);
      break;  // warps of 32, 32 and 16 lanes
    case Scope::Block:
      block = dim3(8, 5, 4);
      break;  // 160 threads in three dimensions
    case Scope::Nbi:
      block = dim3(64);
      break;
  }
  transfer_kernel<kOp, kScope><<<1, block>>>(ctx, cases, n_cases, sym, loc, pe);
  return cudaGetLastError();
}

cudaError_t launch_transfer(Op op, Scope scope, const tmashmem_ctx_t& ctx, const Case* cases,
                            int n_cases, uint8_t* sym, uint8_t* loc, int pe) {
#define GPU_TEST_LAUNCH(O, S) \
  if (op == O && scope == S) return launch_transfer<O, S>(ctx, cases, n_cases, sym, loc, pe)
  GPU_TEST_LAUNCH(Op::Put, Scope::Thread);
  GPU_TEST_LAUNCH(Op::Put, Scope::Warp);
  GPU_TEST_LAUNCH(Op::Put, Scope::Block);
  GPU_TEST_LAUNCH(Op::Put, Scope::Nbi);
  GPU_TEST_LAUNCH(Op::Get, Scope::Thread);
  GPU_TEST_LAUNCH(Op::Get, Scope::Warp);
  GPU_TEST_LAUNCH(Op::Get, Scope::Block);
  GPU_TEST_LAUNCH(Op::Get, Scope::Nbi);
#undef GPU_TEST_LAUNCH
  return cudaErrorInvalidValue;
}

size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Misalignments (source, destination) of every small case, covering equal
// residues mod 16 (16-byte path), mod 4 (word path) and neither (funnel path).
const std::vector<std::pair<size_t, size_t>> kSmallOffsets = {
    {0, 0}, {1, 1}, {3, 7}, {5, 0}, {0, 13}, {4, 8}, {8, 0}, {12, 4}, {15, 15}, {2, 9}};
const std::vector<std::pair<size_t, size_t>> kLargeOffsets = {{0, 0}, {3, 7}, {4, 12}};

std::vector<Batch> make_batches(Scope scope) {
  // 10224, 10240, 10256: 639, 640 and 641 units, either side of the block scope's switch
  // from one unit per step to copy_units at four units per thread of its 160 threads.
  const std::vector<size_t> small = {
      1,  2,   3,   4,   5,   7,   8,   9,   15,   16,   17,   31,   32,    33,    63,    64,
      65, 100, 127, 128, 129, 255, 256, 257, 1000, 4095, 4096, 4097, 10224, 10240, 10256, 65537};
  const std::vector<size_t> large = {(size_t(1) << 20) + 3, (size_t(16) << 20) + 7, kMaxBytes};
  std::vector<Batch> batches;
  Batch all_small;
  size_t cursor = 0;
  int index = 0;
  for (size_t bytes : small) {
    for (auto [src_mis, dst_mis] : kSmallOffsets) {
      Case c;
      c.src = (index++ % 13) * 16 + src_mis;  // < 256: sources overlap, they are only read
      c.dst = cursor + kGuard + dst_mis;
      c.bytes = bytes;
      cursor = align_up(c.dst + bytes + kGuard, 64);
      all_small.cases.push_back(c);
    }
  }
  all_small.dst_bytes = cursor;
  batches.push_back(all_small);
  for (size_t bytes : large) {
    if (scope == Scope::Thread && bytes > kThreadScopeMax) continue;
    for (auto [src_mis, dst_mis] : kLargeOffsets) {
      // Bulk copies need source and destination equal mod 16; otherwise nbi is a
      // one-thread copy, too slow for the largest sizes.
      if (scope == Scope::Nbi && (src_mis % 16 != dst_mis % 16) && bytes > kThreadScopeMax)
        continue;
      // The largest size once per path (aligned, word, funnel) is enough.
      if (bytes == kMaxBytes && scope == Scope::Thread) continue;
      Batch b;
      b.cases.push_back(Case{src_mis, kGuard + dst_mis, bytes});
      b.dst_bytes = align_up(kGuard + dst_mis + bytes + kGuard, 64);
      batches.push_back(b);
    }
  }
  return batches;
}

// Host reference of pattern bytes [base, base + n) of `seed`.
void reference(uint64_t seed, uint64_t base, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t index = base + i;
    if ((index & 7) == 0 && i + 8 <= n) {
      const uint64_t word = mix64(seed ^ mix64(index >> 3));
      std::memcpy(out + i, &word, 8);
      i += 7;
    } else {
      out[i] = pattern_byte(seed, index);
    }
  }
}

// Compares `got` (the destination buffer prefix) with the expected content:
// background everywhere, the writer's source pattern inside each case.
bool check_destination(const std::vector<uint8_t>& got, const Batch& batch, uint64_t background,
                       uint64_t data, const char* what, int writer) {
  std::vector<uint8_t> want(batch.dst_bytes);
  reference(background, 0, want.size(), want.data());
  for (const Case& c : batch.cases) reference(data, c.src, c.bytes, want.data() + c.dst);
  if (std::memcmp(want.data(), got.data(), want.size()) == 0) return true;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;
    if (bad++ >= 4) continue;
    const Case* in = nullptr;
    for (const Case& c : batch.cases)
      if (i >= c.dst && i < c.dst + c.bytes) in = &c;
    if (in)
      std::printf(
          "[PE %d] %s from PE %d: case (src %llu, dst %llu, %llu bytes) byte %zu is 0x%02x, "
          "expected 0x%02x\n",
          mpi_rank(), what, writer, (unsigned long long)in->src, (unsigned long long)in->dst,
          (unsigned long long)in->bytes, i - in->dst, got[i], want[i]);
    else
      std::printf(
          "[PE %d] %s from PE %d: guard byte at offset %zu changed to 0x%02x (was 0x%02x)\n",
          mpi_rank(), what, writer, i, got[i], want[i]);
  }
  std::printf("[PE %d] %s from PE %d: %zu wrong bytes\n", mpi_rank(), what, writer, bad);
  return false;
}

// Every PE moves every batch to (put) or from (get) every PE, round k pairing PE
// me with PE me + k, and checks what landed in its own destination buffer.
void run_transfers(Op op) {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* sym = static_cast<uint8_t*>(tmashmem_malloc(kBufferBytes));
  REQUIRE(all_ranks(sym != nullptr));
  uint8_t* loc = nullptr;
  Case* cases = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&loc, kBufferBytes));
  const size_t max_cases = 1024;
  ok &= GPU_TEST_CUDA(cudaMalloc(&cases, max_cases * sizeof(Case)));
  const tmashmem_ctx_t ctx = s.ctx();
  uint8_t* source = op == Op::Put ? loc : sym;
  uint8_t* destination = op == Op::Put ? sym : loc;
  // The source holds this PE's data pattern for the whole test.
  ok &= GPU_TEST_CUDA(fill_pattern(source, kBufferBytes, seed_for(1, s.me)));
  REQUIRE(all_ranks(ok));

  uint64_t round = 0;
  for (Scope scope : {Scope::Thread, Scope::Warp, Scope::Block, Scope::Nbi}) {
    const std::vector<Batch> batches = make_batches(scope);
    for (const Batch& batch : batches) {
      REQUIRE(batch.cases.size() <= max_cases);
      ok &= GPU_TEST_CUDA(cudaMemcpy(cases, batch.cases.data(), batch.cases.size() * sizeof(Case),
                                     cudaMemcpyHostToDevice));
      for (int k = 0; k < s.n; ++k, ++round) {
        const int target = (s.me + k) % s.n;
        const int writer = op == Op::Put ? (s.me + s.n - k) % s.n : target;
        const uint64_t background = seed_for(2, s.me, round);
        ok &= GPU_TEST_CUDA(fill_pattern(destination, batch.dst_bytes, background));
        ok &= sync_and_barrier();
        ok &= GPU_TEST_CUDA(launch_transfer(
            op, scope, ctx, cases, static_cast<int>(batch.cases.size()), sym, loc, target));
        ok &= sync_and_barrier();
        std::vector<uint8_t> got(batch.dst_bytes);
        ok &=
            GPU_TEST_CUDA(cudaMemcpy(got.data(), destination, got.size(), cudaMemcpyDeviceToHost));
        char what[64];
        std::snprintf(what, sizeof what, "%s_%s (%zu cases)", name(op), name(scope),
                      batch.cases.size());
        ok &= check_destination(got, batch, background, seed_for(1, writer), what, writer);
      }
    }
  }
  CHECK(all_ranks(ok));
  cudaFree(cases);
  cudaFree(loc);
  tmashmem_free(sym);
}

__global__ void ptr_kernel(const __grid_constant__ tmashmem_ctx_t ctx, uint8_t* sym, uint64_t* out,
                           int* reachable) {
  for (int q = threadIdx.x; q < ctx.n_pes; q += blockDim.x) {
    out[q] = reinterpret_cast<uint64_t>(tmashmem::ptr(ctx, sym + 123, q));
    reachable[q] = tmashmem::is_reachable(ctx, q) ? 1 : 0;
  }
}

// p/g payloads: every scalar size, plus an 8-byte struct.
struct Pair {
  int32_t a;
  float b;
};
constexpr int kScalars = 64;
struct Scalars {
  uint8_t u8[kScalars];
  uint16_t u16[kScalars];
  uint32_t u32[kScalars];
  uint64_t u64[kScalars];
  alignas(8) Pair pair[kScalars];
  double f64[kScalars];
};

Scalars make_scalars(uint64_t seed) {
  Scalars v;
  for (int i = 0; i < kScalars; ++i) {
    const uint64_t x = mix64(seed + uint64_t(i));
    v.u8[i] = static_cast<uint8_t>(x);
    v.u16[i] = static_cast<uint16_t>(x >> 8);
    v.u32[i] = static_cast<uint32_t>(x >> 16);
    v.u64[i] = mix64(x);
    v.pair[i] = Pair{static_cast<int32_t>(x >> 20), static_cast<float>(x % 1000) * 0.5f};
    v.f64[i] = static_cast<double>(x >> 11) * 1e-3;
  }
  return v;
}

bool same(const Scalars& a, const Scalars& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Thread i stores element i of every array of `values` into `target`'s `dest`.
__global__ void p_kernel(const __grid_constant__ tmashmem_ctx_t ctx, Scalars* dest,
                         const Scalars* values, int target) {
  const int i = threadIdx.x;
  tmashmem::p(ctx, &dest->u8[i], values->u8[i], target);
  tmashmem::p(ctx, &dest->u16[i], values->u16[i], target);
  tmashmem::p(ctx, &dest->u32[i], values->u32[i], target);
  tmashmem::p(ctx, &dest->u64[i], values->u64[i], target);
  tmashmem::p(ctx, &dest->pair[i], values->pair[i], target);
  tmashmem::p(ctx, &dest->f64[i], values->f64[i], target);
}

// Thread i loads element i of every array of `target`'s `src` into `out`.
__global__ void g_kernel(const __grid_constant__ tmashmem_ctx_t ctx, const Scalars* src,
                         Scalars* out, int target) {
  const int i = threadIdx.x;
  out->u8[i] = tmashmem::g(ctx, &src->u8[i], target);
  out->u16[i] = tmashmem::g(ctx, &src->u16[i], target);
  out->u32[i] = tmashmem::g(ctx, &src->u32[i], target);
  out->u64[i] = tmashmem::g(ctx, &src->u64[i], target);
  out->pair[i] = tmashmem::g(ctx, &src->pair[i], target);
  out->f64[i] = tmashmem::g(ctx, &src->f64[i], target);
}

}  // namespace

TEST_CASE("device ptr: matches tmashmem_ptr for every PE") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* sym = static_cast<uint8_t*>(tmashmem_malloc(4096));
  REQUIRE(all_ranks(sym != nullptr));
  uint64_t* out = nullptr;
  int* reachable = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&out, sizeof(uint64_t) * size_t(s.n)));
  ok &= GPU_TEST_CUDA(cudaMalloc(&reachable, sizeof(int) * size_t(s.n)));
  const tmashmem_ctx_t ctx = s.ctx();
  ptr_kernel<<<1, 64>>>(ctx, sym, out, reachable);
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
  std::vector<uint64_t> got(size_t(s.n));
  std::vector<int> got_reachable(size_t(s.n));
  ok &= GPU_TEST_CUDA(cudaMemcpy(got.data(), out, got.size() * 8, cudaMemcpyDeviceToHost));
  ok &= GPU_TEST_CUDA(cudaMemcpy(got_reachable.data(), reachable, got.size() * sizeof(int),
                                 cudaMemcpyDeviceToHost));
  for (int q = 0; q < s.n; ++q) {
    const uint64_t want = reinterpret_cast<uint64_t>(tmashmem_ptr(sym + 123, q));
    if (got[size_t(q)] != want || got_reachable[size_t(q)] != (want != 0 ? 1 : 0)) {
      std::printf("[PE %d] ptr(sym + 123, %d) = 0x%llx (reachable %d), tmashmem_ptr says 0x%llx\n",
                  s.me, q, (unsigned long long)got[size_t(q)], got_reachable[size_t(q)],
                  (unsigned long long)want);
      ok = false;
    }
  }
  ok &= got[size_t(s.me)] == reinterpret_cast<uint64_t>(sym + 123);
  CHECK(all_ranks(ok));
  cudaFree(out);
  cudaFree(reachable);
  tmashmem_free(sym);
}

TEST_CASE("device p and g: 1, 2, 4 and 8-byte scalars to and from every PE") {
  Session s;
  REQUIRE(all_ranks(s.ok));
  auto* area = static_cast<Scalars*>(tmashmem_malloc(sizeof(Scalars)));
  REQUIRE(all_ranks(area != nullptr));
  Scalars* staging = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&staging, sizeof(Scalars)));
  const tmashmem_ctx_t ctx = s.ctx();
  for (int k = 0; k < s.n; ++k) {
    const int target = (s.me + k) % s.n, writer = (s.me + s.n - k) % s.n;
    // p: this PE's values into the target's area.
    const Scalars mine = make_scalars(seed_for(3, s.me, uint64_t(k)));
    const Scalars zero{};
    ok &= GPU_TEST_CUDA(cudaMemcpy(area, &zero, sizeof zero, cudaMemcpyHostToDevice));
    ok &= GPU_TEST_CUDA(cudaMemcpy(staging, &mine, sizeof mine, cudaMemcpyHostToDevice));
    ok &= sync_and_barrier();
    p_kernel<<<1, kScalars>>>(ctx, area, staging, target);
    ok &= GPU_TEST_CUDA(cudaGetLastError());
    ok &= sync_and_barrier();
    Scalars got;
    ok &= GPU_TEST_CUDA(cudaMemcpy(&got, area, sizeof got, cudaMemcpyDeviceToHost));
    if (!same(got, make_scalars(seed_for(3, writer, uint64_t(k))))) {
      std::printf("[PE %d] p from PE %d (round %d): wrong values\n", s.me, writer, k);
      ok = false;
    }
    // g: the target's area, which now holds its writer's values.
    g_kernel<<<1, kScalars>>>(ctx, area, staging, target);
    ok &= GPU_TEST_CUDA(cudaGetLastError());
    ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
    ok &= GPU_TEST_CUDA(cudaMemcpy(&got, staging, sizeof got, cudaMemcpyDeviceToHost));
    const int targets_writer = (target + s.n - k) % s.n;
    if (!same(got, make_scalars(seed_for(3, targets_writer, uint64_t(k))))) {
      std::printf("[PE %d] g from PE %d (round %d): wrong values\n", s.me, target, k);
      ok = false;
    }
    ok &= sync_and_barrier();  // nobody overwrites an area another PE still reads
  }
  CHECK(all_ranks(ok));
  cudaFree(staging);
  tmashmem_free(area);
}

TEST_CASE("device put (thread, warp, block, nbi): 1 B..64 MiB, misaligned, guarded, every PE") {
  run_transfers(Op::Put);
}

TEST_CASE("device get (thread, warp, block, nbi): 1 B..64 MiB, misaligned, guarded, every PE") {
  run_transfers(Op::Get);
}
