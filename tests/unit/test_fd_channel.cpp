// Handle exchange between real processes: file descriptors over the Unix
// datagram sockets, the same path heap growth uses for POSIX fd handles.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/fd_channel.h"

using namespace tmashmem_test;
using tmashmem::FdChannel;
using tmashmem::FdMessage;

namespace {

// try_send until it is queued or `timeout_ms` passed (the peers drain their queues).
tmashmem_status_t send_within(FdChannel& channel, int to, const FdMessage& m, int fd,
                              int timeout_ms) {
  for (int waited = 0;; ++waited) {
    bool sent = false;
    tmashmem_status_t st = channel.try_send(to, m, fd, &sent);
    if (st != TMASHMEM_SUCCESS || sent) return st;
    if (waited >= timeout_ms) return TMASHMEM_ERROR_TIMEOUT;
    usleep(1000);
  }
}

}  // namespace

TEST_CASE("fd channel: every PE sends a memfd to every other; receivers read the sender's bytes") {
  int me = mpi_rank(), n = mpi_size();
  uint64_t job = run_seed() | 1;
  FdChannel channel;
  REQUIRE(channel.open(job, me) == TMASHMEM_SUCCESS);
  MPI_Barrier(MPI_COMM_WORLD);  // every socket is bound before anyone sends

  const size_t bytes = 1 << 16;
  int fd = memfd_create("fd-channel-test", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, bytes) == 0);
  auto rng = make_rng(7);
  std::vector<uint8_t> mine(bytes);
  for (auto& b : mine) b = static_cast<uint8_t>(rng());
  REQUIRE(pwrite(fd, mine.data(), bytes, 0) == static_cast<ssize_t>(bytes));

  for (int to = 0; to < n; ++to) {
    if (to == me) continue;
    FdMessage m{job, 1, me, bytes};
    CHECK(send_within(channel, to, m, fd, 5000) == TMASHMEM_SUCCESS);
  }
  close(fd);  // in-flight messages hold their own references
  // Every PE publishes its bytes so receivers can compare.
  std::vector<uint8_t> all(bytes * size_t(n));
  MPI_Allgather(mine.data(), static_cast<int>(bytes), MPI_BYTE, all.data(), static_cast<int>(bytes),
                MPI_BYTE, MPI_COMM_WORLD);
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int k = 0; k < n - 1; ++k) {
    FdMessage m;
    int got = -1;
    REQUIRE(channel.receive(&m, &got, 5000, "any") == TMASHMEM_SUCCESS);
    REQUIRE(m.from_pe >= 0);
    REQUIRE(m.from_pe < n);
    CHECK_FALSE(seen[static_cast<size_t>(m.from_pe)]);
    seen[static_cast<size_t>(m.from_pe)] = true;
    CHECK(m.bytes == bytes);
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, got, 0);
    REQUIRE(p != MAP_FAILED);
    CHECK(std::memcmp(p, all.data() + size_t(m.from_pe) * bytes, bytes) == 0);
    munmap(p, bytes);
    close(got);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("fd channel: a receive that nothing answers times out naming the PE waited for") {
  FdChannel channel;
  REQUIRE(channel.open(run_seed() ^ 0xABCDEF, mpi_rank()) == TMASHMEM_SUCCESS);
  FdMessage m;
  int fd = -1;
  CHECK(channel.receive(&m, &fd, 200, "7") == TMASHMEM_ERROR_TIMEOUT);
  std::string text = tmashmem_last_error();
  CHECK(text.find("PE(s) 7") != std::string::npos);
  CHECK(fd == -1);
}

TEST_CASE("fd channel: sending to a PE with no socket is an error, not a hang") {
  FdChannel channel;
  REQUIRE(channel.open(run_seed() ^ 0x5151, mpi_rank()) == TMASHMEM_SUCCESS);
  int fd = memfd_create("x", MFD_CLOEXEC);
  FdMessage m{0, 0, 0, 0};
  CHECK(send_within(channel, mpi_size() + 100, m, fd, 200) != TMASHMEM_SUCCESS);
  close(fd);
}
