// Host and device helpers shared by the GEMM test (test_gemm.cu), the fused tests
// (tests/gpu/fused) and the GEMM and fused benchmarks (tools/perf/gemm, tools/perf/fused):
// device buffers, random bf16 operands, the cuBLASLt reference C = A * B^T, and an
// element-by-element comparison that also checks the guard bytes around C.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <type_traits>

namespace gemm_ref {

// A cudaMalloc'ed array freed with its scope; p is nullptr when the allocation failed.
template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(size_t count) {
    if (cudaMalloc(&p, count * sizeof(T)) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

__host__ __device__ inline uint64_t hash64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// m[r * ld + c] = uniform bf16 in [-1, 1) for r < rows, c < cols; other elements untouched.
template <int kUnused = 0>
__global__ void fill_uniform_kernel(__nv_bfloat16* m, int64_t rows, int64_t cols, int64_t ld,
                                    uint64_t seed) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    const uint32_t bits = static_cast<uint32_t>(hash64(seed ^ hash64(static_cast<uint64_t>(i))));
    m[r * ld + c] = __float2bfloat16(static_cast<float>(bits >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

inline cudaError_t fill_uniform(__nv_bfloat16* m, int64_t rows, int64_t cols, int64_t ld,
                                uint64_t seed) {
  fill_uniform_kernel<><<<1024, 256>>>(m, rows, cols, ld, seed);
  return cudaGetLastError();
}

// dst[r * ld + c] = src[r * cols + c] converted to Out (float or bf16).
template <class Out>
__global__ void widen_rows_kernel(Out* dst, const __nv_bfloat16* src, int64_t rows, int64_t cols,
                                  int64_t ld) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[(i / cols) * ld + i % cols] = static_cast<Out>(src[i]);
}

template <class Out>
cudaError_t widen_rows(Out* dst, const __nv_bfloat16* src, int64_t rows, int64_t cols, int64_t ld) {
  widen_rows_kernel<Out><<<1024, 256>>>(dst, src, rows, cols, ld);
  return cudaGetLastError();
}

// C[M, N] (row-major, ldc) = A[M, K] (lda) * B^T through cuBLASLt, B [N, K] (ldb) or, with
// b_k_by_n, B [K, N] (ldb); bf16 inputs, fp32 compute, Out = float or bf16 results; the first
// heuristic's algorithm.
class LtGemm {
 public:
  LtGemm() { ok_ = cublasLtCreate(&handle_) == CUBLAS_STATUS_SUCCESS; }
  ~LtGemm() {
    release();
    if (workspace_) cudaFree(workspace_);
    if (handle_) cublasLtDestroy(handle_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Column-major view: C^T [N, M] = op(B) * (A [K, M] col-major), op(B) the transpose of
  // B [N, K] row-major (a [K, N] col-major matrix) or B [K, N] row-major itself.
  bool plan(int m, int n, int k, int64_t lda, int64_t ldb, int64_t ldc, bool out_f32,
            bool b_k_by_n = false) {
    release();
    if (!ok_) return false;
    if (!workspace_ && cudaMalloc(&workspace_, kWorkspace) != cudaSuccess) return false;
    const cudaDataType_t out = out_f32 ? CUDA_R_32F : CUDA_R_16BF;
    bool good = cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0;
    const cublasOperation_t op_b = b_k_by_n ? CUBLAS_OP_N : CUBLAS_OP_T, nn = CUBLAS_OP_N;
    good = good && cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &op_b,
                                                  sizeof op_b) == 0;
    good = good &&
           cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn) == 0;
    good = good && (b_k_by_n ? cublasLtMatrixLayoutCreate(&la_, CUDA_R_16BF, n, k, ldb)
                             : cublasLtMatrixLayoutCreate(&la_, CUDA_R_16BF, k, n, ldb)) == 0;
    good = good && cublasLtMatrixLayoutCreate(&lb_, CUDA_R_16BF, k, m, lda) == 0;
    good = good && cublasLtMatrixLayoutCreate(&lc_, out, n, m, ldc) == 0;
    good = good && cublasLtMatmulPreferenceCreate(&pref_) == 0;
    good = good &&
           cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &kWorkspace, sizeof kWorkspace) == 0;
    int found = 0;
    good = good &&
           cublasLtMatmulAlgoGetHeuristic(handle_, op_, la_, lb_, lc_, lc_, pref_, 1, &heuristic_,
                                          &found) == 0 &&
           found > 0;
    planned_ = good;
    return good;
  }

  cublasStatus_t run(const __nv_bfloat16* a, const __nv_bfloat16* b, void* c,
                     cudaStream_t stream = 0) const {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle_, op_, &alpha, b, la_, a, lb_, &beta, c, lc_, c, lc_,
                          &heuristic_.algo, workspace_, kWorkspace, stream);
  }

 private:
  void release() {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    if (lc_) cublasLtMatrixLayoutDestroy(lc_);
    if (lb_) cublasLtMatrixLayoutDestroy(lb_);
    if (la_) cublasLtMatrixLayoutDestroy(la_);
    if (op_) cublasLtMatmulDescDestroy(op_);
    pref_ = nullptr, lc_ = lb_ = la_ = nullptr, op_ = nullptr, planned_ = false;
  }

  static constexpr size_t kWorkspace = size_t(32) << 20;
  bool ok_ = false, planned_ = false;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

struct CheckCounts {
  unsigned long long wrong;   // elements of C outside the tolerance (or NaN)
  unsigned long long guards;  // guard or padding elements that changed
  unsigned int max_ratio;     // bits of the largest |err| / tol (a non-negative float)
  unsigned int max_err;       // bits of the largest |err|
};

// `base`: the whole allocation, `guard` elements, then M rows of ldc, then `guard` more;
// every element not in [0, M) x [0, N) must still hold `sentinel`. Elements in C must be
// within tol = tol_abs + tol_rel (|ref| + |c0|) of ref + c0, where c0 (laid out like C
// without the guards; nullptr: zeros) is what C held before a GEMM that adds into it.
template <class Out, class Bits>
__global__ void check_kernel(const Out* base, int64_t guard, int m, int n, int64_t ldc,
                             const float* ref, const Out* c0, float tol_abs, float tol_rel,
                             Bits sentinel, CheckCounts* counts) {
  static_assert(sizeof(Bits) == sizeof(Out), "Bits: the raw type of Out");
  const int64_t inner = int64_t(m) * ldc, total = inner + 2 * guard;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Bits raw = reinterpret_cast<const Bits*>(base)[i];
    const int64_t e = i - guard;
    const bool inside = e >= 0 && e < inner && (e % ldc) < n;
    if (!inside) {
      if (raw != sentinel) atomicAdd(&counts->guards, 1ull);
      continue;
    }
    const float out = static_cast<float>(base[i]);
    const float before = c0 ? static_cast<float>(c0[e]) : 0.0f;
    const float r = ref[(e / ldc) * n + (e % ldc)];
    const float err = fabsf(out - (r + before));
    const float tol = tol_abs + tol_rel * (fabsf(r) + fabsf(before));
    if (!(err <= tol)) atomicAdd(&counts->wrong, 1ull);
    const float ratio = err / tol;
    if (ratio == ratio) atomicMax(&counts->max_ratio, __float_as_uint(ratio));
    if (err == err) atomicMax(&counts->max_err, __float_as_uint(err));
  }
}

}  // namespace gemm_ref
