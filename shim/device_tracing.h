// Device time for the shim: starts CUPTI activity (collector/device_tracer)
// and the join between host records and device records:
//   callback  CUPTI's callback API on the launch/copy/set calls of the hook
//             table hands each call's correlation id to the calling thread;
//             the hook stores it in its record. The callbacks are most of
//             what nb adds to CUPTI's cost (docs/performance.md, 2026-11-30).
//   api       CUPTI writes an API activity record for each of those calls
//             (thread, start, end, correlation id) and the collector
//             matches it to the hook around it (collector/api_join.h); no
//             callback per call. Not yet checked on a GPU.
//   (An "external" join, record ids pushed as CUPTI external correlation
//   ids, was removed on 2026-11-30: on the H200 it joined nothing; see
//   docs/performance.md.)
//   none      device records only, no arrows.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "collector/device_tracer.h"
#include "collector/options.h"
#include "formats/trace_model.h"

namespace nb::shim {

// Starts device tracing; false (with `why`) means host records only.
bool start_device_tracing(const Options& o, DeviceTracer& tracer, std::string& why);

// For the collector at the end: wait (at most `limit`) for the work of every
// active context to finish; false if it did not in time. Describe the devices.
bool synchronize_devices(std::chrono::milliseconds limit);
// Between recording windows: the join's tracing of the traced calls (CUPTI
// callbacks, or API records) off, and on again (no-ops without a join).
void pause_device_callbacks();
void resume_device_callbacks();
std::vector<formats::DeviceProperties> query_devices();

// The program's own CUPTI client is starting (its cuptiSubscribe or
// cuptiActivityRegisterCallbacks, hooked): nb hands over what CUPTI holds of
// its records, turns its activity and callbacks off, unsubscribes, says so
// once, and leaves CUPTI alone from then on (nb's tracer refuses further
// CUPTI calls). `call` names the call, for the log line.
void hand_cupti_over(const char* call);

}  // namespace nb::shim
