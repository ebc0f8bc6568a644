// Settings: size parsing, every variable's validation message, attr overrides, the
// README's settings table against runtime/settings.h, and the multicast gate's kill switches.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/catch.h"
#include "common/env_guard.h"
#include "runtime/config.h"
#include "runtime/multicast_gate.h"

using namespace tmashmem;
using tmashmem_test::EnvGuard;

TEST_CASE("config: sizes parse with binary units") {
  size_t b = 0;
  CHECK((parse_size("4096", &b) && b == 4096));
  CHECK((parse_size("64M", &b) && b == (size_t(64) << 20)));
  CHECK((parse_size("2g", &b) && b == (size_t(2) << 30)));
  CHECK((parse_size("1GiB", &b) && b == (size_t(1) << 30)));
  CHECK((parse_size("3KB", &b) && b == 3072));
  CHECK((parse_size("1T", &b) && b == (size_t(1) << 40)));
  CHECK_FALSE(parse_size("", &b));
  CHECK_FALSE(parse_size("-1", &b));
  CHECK_FALSE(parse_size("12Q", &b));
  CHECK_FALSE(parse_size("G", &b));
  CHECK_FALSE(parse_size("99999999999999999999", &b));
  CHECK(format_size(size_t(32) << 30) == "32G");
  CHECK(format_size(1000) == "1000");
}

TEST_CASE("config: defaults, environment and attr overrides") {
  Config c;
  REQUIRE(load_config(nullptr, &c) == TMASHMEM_SUCCESS);
  CHECK(c.heap_max == (size_t(32) << 30));
  {
    EnvGuard heap("TMASHMEM_HEAP_MAX", "3G");
    EnvGuard chunk("TMASHMEM_CHUNK_SIZE", "64M");
    EnvGuard boot("TMASHMEM_BOOTSTRAP", "single");
    EnvGuard handle("TMASHMEM_HANDLE_TYPE", "posix_fd");
    REQUIRE(load_config(nullptr, &c) == TMASHMEM_SUCCESS);
    CHECK(c.heap_max == (size_t(3) << 30));
    CHECK(c.chunk_size == (size_t(64) << 20));
    CHECK(c.bootstrap == TMASHMEM_BOOTSTRAP_SINGLE);
    CHECK(c.handle_type == TMASHMEM_HANDLE_POSIX_FD);
    tmashmem_init_attr_t attr;
    tmashmem_init_attr_set_defaults(&attr);
    attr.heap_max = size_t(5) << 30;
    REQUIRE(load_config(&attr, &c) == TMASHMEM_SUCCESS);
    CHECK(c.heap_max == (size_t(5) << 30));
    CHECK(c.chunk_size == (size_t(64) << 20));  // untouched field keeps the environment's value
  }
}

