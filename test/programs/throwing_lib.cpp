// Exceptions inside a library the program loads (test/programs/exceptions.cpp
// dlopens it): thrown and caught within the library, and thrown out of it to
// be caught by the program.
#include <stdexcept>

namespace {
__attribute__((noinline)) void deep(int i) {
  if (i >= 0) throw std::runtime_error("inside the library");
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int throwing_lib_catch_inside(int n) {
  int caught = 0;
  for (int i = 0; i < n; ++i) {
    try {
      deep(i);
    } catch (const std::runtime_error&) {
      ++caught;
    }
  }
  return caught;
}

extern "C++" __attribute__((visibility("default"))) void throwing_lib_throw_out() {
  throw std::logic_error("out of the library");
}
