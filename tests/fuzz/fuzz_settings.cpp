// Fuzzes the parsers of every TMASHMEM_* setting (runtime/settings.h, runtime/config.cpp).
// The first input byte picks the setting, the rest is its text. Contract on every input:
//  - valid() and canonical() agree and never crash;
//  - a value is accepted exactly when it has the documented form (an independent oracle
//    below, per setting type: sizes are digits with an optional K/M/G/T[i][B] or B unit and
//    a positive value that fits 64 bits (or 0 too, where expected() says "a size or 0"); integers
//    are an optional '-' and digits in [min, INT32_MAX]; choices are one of the words expected()
//    lists, any case; text is anything);
//  - the canonical text round-trips: it is valid, and is its own canonical text.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_contract.h"
#include "runtime/config.h"

namespace {

void require(bool ok, const char* what, const std::string& text) {
  fuzz::require(ok, what, ("text \"" + text + "\"").c_str());
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Decimal digits as a value, false past `max`.
bool digits_value(const std::string& s, unsigned long long max, unsigned long long* out) {
  unsigned long long v = 0;
  for (char c : s) {
    const unsigned d = static_cast<unsigned>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool oracle_size(const std::string& text, bool zero_ok) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  const std::string number = text.substr(0, i);
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "B")
    shift = 0;
  else {
    const char* units = "KMGT";
    const char* at = std::strchr(units, unit[0]);
    const std::string rest = unit.substr(1);
    if (at && *at && (rest.empty() || rest == "B" || rest == "IB"))
      shift = 10 * static_cast<int>(at - units + 1);
  }
  unsigned long long v = 0;
  if (!all_digits(number) || shift < 0 || !digits_value(number, ~0ull, &v) || (v == 0 && !zero_ok))
    return false;
  return shift == 0 || v <= (~0ull >> shift);
}

bool oracle_int(const std::string& text, long min_value) {
  const bool negative = !text.empty() && text[0] == '-';
  const std::string digits = negative ? text.substr(1) : text;
  unsigned long long v = 0;
  if (!all_digits(digits) || !digits_value(digits, 1ull << 40, &v)) return false;
  const long long value = negative ? -static_cast<long long>(v) : static_cast<long long>(v);
  return value >= min_value && value <= INT32_MAX;
}

// "one of: a, b, c" -> {a, b, c}
std::vector<std::string> listed_words(const std::string& expected) {
  std::vector<std::string> words;
  const std::string prefix = "one of: ";
  if (expected.compare(0, prefix.size(), prefix) != 0) return words;
  size_t start = prefix.size();
  for (;;) {
    const size_t comma = expected.find(", ", start);
    words.push_back(expected.substr(start, comma - start));
    if (comma == std::string::npos) return words;
    start = comma + 2;
  }
}

bool equal_ignoring_case(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// What the setting documents it accepts, from its expected() text.
bool oracle(const tmashmem::SettingInfo& s, const std::string& text) {
  const std::string expected = s.expected();
  if (expected.rfind("a size or 0", 0) == 0) return oracle_size(text, true);
  if (expected.rfind("a size", 0) == 0) return oracle_size(text, false);
  if (expected.rfind("an integer >= ", 0) == 0)
    return oracle_int(text, std::atol(expected.c_str() + std::strlen("an integer >= ")));
  if (expected == "any text") return true;
  const std::vector<std::string> words = listed_words(expected);
  require(!words.empty(), "every setting type is known to the oracle", expected);
  for (const std::string& w : words)
    if (equal_ignoring_case(w, text)) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<tmashmem::SettingInfo>& table = tmashmem::settings();
  if (size == 0) return 0;
  const tmashmem::SettingInfo& s = table[data[0] % table.size()];
  // The environment gives C strings: the text ends at the first NUL.
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  text = text.c_str();
  const bool valid = s.valid(text.c_str());
  std::string canonical;
  require(s.canonical(text.c_str(), &canonical) == valid, "valid() and canonical() agree", text);
  require(valid == oracle(s, text), valid ? "accepts undocumented text" : "refuses documented text",
          std::string(s.name) + "=" + text);
  if (valid) {
    std::string again;
    require(s.valid(canonical.c_str()), "the canonical text is valid", canonical);
    require(s.canonical(canonical.c_str(), &again) && again == canonical,
            "the canonical text is its own canonical text", canonical);
  }
  return 0;
}
