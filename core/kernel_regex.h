// NB_STEP=kernel:REGEX, matched with POSIX extended regular expressions
// (regcomp/regexec), not std::regex: libstdc++'s matcher recurses once per
// character for `.*`, and a match runs inside the program's launch call, on
// whatever stack that thread has; a 5,000-character templated kernel name
// overflowed a 1 MB thread stack. glibc's matcher does not recurse so.
#pragma once
#include <regex.h>

#include <string>

namespace nb {

class KernelRegex {
 public:
  KernelRegex() = default;
  KernelRegex(const KernelRegex&) = delete;
  KernelRegex& operator=(const KernelRegex&) = delete;
  ~KernelRegex();

  // False with `error` (what regcomp said) if `pattern` is not valid.
  bool compile(const std::string& pattern, std::string& error);
  // Whether the pattern matches anywhere in `text`.
  bool search(const std::string& text) const;

 private:
  regex_t re_{};
  bool ok_ = false;
};

}  // namespace nb
