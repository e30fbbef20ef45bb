// Shared by the fuzz targets: a check that fails loudly, input splitting, and
// reference UTF-8 / JSON-string decoders written from the specifications
// (Unicode Table 3-7, RFC 8259) rather than from nb's code, so that a target
// compares nb against an independent reading of the same rules.
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <clocale>
#include <cstring>
#include <locale.h>
#include <string>
#include <string_view>
#include <vector>

// A broken invariant is a crash to libFuzzer: it saves the input and stops.
#define NB_FUZZ_CHECK(cond, what)                                                          \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fuzz check failed at %s:%d: %s\n  %s\n", __FILE__, __LINE__, \
                   #cond, std::string(what).c_str());                                      \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace nbfuzz {

// The first byte is the separator and the rest is split at it, so any byte can
// appear inside a field (the fuzzer picks a separator it is not using) and a
// seed stays readable: "\nfirst\nsecond" or "|first|second".
inline std::vector<std::string> split_fields(const uint8_t* data, size_t size) {
  std::vector<std::string> out;
  if (size == 0) return out;
  const char sep = static_cast<char>(data[0]);
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (;;) {
    const size_t at = rest.find(sep);
    out.emplace_back(rest.substr(0, at));
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + 1);
  }
  return out;
}

// Numbers the fuzzer can spell out ("-9223372036854775808", "0x7f", "nan",
// "1e-320"); anything else is hashed, so every field gives some number.
inline uint64_t fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}
inline int64_t number_s64(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  return end != s.c_str() ? static_cast<int64_t>(v) : static_cast<int64_t>(fnv(s));
}
inline uint64_t number_u64(const std::string& s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  return end != s.c_str() ? static_cast<uint64_t>(v) : fnv(s);
}
inline double number_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str()) return v;
  const uint64_t bits = fnv(s);
  double d;
  std::memcpy(&d, &bits, sizeof d);  // any bit pattern: NaN payloads, subnormals, infinities
  return d;
}

// Unicode Table 3-7 (well-formed byte sequences), row by row.
inline size_t ref_utf8_length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const auto in = [](uint8_t b, uint8_t lo, uint8_t hi) { return b >= lo && b <= hi; };
  const size_t left = s.size() - i;
  const uint8_t b0 = at(i);
  if (b0 <= 0x7F) return 1;
  if (in(b0, 0xC2, 0xDF)) return left >= 2 && in(at(i + 1), 0x80, 0xBF) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (left < 3) return 0;
    const uint8_t lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    return in(at(i + 1), lo, hi) && in(at(i + 2), 0x80, 0xBF) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (left < 4) return 0;
    const uint8_t lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return in(at(i + 1), lo, hi) && in(at(i + 2), 0x80, 0xBF) && in(at(i + 3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

inline bool ref_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = ref_utf8_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// What nb documents for invalid input: each byte that does not start a valid
// sequence becomes one U+FFFD.
inline std::string ref_repaired(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = ref_utf8_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The inside of a JSON string literal (RFC 8259 section 7), strictly: no raw
// control characters or quotes, only the defined escapes, surrogates only in
// pairs, raw bytes valid UTF-8. Returns false with `error` on anything else.
inline bool decode_json_string(std::string_view in, std::string& out, std::string& error) {
  const auto hex4 = [&](size_t at, uint32_t& v) {
    if (at + 4 > in.size()) return false;
    v = 0;
    for (size_t k = at; k < at + 4; ++k) {
      const char c = in[k];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  };
  for (size_t i = 0; i < in.size();) {
    const uint8_t c = static_cast<uint8_t>(in[i]);
    if (c < 0x20) { error = "raw control character at " + std::to_string(i); return false; }
    if (c == '"') { error = "raw quote at " + std::to_string(i); return false; }
    if (c >= 0x80) {
      const size_t n = ref_utf8_length(in, i);
      if (n == 0) { error = "invalid UTF-8 at " + std::to_string(i); return false; }
      out.append(in.data() + i, n);
      i += n;
      continue;
    }
    if (c != '\\') { out += static_cast<char>(c); ++i; continue; }
    if (i + 1 >= in.size()) { error = "backslash at the end"; return false; }
    const char e = in[i + 1];
    i += 2;
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(i, cp)) { error = "bad \\u escape"; return false; }
        i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) { error = "lone low surrogate"; return false; }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (i + 6 > in.size() || in[i] != '\\' || in[i + 1] != 'u' || !hex4(i + 2, lo) || lo < 0xDC00 ||
              lo > 0xDFFF) {
            error = "high surrogate without its low half";
            return false;
          }
          i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(out, cp);
        break;
      }
      default: error = std::string("unknown escape \\") + e; return false;
    }
  }
  return true;
}

// The shim runs inside programs that may have set a UTF-8 locale (Python
// does), and glibc's regex then takes its multibyte paths: while one of
// these lives, this thread uses C.UTF-8 (or stays in C where there is none).
class Utf8Locale {
 public:
  Utf8Locale() {
    static const locale_t utf8 = newlocale(LC_ALL_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    previous_ = utf8 ? uselocale(utf8) : static_cast<locale_t>(nullptr);
  }
  ~Utf8Locale() {
    if (previous_) uselocale(previous_);
  }
  Utf8Locale(const Utf8Locale&) = delete;
  Utf8Locale& operator=(const Utf8Locale&) = delete;

 private:
  locale_t previous_;
};

// For messages: the bytes with anything unprintable as \xNN, cut short.
inline std::string shown(std::string_view s, size_t max = 200) {
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace nbfuzz
