// Turns a finished Session into the three outputs — Chrome trace, memory
// snapshot, ranking table — through the pure writers in formats/, and writes
// them next to each other under the output prefix.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collector/clock.h"
#include "collector/session.h"
#include "formats/ranking_table.h"
#include "formats/snapshot_model.h"
#include "formats/trace_model.h"

namespace nb {

struct OutputContext {
  std::string prefix;          // expanded; files are <prefix>.trace.json etc.
  int64_t pid = 0;
  std::string program;
  TimeMap time;                // record ticks → epoch ns
  bool overwrite = false;
  size_t table_rows = 12;      // rows printed to stderr (the file has all)
  uint64_t dropped = 0;        // records lost before reaching the session
  std::vector<std::string> kernel_names;  // NameTable snapshot, index = id
  std::vector<std::string> notes;         // extra footer lines
  formats::SortKey table_sort = formats::SortKey::DeviceTotal;
  // Device time: CUPTI running, how device records are joined to host calls
  // ("callback", "none"), or why there is no device time.
  bool device_traced = false;
  bool device_handed_over = false;  // the program's own CUPTI client took CUPTI (said when it happened)
  std::string join_mode = "none";
  std::string device_note;
  uint64_t device_dropped = 0;             // CUPTI's dropped records + refused buffers
  std::vector<formats::DeviceProperties> devices;
  double record_cost_ns = 0;               // nb's own cost per recorded call (estimate)
  bool debug_args = false;                 // NB_LOG=debug: extra args for diagnosing the join
  std::vector<formats::Stack> stacks;      // named stacks, index = StackTable id (NB_STACKS)
  // A recording window (NB_ACTIVE, NB_TRIGGER): memory history entries and
  // memory curve points outside [window_from, window_to] (ticks) are left
  // out; the snapshot's segments are the state at the window's end.
  uint64_t window_from = 0;
  uint64_t window_to = UINT64_MAX;
  // Steps (NB_STEP) shown as ProfilerStep#N spans on the thread that ended
  // them, the way torch.profiler marks prof.step().
  struct StepSpan {
    uint64_t number;
    uint64_t start, end;  // ticks
    uint32_t tid;
  };
  std::vector<StepSpan> steps;
};

// What joining host and device records found (for the footer and tests).
struct JoinStats {
  uint64_t device_records = 0;
  uint64_t joined = 0;        // device records whose host call is in the trace
  uint64_t overlaps_clipped = 0;
  // Successful calls that make device work (launches, copies other than
  // host to host, sets), and those of them no device record was joined to:
  // CUPTI's records went elsewhere (another client took the buffers), were
  // lost, or came and the join failed.
  uint64_t work_calls = 0;
  uint64_t work_without_device = 0;
};

formats::TraceData build_trace(const Session& s, const OutputContext& ctx, struct JoinStats* stats = nullptr);
formats::SnapshotData build_snapshot(const Session& s, const OutputContext& ctx);
std::vector<formats::TableRow> build_table_rows(const Session& s, const OutputContext& ctx);
formats::TableFooter build_table_footer(const Session& s, const OutputContext& ctx, const struct JoinStats& js);

struct OutputResult {
  std::vector<std::string> written;   // paths
  std::vector<std::string> problems;  // one line each, for the log
  std::string table_for_stderr;       // table limited to ctx.table_rows
};
OutputResult write_outputs(const Session& s, const OutputContext& ctx);

// Creates `path` for writing: parents made as needed, never through a
// symlink, never over an existing file unless `overwrite`. Returns an fd or
// -1 with `error` set.
int create_output_file(const std::string& path, bool overwrite, std::string& error);

}  // namespace nb
