// Placeholder until the recorder side lands: logs at debug level.
#include "shim/nvtx_ranges.h"

#include <atomic>
#include <string>

#include "collector/log.h"

namespace nb::shim {

namespace {
std::atomic<uint64_t> g_next_range{1};
}

void nvtx_push(const char* name) { log::debug(std::string("nvtx push ") + (name ? name : "(null)")); }
void nvtx_pop() { log::debug("nvtx pop"); }
uint64_t nvtx_start(const char* name) {
  const uint64_t id = g_next_range.fetch_add(1);
  log::debug(std::string("nvtx start ") + (name ? name : "(null)") + " " + std::to_string(id));
  return id;
}
void nvtx_end(uint64_t id) { log::debug("nvtx end " + std::to_string(id)); }

}  // namespace nb::shim
