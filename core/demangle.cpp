#include "core/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace nb {

std::string demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = -1;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string result = (status == 0 && out != nullptr) ? std::string(out) : name;
  std::free(out);
  return result;
}

}  // namespace nb
