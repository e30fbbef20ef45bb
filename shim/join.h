// The join mode, as the hot path sees it (see device_tracing.h).
#pragma once
#include <cstdint>

namespace nb::shim {

enum class JoinMode : uint8_t { None, Callback, External };
extern JoinMode g_join_mode;  // set once before recording starts

// Join mode "external": around the real call of a launch, copy or set.
void push_external_id(uint64_t id);
void pop_external_id();

}  // namespace nb::shim