TEST_CASE("config: bad values name the variable, the value and the accepted forms") {
  Config c;
  {
    EnvGuard g("TMASHMEM_HEAP_MAX", "lots");
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
    std::string m = tmashmem_last_error();
    CHECK(m.find("TMASHMEM_HEAP_MAX") != std::string::npos);
    CHECK(m.find("lots") != std::string::npos);
  }
  {
    EnvGuard g("TMASHMEM_HANDLE_TYPE", "carrier-pigeon");
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
    std::string m = tmashmem_last_error();
    CHECK(m.find("posix_fd") != std::string::npos);
    CHECK(m.find("carrier-pigeon") != std::string::npos);
  }
  {
    EnvGuard g("TMASHMEM_BOOTSTRAP_TIMEOUT_MS", "0");
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
  }
  {
    EnvGuard g("TMASHMEM_MULTICAST", "maybe");
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
  }
  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.version = 77;
  CHECK(load_config(&attr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::string(tmashmem_last_error()).find("tmashmem_init_attr_set_defaults") !=
        std::string::npos);
}

TEST_CASE("config: TMASHMEM_STREAM_MEM_OPS is on by default; 0 or off selects the kernels") {
  Config c;
  unsetenv("TMASHMEM_STREAM_MEM_OPS");
  REQUIRE(load_config(nullptr, &c) == TMASHMEM_SUCCESS);
  CHECK(c.stream_mem_ops);
  const struct {
    const char* text;
    bool want;
  } cases[] = {{"0", false}, {"off", false}, {"OFF", false}, {"1", true}, {"on", true}};
  for (const auto& k : cases) {
    EnvGuard g("TMASHMEM_STREAM_MEM_OPS", k.text);
    c.stream_mem_ops = !k.want;
    REQUIRE(load_config(nullptr, &c) == TMASHMEM_SUCCESS);
    CHECK(c.stream_mem_ops == k.want);
  }
  {
    EnvGuard g("TMASHMEM_STREAM_MEM_OPS", "sometimes");
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
    std::string m = tmashmem_last_error();
    CHECK(m.find("TMASHMEM_STREAM_MEM_OPS") != std::string::npos);
    CHECK(m.find("sometimes") != std::string::npos);
    CHECK(m.find("off") != std::string::npos);
  }
  bool listed = false;
  for (const SettingInfo& s : settings())
    if (std::string(s.name) == "TMASHMEM_STREAM_MEM_OPS") {
      listed = true;
      CHECK(std::string(s.default_value) == "on");
    }
  CHECK(listed);  // so tmashmem-info prints it
}

TEST_CASE("config: TMASHMEM_COLL_STAGED is gather by default; all, off and bad words") {
  Config c;
  unsetenv("TMASHMEM_COLL_STAGED");
  c.coll_staged = CollStaged::Off;
  REQUIRE(load_config(nullptr, &c) == TMASHMEM_SUCCESS);
  CHECK(c.coll_staged == CollStaged::Gather);
  const struct {
    const char* text;
    CollStaged want;
  } cases[] = {{"all", CollStaged::All},
               {"OFF", CollStaged::Off},
               {"Gather", CollStaged::Gather},
               {"off", CollStaged::Off}};
  for (const auto& k : cases) {
    EnvGuard g("TMASHMEM_COLL_STAGED", k.text);
    c.coll_staged = k.want == CollStaged::All ? CollStaged::Off : CollStaged::All;
    REQUIRE(load_config(nullptr, &c) == TMASHMEM_SUCCESS);
    CHECK(c.coll_staged == k.want);
  }
  for (const char* bad : {"some", "256K", "1"}) {
    EnvGuard g("TMASHMEM_COLL_STAGED", bad);
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
    const std::string m = tmashmem_last_error();
    CHECK(m.find("TMASHMEM_COLL_STAGED") != std::string::npos);
    CHECK(m.find(bad) != std::string::npos);
    CHECK(m.find("gather") != std::string::npos);
  }
}

TEST_CASE("config: TMASHMEM_COLL_LL_BYTES is 256K by default; sizes and 0 parse, junk does not") {
  Config c;
  unsetenv("TMASHMEM_COLL_LL_BYTES");
  REQUIRE(load_config(nullptr, &c) == TMASHMEM_SUCCESS);
  CHECK(c.coll_ll_bytes == size_t(256) << 10);
  auto parsed = [&](const char* text) {
    EnvGuard g("TMASHMEM_COLL_LL_BYTES", text);
    c.coll_ll_bytes = 12345;
    if (load_config(nullptr, &c) == TMASHMEM_SUCCESS) return std::to_string(c.coll_ll_bytes);
    const std::string m = tmashmem_last_error();
    const bool named = m.find("TMASHMEM_COLL_LL_BYTES") != std::string::npos &&
                       m.find(text) != std::string::npos &&
                       m.find("0 for off") != std::string::npos;
    return named ? std::string("refused, naming it") : "refused: " + m;
  };
  CHECK(parsed("0") == "0");
  CHECK(parsed("64K") == "65536");
  CHECK(parsed("1M") == "1048576");
  CHECK(parsed("4096") == "4096");
  CHECK(parsed("lots") == "refused, naming it");
  CHECK(parsed("-1") == "refused, naming it");
  CHECK(parsed("16Q") == "refused, naming it");
}

TEST_CASE("config: every setting has a default and a help line") {
  for (const SettingInfo& s : settings()) {
    CHECK(std::string(s.name).rfind("TMASHMEM_", 0) == 0);
    CHECK(std::string(s.default_value).size() > 0);
    CHECK(std::string(s.help).size() > 20);
  }
}

TEST_CASE("config: an attr field is validated like its environment variable") {
  Config c;
  auto rejected = [&c](const tmashmem_init_attr_t& attr, const char* field, const char* value) {
    const tmashmem_status_t st = load_config(&attr, &c);
    const std::string m = tmashmem_last_error();
    INFO(m);
    CHECK(st == TMASHMEM_ERROR_INVALID_VALUE);
    CHECK(m.find(std::string("tmashmem_init_attr_t.") + field + " = " + value) !=
          std::string::npos);
    return st == TMASHMEM_ERROR_INVALID_VALUE;
  };
  tmashmem_init_attr_t attr;
  // The environment rejects these values of the same settings.
  {
    EnvGuard g("TMASHMEM_BOOTSTRAP_TIMEOUT_MS", "-5");
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
  }
  {
    EnvGuard g("TMASHMEM_DEBUG", "-1");
    CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
  }
  tmashmem_init_attr_set_defaults(&attr);
  attr.bootstrap_timeout_ms = -5;
  CHECK(rejected(attr, "bootstrap_timeout_ms", "-5"));
  CHECK(std::string(tmashmem_last_error()).find("TMASHMEM_BOOTSTRAP_TIMEOUT_MS") !=
        std::string::npos);
  tmashmem_init_attr_set_defaults(&attr);
  attr.debug = -1;
  CHECK(rejected(attr, "debug", "-1"));
  tmashmem_init_attr_set_defaults(&attr);
  // What a C caller may store in the enum fields.
  const int32_t seven = 7, minus_two = -2;
  static_assert(sizeof attr.bootstrap == sizeof seven, "C enums are int-sized");
  std::memcpy(&attr.bootstrap, &seven, sizeof seven);
  CHECK(rejected(attr, "bootstrap", "7"));
  tmashmem_init_attr_set_defaults(&attr);
  std::memcpy(&attr.handle_type, &minus_two, sizeof minus_two);
  CHECK(rejected(attr, "handle_type", "-2"));
  for (int i = 0; i < 4; ++i) {
    tmashmem_init_attr_set_defaults(&attr);
    attr.reserved[i] = uint64_t(1) << (i * 9);
    CHECK(rejected(attr, ("reserved[" + std::to_string(i) + "]").c_str(),
                   std::to_string(attr.reserved[i]).c_str()));
  }
  // Zero (AUTO) takes the environment; valid values override it.
  tmashmem_init_attr_set_defaults(&attr);
  {
    EnvGuard g("TMASHMEM_BOOTSTRAP_TIMEOUT_MS", "777");
    REQUIRE(load_config(&attr, &c) == TMASHMEM_SUCCESS);
    CHECK(c.bootstrap_timeout_ms == 777);
    attr.bootstrap_timeout_ms = 1;
    attr.debug = 2;
    attr.handle_type = TMASHMEM_HANDLE_FABRIC;
    attr.bootstrap = TMASHMEM_BOOTSTRAP_SINGLE;
    attr.chunk_size = 4096;
    REQUIRE(load_config(&attr, &c) == TMASHMEM_SUCCESS);
    CHECK(c.bootstrap_timeout_ms == 1);
    CHECK(c.debug == 2);
    CHECK(c.handle_type == TMASHMEM_HANDLE_FABRIC);
    CHECK(c.bootstrap == TMASHMEM_BOOTSTRAP_SINGLE);
    CHECK(c.chunk_size == 4096);
  }
}

TEST_CASE("config: every default parses as its setting's type") {
  for (const SettingInfo& s : settings()) {
    INFO(s.name << " default \"" << s.default_value << "\"");
    CHECK(s.valid(s.default_value));
    CHECK(s.expected().size() > 3);
  }
  CHECK_FALSE(settings().front().valid("not-a-size"));
}

namespace {

// The cells of one Markdown table row "| a | b | c |"; empty when `line` is not a row.
std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  if (line.size() < 4 || line.compare(0, 2, "| ") != 0 || line.compare(line.size() - 2, 2, " |"))
    return cells;
  const std::string inner = line.substr(2, line.size() - 4);
  size_t start = 0;
  for (;;) {
    const size_t bar = inner.find(" | ", start);
    cells.push_back(inner.substr(start, bar - start));
    if (bar == std::string::npos) break;
    start = bar + 3;
  }
  return cells;
}

}  // namespace

