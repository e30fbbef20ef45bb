// Chrome trace JSON in Kineto's layout, readable by Perfetto, chrome://tracing
// and HolisticTraceAnalysis. A pure function of TraceData.
#pragma once
#include <ostream>
#include <string>

#include "formats/trace_model.h"

namespace nb::formats {

void write_chrome_trace(const TraceData& trace, std::ostream& out);
std::string chrome_trace_string(const TraceData& trace);

// "12.345" for 12345 ns: microseconds with nanosecond precision, exact (no
// floating point), signed.
void append_us_from_ns(std::string& out, int64_t ns);

}  // namespace nb::formats
