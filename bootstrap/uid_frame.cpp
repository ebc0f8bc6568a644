#include "bootstrap/uid_frame.h"

#include <cstring>

namespace tmashmem {

const char* frame_verdict_name(FrameVerdict v) {
  switch (v) {  // no default: -Wswitch names a verdict added without a name
    case FrameVerdict::kOk:
      return "ok";
    case FrameVerdict::kFail:
      return "fail";
    case FrameVerdict::kGarbled:
      return "garbled";
    case FrameVerdict::kOutOfStep:
      return "out of step";
    case FrameVerdict::kIncomplete:
      return "incomplete";
  }
  return "?";
}

FrameVerdict judge_frame(const FrameHeader& h, const FrameRule& rule) {
  if (h.magic != kFrameMagic || h.length > kMaxFramePayload ||
      (rule.check_sender && h.sender != rule.sender))
    return FrameVerdict::kGarbled;
  if (rule.accept_fail && h.tag == kTagFail) return FrameVerdict::kFail;
  if (h.tag != rule.tag || h.length != rule.length ||
      (rule.check_sequence && h.sequence != rule.sequence))
    return FrameVerdict::kOutOfStep;
  return FrameVerdict::kOk;
}

bool decode_frame_header(const void* bytes, size_t n, FrameHeader* out) {
  if (n < sizeof *out) return false;
  std::memcpy(out, bytes, sizeof *out);
  return true;
}

FrameVerdict decode_frame(const void* bytes, size_t n, const FrameRule& rule, FrameHeader* h,
                          size_t* payload_at, size_t* payload_bytes) {
  *payload_at = sizeof *h;
  *payload_bytes = 0;
  if (!decode_frame_header(bytes, n, h)) return FrameVerdict::kIncomplete;
  const FrameVerdict v = judge_frame(*h, rule);
  if (v != FrameVerdict::kOk && v != FrameVerdict::kFail) return v;
  if (n - sizeof *h < h->length) return FrameVerdict::kIncomplete;
  *payload_bytes = h->length;
  return v;
}

bool decode_fail_body(const void* body, size_t n, int32_t* status, std::string* text) {
  if (n < sizeof *status) return false;
  std::memcpy(status, body, sizeof *status);
  text->assign(static_cast<const char*>(body) + sizeof *status, n - sizeof *status);
  return true;
}

}  // namespace tmashmem
