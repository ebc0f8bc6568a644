#include "bootstrap/bootstrap.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

namespace tmashmem {
namespace {

// Host name plus the kernel's boot id: two containers on one host with the same
// name but separate kernels cannot both be "local", and two hosts never are.
struct NodeIdentity {
  char text[192];
};

NodeIdentity this_node() {
  NodeIdentity id;
  std::memset(&id, 0, sizeof id);
  char host[96] = {0};
  gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  std::snprintf(id.text, sizeof id.text, "%s/%s", host, boot.c_str());
  return id;
}

class SingleBootstrap final : public Bootstrap {
 public:
  const char* name() const override { return "single"; }
  tmashmem_status_t allgather(const void* mine, void* out, size_t bytes) override {
    if (bytes) std::memmove(out, mine, bytes);
    return TMASHMEM_SUCCESS;
  }
  tmashmem_status_t broadcast(void*, size_t, int root) override {
    if (root != 0)
      return fail(TMASHMEM_ERROR_INVALID_VALUE, "broadcast root %d out of range [0, 1)", root);
    return TMASHMEM_SUCCESS;
  }
  tmashmem_status_t barrier() override { return TMASHMEM_SUCCESS; }
};

}  // namespace

tmashmem_status_t Bootstrap::fail(tmashmem_status_t status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  char text[1024];
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  message_ = text;
  return report_ ? report_(status, message_.c_str()) : status;
}

tmashmem_status_t Bootstrap::discover_locality() {
  NodeIdentity mine = this_node();
  std::vector<NodeIdentity> all(static_cast<size_t>(size_));
  tmashmem_status_t st = allgather(&mine, all.data(), sizeof mine);
  if (st != TMASHMEM_SUCCESS) return st;
  local_rank_ = 0;
  local_size_ = 0;
  first_local_rank_ = -1;
  int last_local = -1;
  for (int r = 0; r < size_; ++r) {
    if (std::strncmp(all[static_cast<size_t>(r)].text, mine.text, sizeof mine.text) != 0) continue;
    if (first_local_rank_ < 0) first_local_rank_ = r;
    if (r < rank_) ++local_rank_;
    ++local_size_;
    last_local = r;
  }
  local_contiguous_ = last_local - first_local_rank_ + 1 == local_size_;
  return TMASHMEM_SUCCESS;
}

std::unique_ptr<Bootstrap> make_single_bootstrap() { return std::make_unique<SingleBootstrap>(); }

}  // namespace tmashmem
