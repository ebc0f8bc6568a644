// Starting the PEs of a unique-id job as plain processes (fork + exec of this test
// program, no mpiexec), and collecting what they did. Used by test_bootstrap_uid and
// test_debug_checks.
#pragma once

#include <string>
#include <vector>

#include "common/leak_counts.h"
#include "tmashmem/tmashmem.h"

namespace uid_test {

struct Job {
  std::string id_text;  // TMASHMEM_BOOTSTRAP_UID
  tmashmem_uniqueid_t id{};
  int np = 1;
  std::string dir;  // per-job temporary directory (logs), removed by finish()
  std::vector<int> pids;
  std::vector<int> exit_codes;    // -signal for a signalled child
  std::vector<std::string> logs;  // each rank's stderr + stdout
};

// Makes an id with its root on `address` (127.0.0.1 or ::1). False with *why.
bool make_id(const std::string& address, Job* job, std::string* why);

// Starts `np` ranks running case `name` of this program; extra_env[r] is added to
// rank r's environment ("NAME=value" strings; they take precedence).
bool start(Job* job, const std::string& name, int np,
           const std::vector<std::vector<std::string>>& extra_env, std::string* why);

// Waits for every rank (killing what is left after `limit_ms`), reads their logs.
void finish(Job* job, int limit_ms);

// Whether this machine can bind ::1.
bool have_ipv6_loopback();

using tmashmem_test::count_fds;
using tmashmem_test::count_threads;
// Filesystem sockets; the launcher's own scratch directories ("tmashmem-uid-test...") are not.
inline int count_tmp_sockets() { return tmashmem_test::count_tmp_sockets("tmashmem-uid-test"); }

}  // namespace uid_test
