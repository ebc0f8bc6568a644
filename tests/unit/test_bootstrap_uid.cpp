// The unique-id bootstrap with PEs started as plain processes (fork + exec of this
// program; no mpiexec): the heap tests of the host runtime over it, on IPv4 and IPv6
// loopback; intruders at the root (wrong secret, a replayed answer, garbage); a rank
// killed before it joins; 100 init/finalize cycles (uid and single) leaving nothing.
//
//   test_bootstrap_uid --suite heap|security|cycles --np N [--family 4|6]
// The launcher prints each case's verdict and "N passed, N failed, N skipped"; a
// case passes only if every rank's process exited 0 and the launcher's checks held.
// One file past the usual length: each scenario's rank side and launcher side belong together.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bootstrap/uid_auth.h"
#include "bootstrap/uid_id.h"
#include "bootstrap/uid_protocol.h"
#include "emu/emulated_driver.h"
#include "heap_exchange.h"
#include "init_cycle.h"
#include "tmashmem/tmashmem.h"
#include "uid_launch.h"

namespace emu = tmashmem::emu;
using namespace uid_test;

namespace {

int g_failures = 0;
#define EXPECT(cond)                                                                     \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      ++g_failures;                                                                      \
      std::printf("[rank %s] %s:%d: EXPECT(%s) failed (last error: %s)\n",               \
                  std::getenv("TMASHMEM_BOOTSTRAP_UID_RANK"), __FILE__, __LINE__, #cond, \
                  tmashmem_last_error());                                                \
    }                                                                                    \
  } while (0)

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

uint64_t env_u64(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : 0;
}

tmashmem_init_attr_t small_attr(size_t heap = size_t(64) << 20) {
  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.heap_max = heap;
  attr.chunk_size = size_t(2) << 20;
  return attr;
}

// ---- what each rank runs -----------------------------------------------------------

bool exchange_and_check(uint8_t* x, size_t bytes, uint64_t salt) {
  return tmashmem_test::exchange_and_check(x, bytes, salt, env_u64("TMASHMEM_UID_TEST_SEED"));
}

// The heap tests of tests/unit/test_heap.cpp that need no MPI of their own.
int rank_heap() {
  emu::install();
  tmashmem_init_attr_t attr = small_attr(size_t(128) << 20);
  tmashmem_status_t st = tmashmem_init_attr(&attr);
  EXPECT(st == TMASHMEM_SUCCESS);
  if (st != TMASHMEM_SUCCESS) return 1;
  int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  EXPECT(me == std::atoi(std::getenv("TMASHMEM_BOOTSTRAP_UID_RANK")));
  EXPECT(n == std::atoi(std::getenv("TMASHMEM_BOOTSTRAP_UID_SIZE")));
  EXPECT(contains(tmashmem_bootstrap_choice(), "uid"));
  EXPECT(tmashmem_n_local_pes() == n);
  for (size_t bytes :
       {size_t(1), size_t(255), size_t(4096), size_t(65537), (size_t(2) << 20) + 7}) {
    auto* x = static_cast<uint8_t*>(tmashmem_malloc(bytes * size_t(n)));
    EXPECT(x != nullptr);
    if (!x) return 1;
    EXPECT(exchange_and_check(x, bytes, bytes));
    EXPECT(tmashmem_free(x) == TMASHMEM_SUCCESS);
  }
  // Growth across chunks keeps earlier data.
  const size_t seg = size_t(1) << 20;
  auto* first = static_cast<uint8_t*>(tmashmem_malloc(seg * size_t(n)));
  EXPECT(first && exchange_and_check(first, seg, 1));
  std::vector<void*> more;
  for (int i = 0; i < 4; ++i) {
    void* p = tmashmem_malloc((size_t(3) << 20) * size_t(i + 1));
    EXPECT(p != nullptr);
    more.push_back(p);
  }
  uint64_t seed = env_u64("TMASHMEM_UID_TEST_SEED");
  EXPECT(!first || tmashmem_test::count_bad_segments(first, seg, n, me, seed, 1) == 0);
  EXPECT(exchange_and_check(static_cast<uint8_t*>(more.back()), (size_t(12) << 20) / size_t(n), 2));
  for (void* p : more) EXPECT(tmashmem_free(p) == TMASHMEM_SUCCESS);
  EXPECT(tmashmem_free(first) == TMASHMEM_SUCCESS);
  if (n >= 2) {  // asymmetric arguments: an error on every PE naming PEs and values
    void* p = tmashmem_malloc(me == 1 ? 8192 : 4096);
    EXPECT(p == nullptr);
    EXPECT(contains(tmashmem_last_error(), "8192 on PE 1"));
  }
  void* q = tmashmem_malloc(4096);  // still usable
  EXPECT(q != nullptr);
  EXPECT(tmashmem_free(q) == TMASHMEM_SUCCESS);
  EXPECT(tmashmem_finalize() == TMASHMEM_SUCCESS);
  emu::uninstall();
  return g_failures ? 1 : 0;
}

