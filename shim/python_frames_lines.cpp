#include "shim/python_frames_lines.h"

namespace nb::shim::python {

int lnotab_line(const unsigned char* p, size_t n, int line, int addr) {
  int start = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    start += p[i];
    if (start > addr) break;
    line += static_cast<signed char>(p[i + 1]);
  }
  return line;
}

int pep626_line(const unsigned char* p, size_t n, int line, int addr) {
  if (addr < 0) return line;
  int end = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    end += p[i];
    const auto delta = static_cast<signed char>(p[i + 1]);
    const bool none = delta == -128;
    if (!none) line += delta;
    if (addr < end) return none ? -1 : line;  // ranges of length 0 never hold it
  }
  return -1;
}

int location_line(const unsigned char* p, size_t n, int line, int addr) {
  if (addr < 0) return line;
  int end = 0;
  size_t i = 0;
  while (i < n) {
    const unsigned char first = p[i++];
    const int code = (first >> 3) & 15;
    if (code == 13 || code == 14) {  // no columns / long form: the line delta is a signed varint
      unsigned value = 0, shift = 0;
      unsigned char b = 64;
      while ((b & 64) != 0 && i < n && shift < 32) {
        b = p[i++];
        value |= static_cast<unsigned>(b & 63) << shift;
        shift += 6;
      }
      line += (value & 1) ? -static_cast<int>(value >> 1) : static_cast<int>(value >> 1);
    } else if (code >= 10 && code <= 12) {  // one-line forms
      line += code - 10;
    }
    end += ((first & 7) + 1) * 2;
    if (addr < end) return code == 15 ? -1 : line;  // 15: no location
    while (i < n && (p[i] & 128) == 0) ++i;           // the rest of the entry
  }
  return -1;
}

}  // namespace nb::shim::python
