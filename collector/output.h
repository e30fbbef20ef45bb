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
};

formats::TraceData build_trace(const Session& s, const OutputContext& ctx);
formats::SnapshotData build_snapshot(const Session& s, const OutputContext& ctx);
std::vector<formats::TableRow> build_table_rows(const Session& s, const OutputContext& ctx);
formats::TableFooter build_table_footer(const Session& s, const OutputContext& ctx);

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