// Waits until the launcher writes a byte to the pipe whose read end is $name.
void wait_for_go(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return;
  int fd = std::atoi(v);
  char c = 0;
  pollfd p{fd, POLLIN, 0};
  poll(&p, 1, 30000);
  if (read(fd, &c, 1) != 1) std::printf("no go signal on fd %d\n", fd);
  close(fd);
}

int rank_late_heap() {
  wait_for_go("TMASHMEM_UID_TEST_GO_FD");
  return rank_heap();
}

// Dies (SIGKILL) before tmashmem_init when it is the victim; the others must time out
// naming it, and leave no fd or thread behind.
int rank_victim_or_survivor() {
  int me = std::atoi(std::getenv("TMASHMEM_BOOTSTRAP_UID_RANK"));
  int victim = std::atoi(std::getenv("TMASHMEM_UID_TEST_VICTIM"));
  if (me == victim) raise(SIGKILL);
  emu::install();
  int fds = count_fds(), threads = count_threads();
  tmashmem_init_attr_t attr = small_attr();
  auto t0 = std::chrono::steady_clock::now();
  tmashmem_status_t st = tmashmem_init_attr(&attr);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string m = tmashmem_last_error();
  std::printf("[rank %d] init returned %d after %.0f ms: %s\n", me, st, ms, m.c_str());
  EXPECT(st == TMASHMEM_ERROR_TIMEOUT);
  EXPECT(contains(m, "rank(s) " + std::to_string(victim) + " did not connect"));
  long timeout = std::atol(std::getenv("TMASHMEM_BOOTSTRAP_TIMEOUT_MS"));
  // The root's deadline is the timeout; the others hear its verdict right then.
  EXPECT(ms < static_cast<double>(timeout) + 1000.0);
  EXPECT(!tmashmem_initialized());
  EXPECT(count_fds() == fds);
  EXPECT(count_threads() == threads);
  emu::uninstall();
  return g_failures ? 1 : 0;
}

// 100 init/finalize cycles with heap growth and a one-byte exchange each; no fd,
// socket, thread or emulated object left behind.
int rank_cycles() {
  emu::install();
  int fds = count_fds(), threads = count_threads();
  int cycles = 0;
  std::vector<double> init_ms;
  // A private TMPDIR: other tests' sockets come and go in /tmp meanwhile.
  char dir[] = "/tmp/tmashmem-uid-test-tmp.XXXXXX";
  EXPECT(mkdtemp(dir) != nullptr);
  setenv("TMPDIR", dir, 1);
  int files = count_tmp_sockets();
  for (int cycle = 0; cycle < 100 && !g_failures; ++cycle, ++cycles) {
    g_failures += tmashmem_test::run_init_cycle(cycle, small_attr(), &init_ms);
    emu::Counts c = emu::counts();
    EXPECT(c.allocations == 0 && c.mappings == 0 && c.reservations == 0 && c.open_memfds == 0);
    g_failures += tmashmem_test::leaked_in_cycle(cycle, fds, threads);
  }
  EXPECT(cycles == 100);
  EXPECT(count_tmp_sockets() == files);
  EXPECT(files == 0);
  unsetenv("TMPDIR");
  EXPECT(rmdir(dir) == 0);  // empty: every socket directory was removed
  std::sort(init_ms.begin(), init_ms.end());
  std::printf(
      "%d cycles done over %s; %d fds, %d threads before and after; init median %.2f ms, "
      "max %.2f ms\n",
      cycles, tmashmem_bootstrap_choice(), fds, threads,
      init_ms.empty() ? 0.0 : init_ms[init_ms.size() / 2], init_ms.empty() ? 0.0 : init_ms.back());
  emu::uninstall();
  return g_failures ? 1 : 0;
}

