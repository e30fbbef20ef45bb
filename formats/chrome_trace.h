// Chrome trace JSON in Kineto's layout, readable by Perfetto, chrome://tracing
// and HolisticTraceAnalysis. A pure function of TraceData.
//
// Besides Kineto's keys, one top-level key of nb's own, before "traceEvents"
// (trace viewers ignore keys they do not know, as they do Kineto's
// "deviceProperties"): the ranking table the run printed, as data, so that
// `nbprof stats` can print it again from the trace alone.
//
//   "nbTable": {
//     "title": "nb: prog (pid 1)",   the table's first line
//     "sort": "device",              device | host | calls | name (NB_TABLE_SORT)
//     "printedRows": 12,             rows printed to stderr, 0 = all (NB_TABLE_ROWS)
//     "rows": [{"name", "calls", "hostTotalNs", "hostMinNs", "hostMaxNs",
//               "errors", "deviceTotalNs", "hasHost", "hasDevice"}, ...],
//               a row some of whose calls had their record dropped also has
//               "droppedCalls": how many of "calls" (its host times are the rest's)
//     "footer": {"records", "dropped", "notes": [line, ...]}
//   }
//
// Times are whole nanoseconds; rows are in the order the run had them before
// sorting (the sort is stable, so that order decides ties).
//
// And what `nbprof report` needs without reading the events, in the
// events' timebase (µs after baseTimeNanoseconds, like "ts"):
//
//   "nbRun": {
//     "programEnd": 1234.5,          main returned / exit / Python finalizing; null if not in this file
//     "steps": [[N, ts, dur, tid], ...],                    the ProfilerStep#N spans
//     "memory": [{"device": D, "points": [[ts, allocated, reserved], ...]}, ...],
//     "teardown": {"frees": F, "bytes": B}                  freed after the program's end
//   }
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
