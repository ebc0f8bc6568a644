// The types a setting of runtime/settings.h may have. Each has
//   using type = ...;                                  the Config field's type
//   static bool valid(const type& value);              the one rule for both the environment
//                                                      and tmashmem_init_attr_t
//   static bool parse(const char* text, type* out);    text to a valid value, else false
//   static std::string expected();                     "<text> is not " + expected()
//   static std::string format(const type& value);      text that parse() reads back as value
// A new choice is a struct deriving from ChoiceOf<itself, type> with a `choices` table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tmashmem/tmashmem.h"

namespace tmashmem {

// Whether the PEs of one job may hold different values of a setting (runtime/settings.h).
enum class Scope { Pe, Job };

// "64M", "2G", "4096", "1T" (binary units) -> bytes.
bool parse_size(const std::string& text, size_t* bytes);
std::string format_size(size_t bytes);

// A positive byte count with an optional binary unit.
struct Size {
  using type = size_t;
  static bool valid(const type& value) { return value > 0; }
  static bool parse(const char* text, type* out);
  static std::string expected();
  static std::string format(const type& value) { return format_size(value); }
};

// A byte count with an optional binary unit, 0 included (a size limit whose 0 turns the
// feature off).
struct SizeOrZero {
  using type = size_t;
  static bool valid(const type&) { return true; }
  static bool parse(const char* text, type* out) { return parse_size(text, out); }
  static std::string expected();
  static std::string format(const type& value) { return format_size(value); }
};

// A decimal integer in [Min, INT32_MAX].
template <int Min>
struct IntAtLeast {
  using type = int;
  static bool valid(const type& value) { return value >= Min; }
  static bool parse(const char* text, type* out);
  static std::string expected();
  static std::string format(const type& value) { return std::to_string(value); }
};
using IntAtLeast0 = IntAtLeast<0>;
using IntAtLeast1 = IntAtLeast<1>;

// Any text, taken as written.
struct Text {
  using type = std::string;
  static bool valid(const type&) { return true; }
  static bool parse(const char* text, type* out) {
    *out = text;
    return true;
  }
  static std::string expected() { return "any text"; }
  static std::string format(const type& value) { return value; }
};

template <typename Value>
struct Choice {
  const char* word;  // matched case-insensitively
  Value value;
};

template <typename Value, size_t N, typename Out>
bool parse_choice(const Choice<Value> (&choices)[N], const char* text, Out* out);
template <typename Value, size_t N, typename Stored>
bool is_choice(const Choice<Value> (&choices)[N], const Stored& value);
template <typename Value, size_t N>
std::string one_of(const Choice<Value> (&choices)[N]);
// The first word of `choices` whose value is `value` ("?" when none is).
template <typename Value, size_t N, typename Stored>
std::string word_of(const Choice<Value> (&choices)[N], const Stored& value);

// The four functions of a setting chosen from the table Derived::choices (words to values
// of T).
template <typename Derived, typename T>
struct ChoiceOf {
  using type = T;
  static bool valid(const type& value) { return is_choice(Derived::choices, value); }
  static bool parse(const char* text, type* out) {
    return parse_choice(Derived::choices, text, out);
  }
  static std::string expected() { return one_of(Derived::choices); }
  static std::string format(const type& value) { return word_of(Derived::choices, value); }
};

// on/off, 1/0.
struct Switch : ChoiceOf<Switch, bool> {
  static constexpr Choice<bool> choices[] = {
      {"on", true}, {"off", false}, {"1", true}, {"0", false}};
};

struct HandleTypeChoice : ChoiceOf<HandleTypeChoice, tmashmem_handle_type_t> {
  static constexpr Choice<type> choices[] = {{"auto", TMASHMEM_HANDLE_AUTO},
                                             {"posix_fd", TMASHMEM_HANDLE_POSIX_FD},
                                             {"fabric", TMASHMEM_HANDLE_FABRIC}};
};

struct BootstrapChoice : ChoiceOf<BootstrapChoice, tmashmem_bootstrap_kind_t> {
  static constexpr Choice<type> choices[] = {{"auto", TMASHMEM_BOOTSTRAP_AUTO},
                                             {"mpi", TMASHMEM_BOOTSTRAP_MPI},
                                             {"single", TMASHMEM_BOOTSTRAP_SINGLE},
                                             {"uid", TMASHMEM_BOOTSTRAP_UID},
                                             {"nccl", TMASHMEM_BOOTSTRAP_NCCL}};
};

// bootstrap/uid_address.cpp reads the word.
struct UidFamilyChoice : ChoiceOf<UidFamilyChoice, std::string> {
  static constexpr Choice<const char*> choices[] = {
      {"auto", "auto"}, {"AF_INET", "AF_INET"}, {"AF_INET6", "AF_INET6"}};
};

// runtime/fd_channel.h reads the word.
struct FdSocketChoice : ChoiceOf<FdSocketChoice, std::string> {
  static constexpr Choice<const char*> choices[] = {
      {"auto", "auto"}, {"abstract", "abstract"}, {"filesystem", "filesystem"}};
};

// The gate of runtime/multicast_gate.h reads the word ("auto", "on", "off").
struct MulticastChoice : ChoiceOf<MulticastChoice, std::string> {
  static constexpr Choice<const char*> choices[] = {{"auto", "auto"}, {"on", "on"}, {"off", "off"}};
};

// Which on-stream collectives take the staged (one-handshake) forms: runtime/collectives.cpp.
enum class CollStaged { Off, Gather, All };
struct CollStagedChoice : ChoiceOf<CollStagedChoice, CollStaged> {
  static constexpr Choice<type> choices[] = {
      {"all", CollStaged::All}, {"gather", CollStaged::Gather}, {"off", CollStaged::Off}};
};

// ---- implementation of the templates above --------------------------------------------

bool equal_ignoring_case(const char* a, const char* b);
bool parse_int(const char* text, long min_value, long max_value, long* out);

template <int Min>
bool IntAtLeast<Min>::parse(const char* text, type* out) {
  long value = 0;
  if (!parse_int(text, INT32_MIN, INT32_MAX, &value) || !valid(static_cast<int>(value)))
    return false;
  *out = static_cast<int>(value);
  return true;
}

template <int Min>
std::string IntAtLeast<Min>::expected() {
  return "an integer >= " + std::to_string(Min);
}

template <typename Value, size_t N, typename Out>
bool parse_choice(const Choice<Value> (&choices)[N], const char* text, Out* out) {
  for (const Choice<Value>& c : choices)
    if (equal_ignoring_case(text, c.word)) {
      *out = c.value;
      return true;
    }
  return false;
}

template <typename Value, size_t N, typename Stored>
bool is_choice(const Choice<Value> (&choices)[N], const Stored& value) {
  for (const Choice<Value>& c : choices)
    if (value == Stored(c.value)) return true;
  return false;
}

template <typename Value, size_t N, typename Stored>
std::string word_of(const Choice<Value> (&choices)[N], const Stored& value) {
  for (const Choice<Value>& c : choices)
    if (value == Stored(c.value)) return c.word;
  return "?";
}

template <typename Value, size_t N>
std::string one_of(const Choice<Value> (&choices)[N]) {
  std::string words = "one of: ";
  for (size_t i = 0; i < N; ++i) words += (i ? ", " : "") + std::string(choices[i].word);
  return words;
}

}  // namespace tmashmem