TEST_CASE("config: README.md's settings table is runtime/settings.h's table") {
  std::ifstream readme(TMASHMEM_README);
  REQUIRE(readme.good());
  std::string line;
  bool header = false;
  while (std::getline(readme, line))
    if (line == "| setting | default | meaning |") {
      header = true;
      break;
    }
  REQUIRE(header);
  REQUIRE(std::getline(readme, line));
  CHECK(line == "| --- | --- | --- |");
  std::vector<std::vector<std::string>> rows;
  while (std::getline(readme, line) && !line.empty() && line[0] == '|') {
    rows.push_back(table_cells(line));
    INFO("README row: " << line);
    CHECK(rows.back().size() == 3);
  }
  INFO("regenerate the README's table with `tmashmem-info --markdown`");
  REQUIRE(rows.size() == settings().size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const SettingInfo& s = settings()[i];
    if (rows[i].size() != 3) continue;
    INFO("row " << i << ": " << s.name);
    CHECK(rows[i][0] == "`" + std::string(s.name) + "`");
    CHECK(rows[i][1] == s.default_value);
    CHECK(rows[i][2] == s.help);
  }
  // The same rows tmashmem-info --markdown prints.
  CHECK(settings_markdown().find("| `TMASHMEM_HEAP_MAX` | 32G | ") != std::string::npos);
}

