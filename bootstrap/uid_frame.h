// The unique-id bootstrap's frame decoder: what a receiver makes of a frame header and of a
// Fail frame's body. Pure functions over bytes (no socket, no state), so that every
// receiving path in uid_join.cpp and uid_bootstrap.cpp judges frames the same way and the
// decoder can be fuzzed (tests/fuzz/fuzz_uid_wire.cpp). Wire format: uid_protocol.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "bootstrap/uid_protocol.h"

namespace tmashmem {

// What the receiver expects of the next frame. A check_* flag off leaves that field free.
struct FrameRule {
  uint32_t tag = 0;
  uint64_t length = 0;  // exact payload bytes
  uint64_t sequence = 0;
  bool check_sequence = false;
  int32_t sender = 0;
  bool check_sender = false;
  bool accept_fail = false;  // a rank hearing the root: a Fail frame may come instead
};

// frame_verdict_name has one name per value (a switch: -Wswitch catches a new one).
enum class FrameVerdict {
  kOk,          // the expected frame; `length` payload bytes follow
  kFail,        // a Fail frame (accept_fail): its body (decode_fail_body) follows
  kGarbled,     // not a frame of this protocol: magic, sender, or a length over the limit
  kOutOfStep,   // a frame, but another tag, call or length than expected
  kIncomplete,  // decode_frame only: fewer bytes than the header (and payload) need
};

const char* frame_verdict_name(FrameVerdict v);

// Judges a received header against `rule`.
FrameVerdict judge_frame(const FrameHeader& h, const FrameRule& rule);

// Reads a header from the first sizeof(FrameHeader) of `bytes` (any alignment); false when
// `n` is shorter.
bool decode_frame_header(const void* bytes, size_t n, FrameHeader* out);

// A whole frame in `bytes`: the header, judged, then (for kOk and kFail) the payload, whose
// offset and size go to *payload_at / *payload_bytes. kIncomplete until all of it is there.
FrameVerdict decode_frame(const void* bytes, size_t n, const FrameRule& rule, FrameHeader* h,
                          size_t* payload_at, size_t* payload_bytes);

// A Fail frame's body: int32 status, then the message text. False when shorter than the
// status.
bool decode_fail_body(const void* body, size_t n, int32_t* status, std::string* text);

}  // namespace tmashmem
