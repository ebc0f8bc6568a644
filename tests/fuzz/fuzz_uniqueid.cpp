// Fuzzes unique-id text parsing (tmashmem_uniqueid_from_string, bootstrap/uid_id.cpp).
// Contract on every input: it never crashes; it accepts only a valid id (uid_valid) and
// otherwise returns TMASHMEM_ERROR_INVALID_VALUE with a message; an accepted id's hex text
// (tmashmem_uniqueid_to_string) parses back to the same 64 bytes. Raw 64-byte inputs are
// also tried as ids directly (uid_valid must not crash on any bytes).
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/uid_id.h"
#include "fuzz_contract.h"
#include "tmashmem/tmashmem.h"

using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  text = text.c_str();  // the public call takes a C string
  tmashmem_uniqueid_t id;
  std::memset(&id, 0xA5, sizeof id);
  const tmashmem_status_t st = tmashmem_uniqueid_from_string(text.c_str(), &id);
  require(st == TMASHMEM_SUCCESS || st == TMASHMEM_ERROR_INVALID_VALUE,
          "parsing returns SUCCESS or INVALID_VALUE");
  if (st != TMASHMEM_SUCCESS) {
    require(std::strlen(tmashmem_last_error()) > 0, "a refusal says why");
  } else {
    std::string why;
    require(tmashmem::uid_valid(id, &why), "an accepted id is valid");
    char hex[TMASHMEM_UNIQUEID_TEXT_BYTES];
    require(tmashmem_uniqueid_to_string(&id, hex, sizeof hex) == TMASHMEM_SUCCESS, "to_string");
    require(std::strlen(hex) == TMASHMEM_UNIQUEID_TEXT_BYTES - 1, "hex is 128 digits");
    tmashmem_uniqueid_t back;
    require(tmashmem_uniqueid_from_string(hex, &back) == TMASHMEM_SUCCESS, "hex parses back");
    require(std::memcmp(&back, &id, sizeof id) == 0, "hex round-trips the bytes");
    (void)tmashmem::uid_root_text(id);
  }
  if (size >= sizeof(tmashmem_uniqueid_t)) {
    tmashmem_uniqueid_t raw;
    std::memcpy(&raw, data, sizeof raw);
    std::string why;
    if (tmashmem::uid_valid(raw, &why))
      (void)tmashmem::uid_root_text(raw);
    else
      require(!why.empty(), "an invalid raw id says why");
  }
  return 0;
}
