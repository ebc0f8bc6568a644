// One error path for the whole library: every failure becomes a status plus a
// per-thread message that names the rank, the value and what to change.
#pragma once

#include <string>

#include "tmashmem/tmashmem.h"

namespace tmashmem {

// Rank shown in every message; -1 (shown as "?") until the bootstrap is up.
void set_error_rank(int rank);

// Records "[tmashmem rank R] <message>" as the thread's last error and returns
// `status`, so that call sites read `return set_error(STATUS, "...", ...)`.
tmashmem_status_t set_error(tmashmem_status_t status, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// Same, with errno's text appended (": <strerror> (errno N)").
tmashmem_status_t set_system_error(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Puts back a message saved from last_error() (cleanup calls may overwrite it).
tmashmem_status_t restore_error(tmashmem_status_t status, const std::string& message);

void clear_error();
const std::string& last_error();

// printf-style formatting into a std::string.
std::string format_string(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tmashmem

// Propagates a non-success status from the enclosing function.
#define TMASHMEM_TRY(expr)                                                     \
  do {                                                                         \
    tmashmem_status_t tmashmem_try_status_ = (expr);                           \
    if (tmashmem_try_status_ != TMASHMEM_SUCCESS) return tmashmem_try_status_; \
  } while (0)
