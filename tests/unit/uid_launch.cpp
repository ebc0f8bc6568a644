#include "uid_launch.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace uid_test {
bool have_ipv6_loopback() {
  int s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  bool ok = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(s);
  return ok;
}

bool make_id(const std::string& address, Job* job, std::string* why) {
  setenv("TMASHMEM_BOOTSTRAP_UID_ADDR", address.c_str(), 1);
  tmashmem_status_t st = tmashmem_get_uniqueid(&job->id);
  unsetenv("TMASHMEM_BOOTSTRAP_UID_ADDR");
  if (st != TMASHMEM_SUCCESS) {
    *why = tmashmem_last_error();
    return false;
  }
  char text[TMASHMEM_UNIQUEID_TEXT_BYTES];
  tmashmem_uniqueid_to_string(&job->id, text, sizeof text);
  job->id_text = text;
  return true;
}

bool start(Job* job, const std::string& name, int np,
           const std::vector<std::vector<std::string>>& extra_env, std::string* why) {
  char dir[] = "/tmp/tmashmem-uid-test.XXXXXX";
  if (!mkdtemp(dir)) {
    *why = "mkdtemp failed";
    return false;
  }
  job->dir = dir;
  job->np = np;
  for (int r = 0; r < np; ++r) {
    std::string log = job->dir + "/rank" + std::to_string(r) + ".log";
    std::vector<std::string> env;  // extra_env first: the first of a name wins in getenv
    if (static_cast<size_t>(r) < extra_env.size())
      for (const std::string& e : extra_env[static_cast<size_t>(r)]) env.push_back(e);
    for (char** e = environ; *e; ++e) env.push_back(*e);
    env.push_back("TMASHMEM_UID_TEST_CASE=" + name);
    env.push_back("TMASHMEM_BOOTSTRAP_UID=" + job->id_text);
    env.push_back("TMASHMEM_BOOTSTRAP_UID_RANK=" + std::to_string(r));
    env.push_back("TMASHMEM_BOOTSTRAP_UID_SIZE=" + std::to_string(np));
    pid_t pid = fork();
    if (pid < 0) {
      *why = "fork failed";
      return false;
    }
    if (pid == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
      std::vector<char*> envp;
      for (std::string& e : env) envp.push_back(&e[0]);
      envp.push_back(nullptr);
      char self[] = "/proc/self/exe";
      char* argv[] = {self, nullptr};
      execve(self, argv, envp.data());
      _exit(127);
    }
    job->pids.push_back(pid);
    job->logs.push_back(log);
  }
  return true;
}

void finish(Job* job, int limit_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  job->exit_codes.assign(job->pids.size(), 999);
  size_t left = job->pids.size();
  std::vector<bool> done(job->pids.size(), false);
  while (left > 0) {
    for (size_t i = 0; i < job->pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (waitpid(job->pids[i], &status, WNOHANG) == job->pids[i]) {
        done[i] = true;
        --left;
        job->exit_codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      }
    }
    if (left && std::chrono::steady_clock::now() > deadline) {
      for (size_t i = 0; i < job->pids.size(); ++i)
        if (!done[i]) kill(job->pids[i], SIGKILL);
      deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
    }
    if (left) usleep(2000);
  }
  for (std::string& path : job->logs) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    unlink(path.c_str());
    path = text.str();
  }
  rmdir(job->dir.c_str());
}

}  // namespace uid_test
