// The unique-id bootstrap's wire format (see uid_bootstrap.h for the protocol).
// Both ends are this library on little- or big-endian hosts of one job; fields are
// in the sender's byte order, and a magic that does not match is refused.
#pragma once

#include <cstdint>

namespace tmashmem {

constexpr uint32_t kFrameMagic = 0x46554d54u;  // "TMUF" little-endian
// Largest payload a frame may announce (an all-gather result); more is refused.
constexpr uint32_t kMaxFramePayload = 1u << 30;

enum FrameTag : uint32_t {
  kTagChallenge = 1,  // root -> rank: Challenge
  kTagHello = 2,      // rank -> root: Hello
  kTagWelcome = 3,    // root -> rank: Welcome, once every rank is in
  kTagFail = 4,       // root -> rank: int32 status + message text; the job's bootstrap failed
  kTagGather = 5,     // rank -> root: this rank's block of a collective
  kTagResult = 6,     // root -> rank: the collective's result
};

struct FrameHeader {
  uint32_t magic;
  uint32_t tag;
  uint64_t sequence;  // collectives: 1, 2, ... in call order; join frames: 0
  int32_t sender;     // rank of the sender (root: 0)
  uint32_t length;    // payload bytes that follow
};

struct Challenge {
  uint8_t nonce[16];
};

struct Hello {
  int32_t rank;
  int32_t size;
  int32_t pid;
  uint32_t reserved;
  uint64_t mac;  // siphash24(secret, MacInput{nonce, "hello", rank, size})
};

struct Welcome {
  int32_t size;
  uint32_t reserved;
  uint64_t mac;  // siphash24(secret, MacInput{nonce, "welcome", rank, size})
};

struct MacInput {
  uint8_t nonce[16];
  char purpose[8];
  int32_t rank;
  int32_t size;
};

}  // namespace tmashmem
