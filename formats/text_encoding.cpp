#include "formats/text_encoding.h"

#include <cstdint>

namespace nb::formats {

size_t utf8_sequence_length(std::string_view in, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(in[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) { len = 2; cp = b0 & 0x1F; }
  else if (b0 >= 0xE0 && b0 <= 0xEF) { len = 3; cp = b0 & 0x0F; }
  else if (b0 >= 0xF0 && b0 <= 0xF4) { len = 4; cp = b0 & 0x07; }
  else return 0;  // continuation byte, overlong 2-byte lead (C0/C1) or > U+10FFFF
  if (i + len > in.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const uint8_t b = byte(i + k);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Reject overlong forms, UTF-16 surrogates and values past U+10FFFF.
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  if (cp > 0x10FFFF) return 0;
  return len;
}

static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

void append_valid_utf8(std::string& out, std::string_view in) {
  for (size_t i = 0; i < in.size();) {
    const size_t n = utf8_sequence_length(in, i);
    if (n == 0) { out += kReplacement; ++i; continue; }
    out.append(in.data() + i, n);
    i += n;
  }
}

void append_json_escaped(std::string& out, std::string_view in) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < in.size();) {
    // Plain printable ASCII, by far the common case, goes in runs.
    size_t run = i;
    while (run < in.size()) {
      const uint8_t p = static_cast<uint8_t>(in[run]);
      if (p < 0x20 || p >= 0x7F || p == '"' || p == '\\') break;
      ++run;
    }
    if (run != i) {
      out.append(in.data() + i, run - i);
      i = run;
      continue;
    }
    const uint8_t c = static_cast<uint8_t>(in[i]);
    if (c >= 0x80) {
      const size_t n = utf8_sequence_length(in, i);
      if (n == 0) { out += kReplacement; ++i; continue; }
      out.append(in.data() + i, n);
      i += n;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
}

}  // namespace nb::formats
