#include "collector/kernel_regex.h"

namespace nb {

KernelRegex::~KernelRegex() {
  if (ok_) regfree(&re_);
}

bool KernelRegex::compile(const std::string& pattern, std::string& error) {
  if (ok_) {
    regfree(&re_);
    ok_ = false;
  }
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
