// The devices at the end of a recording, through the real driver functions
// the shim hands over (Host::driver_function): waiting for their work to
// finish, and their properties for the trace.
#pragma once
#include <chrono>
#include <vector>

#include "core/recorder.h"
#include "formats/trace_model.h"

namespace nb {

// Waits (at most `limit`) for the work of the calling thread's context and
// of every active primary context to finish; false if it did not in time.
bool synchronize_devices(Host& host, std::chrono::milliseconds limit);

// Name, memory and limits of each device, as Kineto's deviceProperties.
std::vector<formats::DeviceProperties> query_devices(Host& host);

}  // namespace nb
