#include "bootstrap/nccl_bootstrap.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "bootstrap/nccl_api.h"

namespace tmashmem {
namespace {

using Clock = std::chrono::steady_clock;

// Makes `device` current for the scope and puts the caller's device back.
class DeviceScope {
 public:
  DeviceScope(const NcclApi& api, int device) : api_(api) {
    if (api_.GetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) api_.SetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) api_.SetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  const NcclApi& api_;
  int previous_ = -1;
};

class NcclBootstrap final : public Bootstrap {
 public:
  NcclBootstrap(const NcclApi& api, ncclComm_t comm, int device, int timeout_ms)
      : api_(api), comm_(comm), device_(device), timeout_ms_(timeout_ms) {}
  ~NcclBootstrap() override {
    if (failed_) return;  // a stuck collective may still use the buffer and the stream
    DeviceScope scope(api_, device_);
    if (buffer_) api_.Free(buffer_);
    if (stream_) api_.StreamDestroy(stream_);
  }

  const char* name() const override { return "nccl"; }

  tmashmem_status_t init_ranks(std::string* why) {
    ncclResult_t r = api_.CommUserRank(comm_, &rank_);
    if (r == ncclSuccess) r = api_.CommCount(comm_, &size_);
    if (r != ncclSuccess) {
      *why = std::string("the NCCL bootstrap could not query the communicator: ") +
             api_.GetErrorString(r) +
             " (is tmashmem_init_attr_t.nccl_comm an initialised ncclComm_t?)";
      return TMASHMEM_ERROR_INVALID_VALUE;
    }
    DeviceScope scope(api_, device_);
    cudaError_t e = api_.StreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      stream_ = nullptr;
      *why = std::string("the NCCL bootstrap could not create its stream: ") +
             api_.GetErrorStringCuda(e);
      return TMASHMEM_ERROR_BOOTSTRAP;
    }
    return TMASHMEM_SUCCESS;
  }

  tmashmem_status_t allgather(const void* mine, void* out, size_t bytes) override {
    if (bytes == 0) return barrier();
    size_t total = bytes * static_cast<size_t>(size_);
    DeviceScope scope(api_, device_);
    char* d = nullptr;
    if (tmashmem_status_t st = staging(bytes + total, &d, "allgather")) return st;
    if (tmashmem_status_t st = copy(d, mine, bytes, cudaMemcpyHostToDevice, "allgather")) return st;
    ncclResult_t r = api_.AllGather(d, d + bytes, bytes, ncclUint8, comm_, stream_);
    if (tmashmem_status_t st = finish(r, "allgather (ncclAllGather)")) return st;
    return copy(out, d + bytes, total, cudaMemcpyDeviceToHost, "allgather");
  }

  tmashmem_status_t broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return fail(TMASHMEM_ERROR_INVALID_VALUE, "broadcast root %d out of range [0, %d)", root,
                  size_);
    if (bytes == 0) return barrier();
    DeviceScope scope(api_, device_);
    char* d = nullptr;
    if (tmashmem_status_t st = staging(bytes, &d, "broadcast")) return st;
    if (rank_ == root)
      if (tmashmem_status_t st = copy(d, data, bytes, cudaMemcpyHostToDevice, "broadcast"))
        return st;
    ncclResult_t r = api_.Broadcast(d, d, bytes, ncclUint8, root, comm_, stream_);
    if (tmashmem_status_t st = finish(r, "broadcast (ncclBroadcast)")) return st;
    return copy(data, d, bytes, cudaMemcpyDeviceToHost, "broadcast");
  }

  tmashmem_status_t barrier() override {
    DeviceScope scope(api_, device_);
    char* d = nullptr;
    if (tmashmem_status_t st = staging(sizeof(int32_t), &d, "barrier")) return st;
    ncclResult_t r = api_.AllReduce(d, d, 1, ncclInt32, ncclSum, comm_, stream_);
    return finish(r, "barrier (ncclAllReduce of one word)");
  }

 private:
  tmashmem_status_t usable(const char* step) {
    if (!failed_) return TMASHMEM_SUCCESS;
    return fail(TMASHMEM_ERROR_BOOTSTRAP,
                "NCCL bootstrap %s after an earlier failure: the ranks are out of step (the "
                "ncclComm_t is yours: abort or keep it as you see fit)",
                step);
  }

