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
//     "regions": [{"path": ["outer", "inner"], "calls", "hostTotalNs",
//                  "hostSelfNs", "deviceTotalNs", "deviceSelfNs"}, ...],
//                                    only when the run had NVTX ranges or steps
//     "sources": [{"location", "calls", "totalCalls", "deviceSelfNs",
//                  "deviceTotalNs"}, ...],   only with launch stacks
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
//                                    (either null when the run had more than it keeps:
//                                     the events have them all)
//     "teardown": {"frees": F, "bytes": B}                  freed after the program's end
//   }
// A trace is written in three pieces, so that its events can stream to disk
// while a run goes on and the parts known only at the end still come first:
//
//   head   everything before the events, and the events array's first
//          element (the process's name), so that every later element,
//          wherever it was written, begins with ",\n";
//   events one per line, each ",\n{...}" (EventText), in any order (viewers
//          sort by time);
//   tail   each call stack events refer to, once: a "stack N" slice with
//          its frames (events carry "stack": N in their args), then thread
//          and process names, the end of the array, "stackFrames" (the same
//          stacks as a frame tree; events carry "sf": N), "traceName".
//
// head + events + tail is one JSON document whatever the events (none, or
// the last hour's only).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "formats/trace_model.h"

namespace nb::formats {

// Everything up to and including the events array's first element (the
// first process's process_name, or pid 0's when there is none). Uses every
// field of `t` except events, flows, counters and threads.
std::string chrome_trace_head(const TraceData& t);
// The remaining process and thread metadata, the array's end and traceName.
std::string chrome_trace_tail(const TraceData& t);

// Events as text. `names` is read when an event's name is first used: it may
// grow between calls (names are escaped once each and kept).
class EventText {
 public:
  EventText(uint64_t base_time_ns, const std::vector<std::string>* names) : base_(base_time_ns), names_(names) {}
  void event(std::string& out, const Event& e);
  void flow(std::string& out, const Flow& f);
  void counter(std::string& out, const Counter& c);

 private:
  const std::string& name(uint32_t i);
  uint64_t base_;
  const std::vector<std::string>* names_;
  std::vector<std::string> escaped_;
};

// The whole document from `t`: head, events, flows, counters, tail.
void write_chrome_trace(const TraceData& trace, std::ostream& out);
std::string chrome_trace_string(const TraceData& trace);

// "12.345" for 12345 ns: microseconds with nanosecond precision, exact (no
// floating point), signed.
void append_us_from_ns(std::string& out, int64_t ns);

}  // namespace nb::formats