TEST_CASE("multicast gate: kill switches and the user setting each turn it off") {
  Config c;
  std::string why;
  unsetenv("NVSHMEM_DISABLE_NVLS");
  unsetenv("NCCL_NVLS_ENABLE");
  unsetenv("TORCH_SYMM_MEM_DISABLE_MULTICAST");
  CHECK(multicast_allowed(c, true, &why));
  CHECK_FALSE(multicast_allowed(c, false, &why));
  {
    EnvGuard g("NVSHMEM_DISABLE_NVLS", "1");
    CHECK_FALSE(multicast_allowed(c, true, &why));
    CHECK(why.find("NVSHMEM_DISABLE_NVLS") != std::string::npos);
  }
  {
    EnvGuard g("NCCL_NVLS_ENABLE", "0");
    CHECK_FALSE(multicast_allowed(c, true, &why));
  }
  {
    EnvGuard g("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1");
    CHECK_FALSE(multicast_allowed(c, true, &why));
  }
  c.multicast = "off";
  CHECK_FALSE(multicast_allowed(c, true, &why));
  CHECK(why.find("TMASHMEM_MULTICAST") != std::string::npos);
}

// Found by tests/fuzz/fuzz_settings.cpp (corpus regression_*): strtol/strtoull skip white
// space and take a sign, so " -5" was a heap of 2^64 - 5 bytes and "\v2" a timeout of 2;
// and "4iB" (no unit letter) was 4 bytes.
TEST_CASE("config: numbers start with a digit (or '-' for integers): no space, no '+'") {
  size_t bytes = 0;
  for (const char* text : {" -5", " 5", "\t64M", "+5", "-5", "\v2", "4iB", "4ib"}) {
    INFO("size \"" << text << "\"");
    CHECK_FALSE(parse_size(text, &bytes));
  }
  long value = 0;
  for (const char* text : {" 5", "\v2", "+5", "- 5", "", "-"}) {
    INFO("integer \"" << text << "\"");
    CHECK_FALSE(parse_int(text, -100, 100, &value));
  }
  CHECK(parse_int("-5", -100, 100, &value));
  CHECK(value == -5);
  CHECK(parse_size("5", &bytes));
  CHECK(bytes == 5);
  Config c;
  EnvGuard g("TMASHMEM_HEAP_MAX", " -5");
  CHECK(load_config(nullptr, &c) == TMASHMEM_ERROR_INVALID_VALUE);
}
