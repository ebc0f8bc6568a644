// Leak counters of the init/finalize cycle and fault tests: compare a count taken before
// with one taken after. No MPI, so the launcher-started tests (uid_launch.h) use them too.
#pragma once

#include <dirent.h>

#include <cstdlib>
#include <cstring>

namespace tmashmem_test {

// Entries of `dir` other than "." and ".." whose name starts with `prefix`.
inline int count_dir_entries(const char* dir, const char* prefix = "") {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.' && std::strncmp(e->d_name, prefix, std::strlen(prefix)) == 0) ++n;
    closedir(d);
  }
  return n;
}

inline int count_fds() { return count_dir_entries("/proc/self/fd"); }
inline int count_threads() { return count_dir_entries("/proc/self/task"); }

// Entries of $TMPDIR (or /tmp) named "tmashmem-..." (filesystem sockets and their
// directories), except those whose name starts with `except`.
inline int count_tmp_sockets(const char* except = nullptr) {
  const char* tmp = std::getenv("TMPDIR");
  const char* dir = tmp && *tmp ? tmp : "/tmp";
  const int all = count_dir_entries(dir, "tmashmem-");
  return except ? all - count_dir_entries(dir, except) : all;
}

}  // namespace tmashmem_test
