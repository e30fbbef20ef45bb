#include "core/control.h"

namespace nb {

// Constant-initialized: hooks may run before any constructor of this library.
Control g_control;

}  // namespace nb
