#include "core/kernel_regex.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace nb {

KernelRegex::~KernelRegex() {
  if (ok_) regfree(&re_);
}

namespace {

// glibc's regcomp copies a sub-tree for each bound of an interval and for a
// '+', stacked quantifiers included ("x+++" doubles it with each '+'), and
// parses groups by recursion: NB_STEP='kernel:x++++++++++++++++++++++++' took
// 37 s and 12 GB at start-up, 20,000 nested '(' overflowed the stack. Kernel
// names need none of that, so such patterns are refused before regcomp sees
// them. The estimate is the size of the tree regcomp would build.
constexpr size_t kMaxPattern = 4096;
constexpr size_t kMaxDepth = 64;
constexpr uint64_t kMaxSize = 10000;  // about 20 ms of regcomp at the limit; kernel names need far less

uint64_t bounded(uint64_t v) { return std::min<uint64_t>(v, kMaxSize + 1); }

// "{m}", "{m,}", "{m,n}" starting at p[i]: how many copies regcomp makes.
uint64_t interval_copies(const std::string& p, size_t i, size_t& end) {
  end = p.find('}', i);
  if (end == std::string::npos) {
    end = p.size() - 1;
    return 1;  // regcomp will say what is wrong
  }
  uint64_t m = 0, n = 0;
  bool comma = false, has_n = false;
  for (size_t k = i + 1; k < end; ++k) {
    if (p[k] == ',') comma = true;
    else if (p[k] >= '0' && p[k] <= '9') {
      uint64_t& v = comma ? n : m;
      v = bounded(v * 10 + static_cast<uint64_t>(p[k] - '0'));
      has_n = has_n || comma;
    }
  }
  return std::max<uint64_t>({m + (comma && !has_n ? 1 : 0), n, 1});
}

bool too_costly(const std::string& p, std::string& error) {
  if (p.size() > kMaxPattern) {
    error = "longer than " + std::to_string(kMaxPattern) + " characters";
    return true;
  }
  std::vector<uint64_t> open{0};  // size of each open group so far; [0] is the whole pattern
  uint64_t last = 0;              // size of what a quantifier here would repeat
  bool after_quantifier = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c != '*' && c != '?' && c != '+' && c != '{') after_quantifier = false;
    if (c == '*' || c == '?' || c == '+' || c == '{') {
      // Stacked quantifiers (x++, x+?, x*{2}) make glibc's automaton blow up
      // well below the size limit (x+++++++#+?+++++++*+++ took 0.35 s to
      // compile); POSIX gives them no meaning a kernel name needs.
      if (after_quantifier) {
        error = "stacked quantifiers (like x++ or x+?) are not supported";
        return true;
      }
      after_quantifier = true;
      size_t end = i;
      const uint64_t copies = c == '{' ? interval_copies(p, i, end) : c == '+' ? 2 : 1;
      open.back() = bounded(open.back() + last * (copies - 1));
      last = bounded(last * copies);  // a quantifier after this one repeats all the copies
      i = end;
    } else if (c == '(') {
      if (open.size() > kMaxDepth) {
        error = "groups nested deeper than " + std::to_string(kMaxDepth);
        return true;
      }
      open.push_back(0);
      last = 0;
    } else if (c == ')' && open.size() > 1) {
      last = bounded(open.back() + 1);
      open.pop_back();
      open.back() = bounded(open.back() + last);
    } else if (c == '|' || c == '^') {
      open.back() += 1;
      last = 0;
    } else {
      if (c == '\\' && i + 1 < p.size() && p[i + 1] >= '1' && p[i + 1] <= '9') {
        // glibc's matcher recurses without end on some ("(|)(\\1\\1)*"), and
        // a kernel name never needs one.
        error = "back-references are not supported";
        return true;
      }
      if (c == '\\') ++i;
      if (c == '[') {  // one atom: []...], [^]...], [[:alpha:]]
        size_t k = i + 1;
        if (k < p.size() && p[k] == '^') ++k;
        if (k < p.size() && p[k] == ']') ++k;
        for (; k < p.size() && p[k] != ']'; ++k) {
          if (p[k] == '[' && k + 1 < p.size() && (p[k + 1] == ':' || p[k + 1] == '.' || p[k + 1] == '=')) {
            const size_t close = p.find(std::string(1, p[k + 1]) + "]", k + 2);
            if (close != std::string::npos) k = close + 1;
          }
        }
        i = k;
      }
      open.back() += 1;
      last = 1;
    }
    if (open.back() > kMaxSize) {
      error = "too large once its repetitions are expanded";
      return true;
    }
  }
  return false;
}

}  // namespace

bool KernelRegex::compile(const std::string& pattern, std::string& error) {
  if (ok_) {
    regfree(&re_);
    ok_ = false;
  }
  if (too_costly(pattern, error)) return false;
  const int rc = regcomp(&re_, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char buf[256];
    regerror(rc, &re_, buf, sizeof buf);
    error = buf;
    return false;
  }
  ok_ = true;
  return true;
}

bool KernelRegex::search(const std::string& text) const {
  return ok_ && regexec(&re_, text.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace nb