// The last rank was started with another job size: every rank's init must fail
// with the same message, naming the sizes.
int rank_size_mismatch() {
  // The others come late, so the root hears the wrong size before they connect.
  int me = std::atoi(std::getenv("TMASHMEM_BOOTSTRAP_UID_RANK"));
  if (me != 0 && std::getenv("TMASHMEM_UID_TEST_LATE")) usleep(300 * 1000);
  emu::install();
  tmashmem_init_attr_t attr = small_attr();
  attr.bootstrap_timeout_ms = 10000;
  auto t0 = std::chrono::steady_clock::now();
  tmashmem_status_t st = tmashmem_init_attr(&attr);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string m = tmashmem_last_error();
  std::printf("init returned %d after %.0f ms: %s\n", st, ms, m.c_str());
  EXPECT(st == TMASHMEM_ERROR_INVALID_VALUE);
  EXPECT(contains(m, "PEs, rank 0 says"));
  EXPECT(ms < 5000.0);  // the root's verdict, not a timeout
  EXPECT(!tmashmem_initialized());
  emu::uninstall();
  return g_failures ? 1 : 0;
}

int run_rank(const std::string& name) {
  if (name == "size_mismatch") return rank_size_mismatch();
  if (name == "heap") return rank_heap();
  if (name == "late_heap") return rank_late_heap();
  if (name == "victim") return rank_victim_or_survivor();
  if (name == "cycles") return rank_cycles();
  std::printf("unknown case %s\n", name.c_str());
  return 2;
}

// ---- the launcher ------------------------------------------------------------------

struct Tally {
  int passed = 0, failed = 0, skipped = 0;
  void record(const std::string& name, bool ok) {
    std::printf("%s: %s\n", ok ? "PASSED" : "FAILED", name.c_str());
    (ok ? passed : failed)++;
  }
  void skip(const std::string& name, const std::string& why) {
    std::printf("SKIPPED: %s (%s)\n", name.c_str(), why.c_str());
    ++skipped;
  }
};

std::vector<std::vector<std::string>> same_env(int np, const std::vector<std::string>& env) {
  return std::vector<std::vector<std::string>>(static_cast<size_t>(np), env);
}

bool all_exit_zero(const Job& job) {
  bool ok = true;
  if (!job.logs.empty() && contains(job.logs[0], "cycles done"))
    std::printf("rank 0: %s", job.logs[0].c_str());
  for (size_t r = 0; r < job.exit_codes.size(); ++r)
    if (job.exit_codes[r] != 0) {
      std::printf("rank %zu exited %d; its output:\n%s\n", r, job.exit_codes[r],
                  job.logs[r].c_str());
      ok = false;
    }
  return ok;
}

std::string seed_env() {
  static uint64_t seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  return "TMASHMEM_UID_TEST_SEED=" + std::to_string(seed);
}

bool run_plain(const std::string& address, const std::string& name, int np,
               std::vector<std::vector<std::string>> env, int limit_ms) {
  Job job;
  std::string why;
  if (!make_id(address, &job, &why) || !start(&job, name, np, env, &why)) {
    std::printf("cannot start the job: %s\n", why.c_str());
    return false;
  }
  finish(&job, limit_ms);
  return all_exit_zero(job);
}

