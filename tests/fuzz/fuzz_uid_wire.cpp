// Fuzzes the unique-id bootstrap's frame decoder (bootstrap/uid_frame.h): what a receiver
// makes of the bytes a peer sent. Input: one flag byte, then the frame bytes.
//   bit 0: a Fail frame is accepted (a rank hearing the root)
//   bit 1 / bit 2: the sequence / the sender are checked
//   bit 3: the expected tag, length, sequence and sender are the frame's own (reaches kOk)
//   bit 4: the frame's magic is made right (reaches the checks behind it)
// Contract on every input: no crash or undefined behaviour; decode_frame's verdict equals an
// independent oracle that reads the fields at their wire offsets; kOk and kFail place the
// payload inside the input; judge_frame agrees on the header; a Fail body decodes exactly
// when it holds the status, and its text is the rest of the body.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/uid_frame.h"
#include "fuzz_contract.h"

using fuzz::require;
using tmashmem::FrameVerdict;

namespace {

// The wire offsets of FrameHeader's fields (uid_protocol.h), independent of the struct.
constexpr size_t kHeaderBytes = 24;
static_assert(sizeof(tmashmem::FrameHeader) == kHeaderBytes, "FrameHeader is 24 bytes on the wire");

template <class T>
T field(const std::vector<uint8_t>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

FrameVerdict oracle(const std::vector<uint8_t>& b, const tmashmem::FrameRule& rule) {
  if (b.size() < kHeaderBytes) return FrameVerdict::kIncomplete;
  const uint32_t magic = field<uint32_t>(b, 0), tag = field<uint32_t>(b, 4);
  const uint64_t sequence = field<uint64_t>(b, 8);
  const int32_t sender = field<int32_t>(b, 16);
  const uint32_t length = field<uint32_t>(b, 20);
  if (magic != 0x46554d54u || length > (1u << 30) || (rule.check_sender && sender != rule.sender))
    return FrameVerdict::kGarbled;
  FrameVerdict v = FrameVerdict::kOk;
  if (rule.accept_fail && tag == 4)
    v = FrameVerdict::kFail;
  else if (tag != rule.tag || length != rule.length ||
           (rule.check_sequence && sequence != rule.sequence))
    return FrameVerdict::kOutOfStep;
  return b.size() - kHeaderBytes < length ? FrameVerdict::kIncomplete : v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::vector<uint8_t> frame(data + 1, data + size);
  if ((flags & 16) && frame.size() >= 4) {
    const uint32_t magic = tmashmem::kFrameMagic;
    std::memcpy(frame.data(), &magic, sizeof magic);
  }
  tmashmem::FrameRule rule;
  rule.accept_fail = (flags & 1) != 0;
  rule.check_sequence = (flags & 2) != 0;
  rule.check_sender = (flags & 4) != 0;
  rule.tag = tmashmem::kTagResult;
  rule.length = 16;
  rule.sequence = 1;
  if ((flags & 8) && frame.size() >= kHeaderBytes) {
    rule.tag = field<uint32_t>(frame, 4);
    rule.sequence = field<uint64_t>(frame, 8);
    rule.sender = field<int32_t>(frame, 16);
    rule.length = field<uint32_t>(frame, 20);
  }

  tmashmem::FrameHeader h;
  size_t at = 0, bytes = 0;
  const FrameVerdict v = tmashmem::decode_frame(frame.data(), frame.size(), rule, &h, &at, &bytes);
  require(v == oracle(frame, rule), "the verdict is the oracle's", tmashmem::frame_verdict_name(v));
  require(tmashmem::frame_verdict_name(v) != nullptr, "every verdict has a name");
  if (frame.size() >= kHeaderBytes) {
    const FrameVerdict judged = tmashmem::judge_frame(h, rule);
    require(v == judged || v == FrameVerdict::kIncomplete, "decode_frame and judge_frame agree");
  }
  if (v == FrameVerdict::kOk || v == FrameVerdict::kFail) {
    require(at == kHeaderBytes && bytes == h.length && at + bytes <= frame.size(),
            "the payload lies inside the input, right after the header");
    require(v == FrameVerdict::kFail || (h.tag == rule.tag && h.length == rule.length),
            "an accepted frame is the expected one");
  }
  if (v == FrameVerdict::kFail) {
    int32_t status = 0;
    std::string text;
    const bool decoded = tmashmem::decode_fail_body(frame.data() + at, bytes, &status, &text);
    require(decoded == (bytes >= sizeof status), "a Fail body decodes when it holds the status");
    if (decoded) {
      require(text.size() == bytes - sizeof status, "the text is the rest of the body");
      require(std::memcmp(text.data(), frame.data() + at + sizeof status, text.size()) == 0,
              "the text is the body's bytes");
    }
  }
  return 0;
}
