// The join mode, as the hot path sees it (see device_tracing.h).
#pragma once
#include <atomic>
#include <cstdint>

namespace nb::shim {

enum class JoinMode : uint8_t { None, Callback, External };
// Set before recording starts; back to None if the program's own CUPTI
// client takes CUPTI over (shim/device_tracing.h).
extern std::atomic<JoinMode> g_join_mode;

// Join mode "external": around the real call of a launch, copy or set.
void push_external_id(uint64_t id);
void pop_external_id();

}  // namespace nb::shim