// Connects to the root and returns the socket after reading its challenge, or -1.
int intruder_connect(const tmashmem_uniqueid_t& id, tmashmem::Challenge* challenge) {
  tmashmem::UidLayout l = tmashmem::uid_layout(id);
  sockaddr_storage s{};
  socklen_t len = 0;
  if (l.family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&s);
    v4->sin_family = AF_INET;
    v4->sin_port = l.port;
    std::memcpy(&v4->sin_addr, l.address, 4);
    len = sizeof *v4;
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&s);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = l.port;
    std::memcpy(&v6->sin6_addr, l.address, 16);
    len = sizeof *v6;
  }
  for (int attempt = 0; attempt < 2000; ++attempt) {
    int fd = socket(l.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&s), len) == 0) {
      timeval tv{5, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      tmashmem::FrameHeader h;
      if (recv(fd, &h, sizeof h, MSG_WAITALL) == sizeof h &&
          recv(fd, challenge, sizeof *challenge, MSG_WAITALL) == sizeof *challenge)
        return fd;
      close(fd);
      return -1;
    }
    close(fd);
    usleep(5000);
  }
  return -1;
}

// After sending `bytes`, the root must close the connection without a word more.
bool refused(int fd, const void* bytes, size_t length) {
  if (send(fd, bytes, length, MSG_NOSIGNAL) != static_cast<ssize_t>(length)) return false;
  char c;
  ssize_t n = recv(fd, &c, 1, 0);
  close(fd);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// Intruders at the root while the last rank is held back: a wrong secret, an answer
// recorded from another connection (replay), garbage. Every rank then carries on.
bool run_intruders(const std::string& address, int np) {
  Job job;
  std::string why;
  if (!make_id(address, &job, &why)) return false;
  int go[2];
  if (pipe(go) != 0) return false;
  std::vector<std::vector<std::string>> env = same_env(np, {seed_env()});
  env[static_cast<size_t>(np - 1)].push_back("TMASHMEM_UID_TEST_GO_FD=" + std::to_string(go[0]));
  if (!start(&job, "late_heap", np, env, &why)) return false;
  close(go[0]);
  tmashmem::UidLayout l = tmashmem::uid_layout(job.id);
  bool ok = true;
  tmashmem::Challenge c;
  struct {
    tmashmem::FrameHeader head;
    tmashmem::Hello hello;
  } answer;
  auto hello_for = [&](const uint8_t* secret, const uint8_t* nonce, int rank) {
    std::memset(&answer, 0, sizeof answer);
    answer.head = {tmashmem::kFrameMagic, tmashmem::kTagHello, 0, rank, sizeof(tmashmem::Hello)};
    answer.hello.rank = rank;
    answer.hello.size = np;
    tmashmem::MacInput in;
    std::memset(&in, 0, sizeof in);
    std::memcpy(in.nonce, nonce, 16);
    std::memcpy(in.purpose, "hello", 5);
    in.rank = rank;
    in.size = np;
    answer.hello.mac = tmashmem::siphash24(secret, &in, sizeof in);
  };
  // 1. The right protocol with a wrong secret.
  int fd = intruder_connect(job.id, &c);
  uint8_t wrong[16];
  std::memcpy(wrong, l.secret, 16);
  wrong[7] ^= 0x40;
  hello_for(wrong, c.nonce, np - 1);
  bool wrong_refused = fd >= 0 && refused(fd, &answer, sizeof answer);
  std::printf("intruder with a wrong secret refused: %d\n", wrong_refused);
  ok = ok && wrong_refused;
  // 2. A valid answer for another challenge, replayed on a new connection.
  uint8_t other_nonce[16];
  for (auto& b : other_nonce) b = static_cast<uint8_t>(std::random_device{}());
  fd = intruder_connect(job.id, &c);
  hello_for(l.secret, other_nonce, np - 1);
  bool replay_refused = fd >= 0 && refused(fd, &answer, sizeof answer);
  std::printf("replayed answer refused: %d\n", replay_refused);
  ok = ok && replay_refused;
  // 3. Garbage of a hello's length.
  fd = intruder_connect(job.id, &c);
  std::vector<uint8_t> junk(sizeof answer);
  for (auto& b : junk) b = static_cast<uint8_t>(std::random_device{}());
  bool junk_refused = fd >= 0 && refused(fd, junk.data(), junk.size());
  std::printf("garbled message refused: %d\n", junk_refused);
  ok = ok && junk_refused;
  // Now the last rank may come; the job must complete its heap tests.
  if (write(go[1], "g", 1) != 1) ok = false;
  close(go[1]);
  finish(&job, 120000);
  ok = all_exit_zero(job) && ok;
  int refusals = 0;
  for (size_t at = job.logs[0].find("refused a connection from"); at != std::string::npos;
       at = job.logs[0].find("refused a connection from", at + 1))
    ++refusals;
  std::printf("root logged %d refusals (expected 3)\n", refusals);
  ok = ok && refusals == 3 &&
       contains(job.logs[0], address.find(':') != std::string::npos ? "[::1]:" : "127.0.0.1:");
  return ok;
}

int launcher(int argc, char** argv) {
  std::string suite = "heap";
  int np = 2, family = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--suite") suite = argv[i + 1];
    if (a == "--np") np = std::atoi(argv[i + 1]);
    if (a == "--family") family = std::atoi(argv[i + 1]);
  }
  std::printf("%s (TMASHMEM_UID_TEST_SEED=%s)\n", argv[0], seed_env().c_str() + 23);
  Tally t;
  std::string address = family == 6 ? "::1" : "127.0.0.1";
  std::string label = " (np " + std::to_string(np) + ", " + address + ")";
  if (family == 6 && !have_ipv6_loopback()) {
    t.skip("unique-id bootstrap over IPv6" + label, "this machine cannot bind ::1 (no IPv6)");
  } else if (suite == "heap") {
    t.record("heap tests over the unique-id bootstrap" + label,
             run_plain(address, "heap", np, same_env(np, {seed_env()}), 120000));
  } else if (suite == "security") {
    if (np < 2) {
      t.skip("intruders" + label, "needs 2 PEs: one is held back while intruders knock");
    } else {
      t.record("intruders at the root are refused and logged; the job carries on" + label,
               run_intruders(address, np));
      std::vector<std::string> env = {"TMASHMEM_BOOTSTRAP_TIMEOUT_MS=1500",
                                      "TMASHMEM_UID_TEST_VICTIM=" + std::to_string(np - 1)};
      Job job;
      std::string why;
      bool ok = make_id(address, &job, &why) && start(&job, "victim", np, same_env(np, env), &why);
      finish(&job, 60000);
      ok = ok && job.exit_codes[static_cast<size_t>(np - 1)] == -SIGKILL;
      for (int r = 0; r + 1 < np; ++r) {
        ok = ok && job.exit_codes[static_cast<size_t>(r)] == 0;
        std::printf("%s", job.logs[static_cast<size_t>(r)].c_str());
      }
      t.record("a rank killed before joining: the others time out naming it, nothing left" + label,
               ok);
      std::vector<std::vector<std::string>> sizes = same_env(np, {});
      for (int r = 1; r + 1 < np; ++r)
        sizes[static_cast<size_t>(r)].push_back("TMASHMEM_UID_TEST_LATE=1");
      sizes[static_cast<size_t>(np - 1)].push_back("TMASHMEM_BOOTSTRAP_UID_SIZE=" +
                                                   std::to_string(np + 1));
      t.record(
          "a rank started with another job size fails every rank's init, naming the sizes" + label,
          run_plain(address, "size_mismatch", np, sizes, 60000));
    }
  } else if (suite == "cycles") {
    t.record("100 init/finalize cycles over the unique-id bootstrap" + label,
             run_plain(address, "cycles", np, same_env(np, {}), 280000));
    if (np == 1)
      t.record("100 init/finalize cycles over the single bootstrap",
               run_plain(address, "cycles", 1, same_env(1, {"TMASHMEM_BOOTSTRAP=single"}), 120000));
  }
  std::printf("%s: %d passed, %d failed, %d skipped\n", argv[0], t.passed, t.failed, t.skipped);
  return t.failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = std::getenv("TMASHMEM_UID_TEST_CASE");
  if (name) return run_rank(name);
  return launcher(argc, argv);
}
