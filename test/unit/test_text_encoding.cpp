#include <catch2/catch.hpp>

#include "formats/text_encoding.h"

using namespace nb::formats;

static std::string esc(std::string_view s) {
  std::string out;
  append_json_escaped(out, s);
  return out;
}

TEST_CASE("JSON escaping of quotes, backslashes and control characters", "[encoding]") {
  REQUIRE(esc("plain") == "plain");
  REQUIRE(esc("a\"b\\c") == "a\\\"b\\\\c");
  REQUIRE(esc("\n\r\t\b\f") == "\\n\\r\\t\\b\\f");
  REQUIRE(esc(std::string_view("\x00\x01\x1f\x7f", 4)) == "\\u0000\\u0001\\u001f\\u007f");
}

TEST_CASE("valid UTF-8 passes, invalid bytes become U+FFFD", "[encoding]") {
  REQUIRE(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  const std::string fffd = "\xef\xbf\xbd";
  REQUIRE(esc("\xff") == fffd);
  REQUIRE(esc("a\xc3") == "a" + fffd);                      // truncated sequence
  REQUIRE(esc("\xc0\xaf") == fffd + fffd);                  // overlong '/'
  REQUIRE(esc("\xe0\x80\xaf") == fffd + fffd + fffd);       // overlong 3-byte
  REQUIRE(esc("\xed\xa0\x80") == fffd + fffd + fffd);       // UTF-16 surrogate
  REQUIRE(esc("\xf4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // > U+10FFFF
  REQUIRE(esc("\x80x") == fffd + "x");                      // lone continuation
}

TEST_CASE("append_valid_utf8 keeps control characters but fixes encoding", "[encoding]") {
  std::string out;
  append_valid_utf8(out, "a\nb\xfe");
  REQUIRE(out == "a\nb\xef\xbf\xbd");
}
