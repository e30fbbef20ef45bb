// Writes a finished Session's three outputs — Chrome trace, memory snapshot,
// ranking table — next to each other under the output prefix: built by the
// builders (builders.h), written by the pure writers of formats/, each file
// through output_files.h. The trace's events streamed to its TraceStream as
// the run went; here its head and tail join them.
#pragma once
#include <string>
#include <vector>

#include <functional>

#include "collector/builders.h"
#include "collector/phase_times.h"
#include "collector/trace_stream.h"

namespace nb {

struct OutputResult {
  std::vector<std::string> written;   // "path (size)"
  std::vector<std::string> problems;  // one line each, for the log
  std::string table_for_stderr;       // table limited to ctx.table_rows
  PhaseTimes phases;                  // how long each file took (NB_LOG=debug)
};
// `progress(done, total)`: the trace's writing took long (see TraceFile).
OutputResult write_outputs(Session& s, const OutputContext& ctx, TraceStream& trace,
                           const std::function<void(uint64_t, uint64_t)>& progress = nullptr);

// "12.3 MB", "512 KB", "80 B".
std::string size_text(uint64_t bytes);

}  // namespace nb
