// Handle exchange between real processes: file descriptors over the Unix datagram
// sockets, the same path heap growth uses for POSIX fd handles; strangers refused.
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/fd_channel.h"

using namespace tmashmem_test;
using tmashmem::FdChannel;
using tmashmem::FdMessage;

namespace {

std::unique_ptr<tmashmem::Bootstrap> mpi_bootstrap() {
  tmashmem::BootstrapOptions options;
  options.kind = TMASHMEM_BOOTSTRAP_MPI;
  options.timeout_ms = 20000;
  std::unique_ptr<tmashmem::Bootstrap> bs;
  REQUIRE(tmashmem::create_bootstrap(options, &bs) == TMASHMEM_SUCCESS);
  return bs;
}

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

int memfd_with(const std::vector<uint8_t>& bytes) {
  int fd = memfd_create("fd-channel-test", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, static_cast<off_t>(bytes.size())) == 0);
  REQUIRE(pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  return fd;
}

// Every PE sends a memfd of fresh random bytes to every other; receivers check them.
void exchange_all(FdChannel& channel) {
  int me = mpi_rank(), n = mpi_size();
  const size_t bytes = 1 << 16;
  auto rng = make_rng(7);
  std::vector<uint8_t> mine(bytes);
  for (auto& b : mine) b = static_cast<uint8_t>(rng());
  int fd = memfd_with(mine);
  for (int to = 0; to < n; ++to) {
    if (to == me) continue;
    FdMessage m{channel.job_id(), 1, me, bytes};
    CHECK(send_within(channel, to, m, fd, 5000) == TMASHMEM_SUCCESS);
  }
  close(fd);  // in-flight messages hold their own references
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

// Runs `body` with this process's stderr going to a file; returns what was written.
template <typename Body>
std::string capture_stderr(Body body) {
  char path[] = "/tmp/tmashmem-fd-test-XXXXXX";
  int file = mkstemp(path);
  REQUIRE(file >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(file, 2);
  body();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(file);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  return text.str();
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("fd channel: every PE sends a memfd to every other; receivers read the sender's bytes") {
  auto bs = mpi_bootstrap();
  FdChannel channel;
  REQUIRE(channel.open(*bs, 0, mpi_size(), "abstract", 0) == TMASHMEM_SUCCESS);
  CHECK(channel.socket_name(mpi_rank()).rfind("@tmashmem-", 0) == 0);
  CHECK(channel.socket_name(mpi_rank()).size() ==
        std::string("@tmashmem-").size() + 32 + 1 + std::to_string(mpi_rank()).size());
  exchange_all(channel);
}

TEST_CASE("fd channel: filesystem sockets live in a private directory removed at close") {
  auto bs = mpi_bootstrap();
  FdChannel channel;
  REQUIRE(channel.open(*bs, 0, mpi_size(), "filesystem", 0) == TMASHMEM_SUCCESS);
  std::string path = channel.socket_name(mpi_rank());
  REQUIRE(path.size() > 8);
  std::string dir = path.substr(0, path.rfind('/'));
  struct stat st;
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(exists(path));
  exchange_all(channel);
  channel.close();
  CHECK_FALSE(exists(path));
  CHECK_FALSE(exists(dir));
}

TEST_CASE("fd channel: a process of the same user that is not a PE is refused and logged") {
  if (!have_pes(2, "needs 2 PEs: the stranger impersonates PE 0 towards PE 1")) return;
  auto bs = mpi_bootstrap();
  for (const char* mode : {"abstract", "filesystem"}) {
    FdChannel channel;
    REQUIRE(channel.open(*bs, 0, mpi_size(), mode, 0) == TMASHMEM_SUCCESS);
    int me = mpi_rank();
    // The stranger knows the socket's name (abstract names are listed in /proc/net/unix).
    std::string target = channel.socket_name(1);
    pid_t stranger = -1;
    if (me == 0) {
      stranger = fork();
      if (stranger == 0) {
        int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un a;
        socklen_t len = 0;
        if (!tmashmem::unix_socket_address(target, &a, &len)) _exit(2);
        int fd = memfd_create("stranger", MFD_CLOEXEC);
        FdMessage m{channel.job_id(), 1, 0, 4096};  // claims to be PE 0, right job id
        _exit(tmashmem::send_fd_datagram(s, a, len, m, fd, 0) == static_cast<ssize_t>(sizeof m)
                  ? 0
                  : 3);
      }
      int status = 0;
      waitpid(stranger, &status, 0);
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // the datagram was queued
    }
    MPI_Bcast(&stranger, sizeof stranger, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (me == 1) {
      FdMessage m;
      int fd = -1;
      bool got = true;
      std::string log =
          capture_stderr([&] { CHECK(channel.try_receive(&m, &fd, &got) == TMASHMEM_SUCCESS); });
      CHECK_FALSE(got);
      CHECK(fd == -1);
      CHECK(log.find("refused a message from pid " + std::to_string(stranger)) !=
            std::string::npos);
      CHECK(log.find("claims to be PE 0") != std::string::npos);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    exchange_all(channel);  // the PEs themselves still get through
  }
}

TEST_CASE("fd channel: a receive that nothing answers times out naming the PE waited for") {
  auto bs = mpi_bootstrap();
  FdChannel channel;
  REQUIRE(channel.open(*bs, 0, mpi_size(), "auto", 0) == TMASHMEM_SUCCESS);
  FdMessage m;
  int fd = -1;
  CHECK(channel.receive(&m, &fd, 200, "7") == TMASHMEM_ERROR_TIMEOUT);
  std::string text = tmashmem_last_error();
  CHECK(text.find("PE(s) 7") != std::string::npos);
  CHECK(fd == -1);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("fd channel: sending to a PE with no socket is an error, not a hang") {
  auto bs = mpi_bootstrap();
  FdChannel channel;
  REQUIRE(channel.open(*bs, 0, mpi_size(), "abstract", 0) == TMASHMEM_SUCCESS);
  int fd = memfd_create("x", MFD_CLOEXEC);
  FdMessage m{0, 0, 0, 0};
  CHECK(send_within(channel, mpi_size() + 100, m, fd, 200) != TMASHMEM_SUCCESS);
  close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
}
