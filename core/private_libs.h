// Opens the helper libraries nb uses at run time (libunwind, libdw, libelf)
// without ever putting their symbols in the host's global scope.
//
// Order: a copy the process already has (RTLD_NOLOAD, by soname); then nb's
// own copy, bundled at build time in nb-libs/ next to libnb_shim.so, so that
// stacks and symbols work on machines without the -dev packages (the H200
// image has neither libunwind nor libdw); then the system's, by soname.
#pragma once

namespace nb {

// A handle from dlopen(RTLD_LOCAL), or nullptr with dlerror() cleared.
void* open_private_lib(const char* soname);

// The file a handle was loaded from, for the debug log.
const char* lib_path(void* handle);

}  // namespace nb
