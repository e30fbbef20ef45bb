// Device time for the shim: starts CUPTI activity (collector/device_tracer)
// and the join between host records and device records:
//   order     (the default) nothing per call: CUPTI's correlation ids
//             follow the order in which the calls entered the driver, and
//             the collector matches device records to host records by that
//             order and by what each describes (collector/order_join.h).
//   callback  CUPTI's callback API on the launch/copy/set calls of the hook
//             table hands each call's correlation id to the calling thread;
//             the hook stores it in its record. Exact by construction; the
//             callbacks cost about 1 us per call (docs/performance.md).
//   none      device records only, no arrows.
//   (Two more were tried and removed because on the H200 they joined
//   nothing: "external" (record ids pushed as external correlation ids,
//   2026-11-30) and "api" (API activity records enabled for the traced
//   calls only, 2026-12-01; the nvcc + static cuBLAS test program also died
//   of SIGSEGV with it). docs/performance.md has the figures.)
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
// Between recording windows: the callback join's callbacks off, and on
// again (no-ops in the other joins).
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
