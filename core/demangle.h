// C++ symbol names for people: the one demangler of the project.
#pragma once
#include <string>

namespace nb {

// The demangled form of a mangled C++ name ("_Z..."); any other name, or
// one that does not demangle, comes back as it is. Only "_Z" names are
// tried: __cxa_demangle also reads plain words as type names, and a kernel
// or function called "f" would become "float".
std::string demangle(const std::string& name);

}  // namespace nb
