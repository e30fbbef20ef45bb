#include "formats/folded_stacks.h"

#include <map>

#include "formats/text_encoding.h"

namespace nb::formats {

namespace {

// ';' separates frames and a line ends a stack: neither may be in a frame.
std::string clean(const std::string& s) {
  std::string valid;
  append_valid_utf8(valid, s);
  for (char& c : valid) {
    if (c == ';') c = ':';
    else if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return valid;
}

}  // namespace

std::string folded_frame(const Frame& f) {
  std::string out = f.name.empty() ? "??" : f.name;
  out += " (";
  out += f.filename.empty() ? "??" : f.filename;
  if (f.line > 0) out += ":" + std::to_string(f.line);
  out += ")";
  return out;
}

std::string format_folded(const std::vector<FoldedLine>& lines) {
  std::map<std::string, uint64_t> merged;
  for (const FoldedLine& l : lines) {
    if (l.weight == 0) continue;
    std::string key;
    for (size_t i = 0; i < l.frames.size(); ++i) {
      if (i) key += ';';
      key += clean(l.frames[i]);
    }
    if (key.empty()) key = "[empty]";
    merged[key] += l.weight;
  }
  std::string out;
  for (const auto& [key, weight] : merged) {
    out += key;
    out += ' ';
    out += std::to_string(weight);
    out += '\n';
  }
  return out;
}

}  // namespace nb::formats
