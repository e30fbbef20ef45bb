// Device time, the shim's part. The recorder (collector/) loads CUPTI and
// takes its activity records (kernels, copies, sets); the shim adds the
// join mode that needs the calling thread:
//   order     (the default) nothing per call: CUPTI's correlation ids
//             follow the order in which the calls entered the driver, and
//             the collector matches device records to host records by that
//             order and by what each describes (collector/order_join.h).
//   callback  CUPTI's callback API on the launch/copy/set calls of the hook
//             table hands each call's correlation id to the calling thread;
//             the hook stores it in its record. Exact by construction; the
//             callbacks cost about 1 us per call (docs/performance.md).
//   none      device records only, no arrows.
// and the hand-over of CUPTI to a client the program starts itself.
#pragma once
#include <string>

#include "core/options.h"
#include "core/recorder.h"

namespace nb::shim {

// Starts device time through `recorder`, with the callbacks of `join`;
// false (with `why`) means host records only.
bool start_device_tracing(Recorder& recorder, CuptiJoin join, std::string& why);

// Between recording windows: the callback join's callbacks off, and on
// again (no-ops in the other joins).
void pause_device_callbacks();
void resume_device_callbacks();

// The program's own CUPTI client is starting (its cuptiSubscribe or
// cuptiActivityRegisterCallbacks, hooked): nb hands over what CUPTI holds of
// its records, turns its activity and callbacks off, unsubscribes, says so
// once, and leaves CUPTI alone from then on (nb's tracer refuses further
// CUPTI calls). `call` names the call, for the log line.
void hand_cupti_over(const char* call);

}  // namespace nb::shim
