// The devices at the end of a recording, through the real driver functions
// the shim hands over (Host::driver_function): waiting for their work to
// finish, and their properties for the trace.
#pragma once
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "core/recorder.h"
#include "formats/trace_model.h"

namespace nb {

// Waits for the work of the calling thread's context and of every active
// primary context to finish, on a helper thread of its own (a device that
// never finishes, a collective waiting for a dead peer, must not keep the
// process from exiting): the owner asks whether it is done, and lets it go
// if it is not.
class DeviceSync {
 public:
  explicit DeviceSync(Host& host);  // starts waiting
  ~DeviceSync();                    // joins the helper when done, else leaves it
  DeviceSync(const DeviceSync&) = delete;
  DeviceSync& operator=(const DeviceSync&) = delete;
  // Whether every device was idle, waiting at most `wait` for it.
  bool done(std::chrono::milliseconds wait);

 private:
  std::thread helper_;
  std::future<void> future_;
  bool finished_ = false;
};

// Name, memory and limits of each device, as Kineto's deviceProperties.
std::vector<formats::DeviceProperties> query_devices(Host& host);

}  // namespace nb
