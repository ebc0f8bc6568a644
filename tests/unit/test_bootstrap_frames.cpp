// The unique-id bootstrap's frame decoder (bootstrap/uid_frame.h) on one frame of each kind a
// receiver can meet: the expected frame, a Fail frame from the root, a garbled one (magic,
// sender, a length over kMaxFramePayload), one out of step (tag, call, length), and frames cut
// short. The fuzz target tests/fuzz/fuzz_uid_wire.cpp checks the same rules on any bytes.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/uid_frame.h"
#include "common/catch.h"

using tmashmem::FrameHeader;
using tmashmem::FrameRule;
using tmashmem::FrameVerdict;

namespace {

std::vector<uint8_t> frame(uint32_t tag, uint64_t seq, int32_t sender, const std::string& payload,
                           uint32_t magic = tmashmem::kFrameMagic) {
  FrameHeader h{magic, tag, seq, sender, static_cast<uint32_t>(payload.size())};
  std::vector<uint8_t> b(sizeof h + payload.size());
  std::memcpy(b.data(), &h, sizeof h);
  std::memcpy(b.data() + sizeof h, payload.data(), payload.size());
  return b;
}

// What a rank expects from the root: the result of call 3, 16 bytes; a Fail frame may come.
FrameRule result_rule() {
  FrameRule r;
  r.tag = tmashmem::kTagResult;
  r.length = 16;
  r.sequence = 3;
  r.check_sequence = true;
  r.sender = 0;
  r.check_sender = true;
  r.accept_fail = true;
  return r;
}

FrameVerdict decode(const std::vector<uint8_t>& b, size_t* at = nullptr, size_t* bytes = nullptr) {
  FrameHeader h;
  size_t a = 0, n = 0;
  FrameVerdict v = tmashmem::decode_frame(b.data(), b.size(), result_rule(), &h, &a, &n);
  if (at) *at = a;
  if (bytes) *bytes = n;
  return v;
}

}  // namespace

TEST_CASE("uid frames: the expected frame, its payload right after the header") {
  size_t at = 0, bytes = 0;
  CHECK(decode(frame(tmashmem::kTagResult, 3, 0, std::string(16, 'x')), &at, &bytes) ==
        FrameVerdict::kOk);
  CHECK(at == sizeof(FrameHeader));
  CHECK(bytes == 16);
}

TEST_CASE("uid frames: a Fail frame from the root, its status and text") {
  std::string body(4, '\0');
  const int32_t status = 10;
  std::memcpy(&body[0], &status, 4);
  body += "timed out";
  const std::vector<uint8_t> b = frame(tmashmem::kTagFail, 3, 0, body);
  size_t at = 0, bytes = 0;
  REQUIRE(decode(b, &at, &bytes) == FrameVerdict::kFail);
  int32_t code = 0;
  std::string text;
  REQUIRE(tmashmem::decode_fail_body(b.data() + at, bytes, &code, &text));
  CHECK(code == 10);
  CHECK(text == "timed out");
  CHECK_FALSE(tmashmem::decode_fail_body(b.data() + at, 3, &code, &text));  // no status
  FrameRule no_fail = result_rule();
  no_fail.accept_fail = false;  // the root hearing a rank: a Fail frame is out of step
  FrameHeader h;
  CHECK(tmashmem::decode_frame(b.data(), b.size(), no_fail, &h, &at, &bytes) ==
        FrameVerdict::kOutOfStep);
}

TEST_CASE("uid frames: garbled (magic, sender, length over the limit) and out of step") {
  CHECK(decode(frame(tmashmem::kTagResult, 3, 0, std::string(16, 'x'), 0x12345678u)) ==
        FrameVerdict::kGarbled);
  CHECK(decode(frame(tmashmem::kTagResult, 3, 2, std::string(16, 'x'))) == FrameVerdict::kGarbled);
  std::vector<uint8_t> huge = frame(tmashmem::kTagResult, 3, 0, "");
  const uint32_t over = tmashmem::kMaxFramePayload + 1;
  std::memcpy(huge.data() + offsetof(FrameHeader, length), &over, sizeof over);
  CHECK(decode(huge) == FrameVerdict::kGarbled);
  CHECK(decode(frame(tmashmem::kTagGather, 3, 0, std::string(16, 'x'))) ==
        FrameVerdict::kOutOfStep);
  CHECK(decode(frame(tmashmem::kTagResult, 4, 0, std::string(16, 'x'))) ==
        FrameVerdict::kOutOfStep);
  CHECK(decode(frame(tmashmem::kTagResult, 3, 0, std::string(15, 'x'))) ==
        FrameVerdict::kOutOfStep);
}

TEST_CASE("uid frames: cut short, a frame is incomplete until its last payload byte") {
  const std::vector<uint8_t> b = frame(tmashmem::kTagResult, 3, 0, std::string(16, 'x'));
  for (size_t n = 0; n < b.size(); ++n) {
    const std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<long>(n));
    CHECK(decode(cut) == FrameVerdict::kIncomplete);
  }
  CHECK(decode(b) == FrameVerdict::kOk);
}
