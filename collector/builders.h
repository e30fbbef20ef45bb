// The outputs of a recording built as plain data (the models of formats/):
// the Chrome trace's head and tail (its events streamed as the run went),
// the memory snapshot and the ranking table, from a Session and what is
// known about the run (OutputContext). No I/O: output.h writes them; tests
// compare them directly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collector/session.h"
#include "core/clock.h"
#include "core/options.h"
#include "formats/ranking_table.h"
#include "formats/snapshot_model.h"
#include "formats/trace_model.h"

namespace nb {

struct OutputContext {
  std::string prefix;          // expanded; files are <prefix>.trace.json etc.
  int64_t pid = 0;
  std::string program;
  std::string host;                          // short host name, in the process's name
  formats::DistributedInfo distributed;      // the launcher's rank, when there is one
  TimeMap time;                // record ticks → epoch ns
  bool overwrite = false;
  size_t table_rows = 12;      // rows printed to stderr (the file has all)
  uint64_t dropped = 0;        // records lost before reaching the session
  // Calls whose record was dropped, by ApiId (empty when none): counted in
  // the table's calls and errors, not in its host times, which come from
  // records. A window's own (the drops while it recorded).
  std::vector<uint64_t> dropped_calls, dropped_errors;
  // Run so far: records of successful allocations and frees that were
  // dropped, which the memory notes blame (the memory history is run-long).
  uint64_t dropped_allocs = 0, dropped_frees = 0;
  std::vector<std::string> kernel_names;  // NameTable snapshot, index = id
  std::vector<std::string> notes;         // extra footer lines
  formats::SortKey table_sort = formats::SortKey::DeviceTotal;
  // Device time: CUPTI running, how device records are joined to host calls,
  // or why there is no device time.
  bool device_traced = false;
  bool device_handed_over = false;  // the program's own CUPTI client took CUPTI (said when it happened)
  CuptiJoin join_mode = CuptiJoin::None;
  std::string device_note;
  uint64_t device_dropped = 0;             // CUPTI's dropped records + refused buffers
  uint64_t device_overflow = 0;            // device records nb dropped (the collector fell behind)
  std::vector<formats::DeviceProperties> devices;
  double record_cost_ns = 0;               // nb's own cost per recorded call (estimate)
  bool debug_args = false;                 // NB_LOG=debug: extra args for diagnosing the join
  std::vector<formats::Stack> stacks;      // named stacks, index = StackTable id (NB_STACKS)
  // Launches had stacks (NB_STACKS=launch or all): the device and host time
  // by stack go to <prefix>.device.folded and <prefix>.host.folded.
  bool folded = false;
  // A recording window (NB_ACTIVE, NB_TRIGGER): memory history entries and
  // memory curve points outside [window_from, window_to] (ticks) are left
  // out; the snapshot's segments are the state at the window's end.
  uint64_t window_from = 0;
  uint64_t window_to = UINT64_MAX;
  // A flight recorder's trace (NB_KEEP): its file's older slices still hold
  // events before window_from, left out as it is finished. A window's file
  // holds only its own events and is not trimmed: a trim point mapped from
  // ticks at close time can land a little after its first step's start as
  // the timeline mapped it while recording.
  bool trim_trace = false;
  // A flight recorder's dump (NB_KEEP, SIGUSR2): a copy of what is kept
  // now, while the recording goes on (its trace file stays open).
  bool dump = false;
  // A step (NB_STEP), shown as a ProfilerStep#N span on the thread that
  // ended it, the way torch.profiler marks prof.step().
  struct StepSpan {
    uint64_t number;
    uint64_t start, end;  // ticks
    uint32_t tid;
  };
  // Ticks when the program ended (main returned, exit, a Python interpreter
  // finalizing), 0 if it had not.
  uint64_t program_end = 0;
};

// Everything of a trace file but its events (which the Session's timeline
// streamed): the head and tail's data. `base_ns`: the epoch ns the events'
// times were written relative to.
formats::TraceData build_trace_frame(const Session& s, const OutputContext& ctx, uint64_t base_ns);
// The base of a trace whose first event is at `epoch_ns`: the whole second
// before it.
uint64_t trace_base_ns(int64_t epoch_ns);
formats::SnapshotData build_snapshot(const Session& s, const OutputContext& ctx);
std::vector<formats::TableRow> build_table_rows(const Session& s, const OutputContext& ctx);
// Device time (and host time of the recorded calls) by the stack of the
// call, as folded stacks (formats/folded_stacks.h) for a flame graph.
std::string build_device_folded(const Session& s, const OutputContext& ctx);
std::string build_host_folded(const Session& s, const OutputContext& ctx);
// Source locations by the device time of the work launched there (the
// user frames of the launch's stack: user_frames.h's rules).
std::vector<formats::SourceRow> build_source_rows(const Session& s, const OutputContext& ctx);
// The program's regions (NVTX ranges by where they nest, nb's steps) with
// their total and self times.
std::vector<formats::RegionRow> build_region_rows(const Session& s, const OutputContext& ctx);
formats::TableFooter build_table_footer(const Session& s, const OutputContext& ctx, const JoinStats& js);

// "nb: PROGRAM (pid N)", the table's first line.
std::string table_title(const OutputContext& ctx);

// Why most calls that make device work got no device record (another CUPTI
// client took the records, records were dropped, or the join failed), or
// null when most did.
const char* unjoined_note(const JoinStats& js, const OutputContext& ctx);

}  // namespace nb
