// formats/text_encoding.h on arbitrary bytes (the whole input is one name):
// - utf8_sequence_length agrees with Unicode Table 3-7 at every offset;
// - append_valid_utf8 gives valid UTF-8, one U+FFFD per bad byte, leaves
//   valid input alone, is idempotent and only appends;
// - append_json_escaped gives the inside of a JSON string that a strict
//   decoder (and nlohmann::json) reads back as exactly the repaired text.
#include <nlohmann/json.hpp>

#include "formats/text_encoding.h"
#include "fuzz/fuzz_support.h"

using nb::formats::append_json_escaped;
using nb::formats::append_valid_utf8;
using nb::formats::utf8_sequence_length;
using nbfuzz::shown;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  for (size_t i = 0; i < in.size(); ++i) {
    const size_t got = utf8_sequence_length(in, i), want = nbfuzz::ref_utf8_length(in, i);
    NB_FUZZ_CHECK(got == want, "offset " + std::to_string(i) + ": nb says " + std::to_string(got) + ", Table 3-7 says " +
                                   std::to_string(want) + " in " + shown(in));
  }

  const std::string repaired = nbfuzz::ref_repaired(in);
  std::string valid = "prefix";
  append_valid_utf8(valid, in);
  NB_FUZZ_CHECK(valid.compare(0, 6, "prefix") == 0, "append_valid_utf8 changed what was there");
  valid.erase(0, 6);
  NB_FUZZ_CHECK(nbfuzz::ref_valid_utf8(valid), "not valid UTF-8: " + shown(valid));
  NB_FUZZ_CHECK(valid == repaired, "repaired differently: " + shown(valid) + " vs " + shown(repaired));
  if (nbfuzz::ref_valid_utf8(in)) NB_FUZZ_CHECK(valid == in, "valid input changed: " + shown(in));
  std::string again;
  append_valid_utf8(again, valid);
  NB_FUZZ_CHECK(again == valid, "not idempotent: " + shown(valid));

  std::string escaped = "\"";
  append_json_escaped(escaped, in);
  NB_FUZZ_CHECK(escaped[0] == '"', "append_json_escaped changed what was there");
  const std::string_view inside = std::string_view(escaped).substr(1);
  for (char c : inside) {
    NB_FUZZ_CHECK(static_cast<uint8_t>(c) >= 0x20 && c != 0x7F, "raw control byte in " + shown(inside));
  }
  std::string decoded, error;
  NB_FUZZ_CHECK(nbfuzz::decode_json_string(inside, decoded, error), error + " in " + shown(inside));
  NB_FUZZ_CHECK(decoded == repaired, "JSON round trip: " + shown(decoded) + " vs " + shown(repaired));

  escaped += '"';
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(escaped);
  } catch (const std::exception& e) {
    NB_FUZZ_CHECK(false, std::string("nlohmann::json rejects ") + shown(escaped) + ": " + e.what());
  }
  NB_FUZZ_CHECK(j.is_string() && j.get<std::string>() == repaired, "nlohmann::json reads " + shown(j.dump()));
  return 0;
}
