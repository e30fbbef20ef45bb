// A thread's ring, from its first record to its exit: the ring is taken from
// the registry on the thread's first record and handed back (drained by the
// collector first) when the thread exits.
#pragma once

namespace nb::shim {

// Once, at start-up: the key whose destructor hands a thread's ring back.
bool init_threads();

}  // namespace nb::shim