  // A device buffer of at least `bytes` (grown by doubling, kept until destruction).
  tmashmem_status_t staging(size_t bytes, char** out, const char* step) {
    if (tmashmem_status_t st = usable(step)) return st;
    if (bytes > capacity_) {
      size_t grown = capacity_ ? capacity_ : 4096;
      while (grown < bytes) grown *= 2;
      if (buffer_) api_.Free(buffer_);
      buffer_ = nullptr;
      capacity_ = 0;
      cudaError_t e = api_.Malloc(&buffer_, grown);
      if (e != cudaSuccess) {
        buffer_ = nullptr;
        return fail(TMASHMEM_ERROR_OUT_OF_MEMORY,
                    "NCCL bootstrap %s: cudaMalloc of %zu staging bytes on device %d failed: %s",
                    step, grown, device_, api_.GetErrorStringCuda(e));
      }
      capacity_ = grown;
    }
    *out = static_cast<char*>(buffer_);
    return TMASHMEM_SUCCESS;
  }

  // Only after the stream is idle (a pageable copy could otherwise wait unbounded).
  tmashmem_status_t copy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind,
                         const char* step) {
    cudaError_t e = api_.Memcpy(to, from, bytes, kind);
    if (e == cudaSuccess) return TMASHMEM_SUCCESS;
    failed_ = true;
    return fail(TMASHMEM_ERROR_BOOTSTRAP, "NCCL bootstrap %s: staging copy failed: %s", step,
                api_.GetErrorStringCuda(e));
  }

  // Waits for the collective on the private stream, polling against the deadline.
  tmashmem_status_t finish(ncclResult_t launched, const char* step) {
    if (launched != ncclSuccess) {
      failed_ = true;
      return fail(TMASHMEM_ERROR_BOOTSTRAP, "NCCL bootstrap %s failed to start: %s", step,
                  api_.GetErrorString(launched));
    }
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    for (int spins = 0;; ++spins) {
      cudaError_t e = api_.StreamQuery(stream_);
      if (e == cudaSuccess) return TMASHMEM_SUCCESS;
      if (e != cudaErrorNotReady) {
        failed_ = true;
        return fail(TMASHMEM_ERROR_BOOTSTRAP, "NCCL bootstrap %s failed on the GPU: %s", step,
                    api_.GetErrorStringCuda(e));
      }
      ncclResult_t async = ncclSuccess;
      api_.CommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        failed_ = true;
        return fail(TMASHMEM_ERROR_BOOTSTRAP,
                    "NCCL bootstrap %s: the communicator reports %s (aborting it is your "
                    "decision: ncclCommAbort)",
                    step, api_.GetErrorString(async));
      }
      if (Clock::now() > deadline) {
        failed_ = true;
        return fail(TMASHMEM_ERROR_TIMEOUT,
                    "NCCL bootstrap %s timed out after %d ms on rank %d of %d: some rank did not "
                    "make the same call (NCCL cannot say which). The ncclComm_t is yours: "
                    "tmashmem does not abort it; call ncclCommAbort if the job cannot go on",
                    step, timeout_ms_, rank_, size_);
      }
      if (spins > 200) usleep(50);
    }
  }

  const NcclApi& api_;
  ncclComm_t comm_;
  int device_;
  int timeout_ms_;
  cudaStream_t stream_ = nullptr;
  void* buffer_ = nullptr;
  size_t capacity_ = 0;
  bool failed_ = false;
};

}  // namespace

tmashmem_status_t make_nccl_bootstrap(const BootstrapOptions& options,
                                      std::unique_ptr<Bootstrap>* out, std::string* message) {
  if (!options.nccl_comm) {
    *message =
        "TMASHMEM_BOOTSTRAP=nccl needs tmashmem_init_attr_t.nccl_comm (an initialised ncclComm_t)";
    return TMASHMEM_ERROR_INVALID_VALUE;
  }
  const NcclApi* api = nccl_api(message);
  if (!api) return TMASHMEM_ERROR_NOT_SUPPORTED;
  auto comm = static_cast<ncclComm_t>(options.nccl_comm);
  int device = -1;
  ncclResult_t r = api->CommCuDevice(comm, &device);
  if (r != ncclSuccess) {
    *message = std::string("the NCCL bootstrap could not query the communicator's device: ") +
               api->GetErrorString(r);
    return TMASHMEM_ERROR_INVALID_VALUE;
  }
  auto made = std::make_unique<NcclBootstrap>(*api, comm, device, options.timeout_ms);
  tmashmem_status_t st = made->init_ranks(message);
  if (st != TMASHMEM_SUCCESS) return st;
  *out = std::move(made);
  return TMASHMEM_SUCCESS;
}

}  // namespace tmashmem
