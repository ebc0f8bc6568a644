#include "runtime/error.h"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace tmashmem {
namespace {

std::atomic<int> g_rank{-1};
thread_local std::string t_last_error;

std::string vformat(const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n <= 0) return std::string();
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(&out[0], out.size() + 1, format, args);
  return out;
}

std::string prefix() {
  int rank = g_rank.load();
  return rank < 0 ? std::string("[tmashmem rank ?] ") : format_string("[tmashmem rank %d] ", rank);
}

}  // namespace

void set_error_rank(int rank) { g_rank.store(rank); }

std::string format_string(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string out = vformat(format, args);
  va_end(args);
  return out;
}

tmashmem_status_t set_error(tmashmem_status_t status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  t_last_error = prefix() + vformat(format, args);
  va_end(args);
  return status;
}

tmashmem_status_t set_system_error(const char* format, ...) {
  int saved = errno;
  va_list args;
  va_start(args, format);
  t_last_error = prefix() + vformat(format, args) +
                 format_string(": %s (errno %d)", std::strerror(saved), saved);
  va_end(args);
  return TMASHMEM_ERROR_SYSTEM;
}

tmashmem_status_t restore_error(tmashmem_status_t status, const std::string& message) {
  t_last_error = message;
  return status;
}

void clear_error() { t_last_error.clear(); }
const std::string& last_error() { return t_last_error; }

}  // namespace tmashmem
