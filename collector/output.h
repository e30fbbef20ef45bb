// Writes a finished Session's three outputs — Chrome trace, memory snapshot,
// ranking table — next to each other under the output prefix: built by the
// builders (builders.h), written by the pure writers of formats/, each file
// through output_files.h.
#pragma once
#include <string>
#include <vector>

#include "collector/builders.h"

namespace nb {

struct OutputResult {
  std::vector<std::string> written;   // paths
  std::vector<std::string> problems;  // one line each, for the log
  std::string table_for_stderr;       // table limited to ctx.table_rows
};
OutputResult write_outputs(const Session& s, const OutputContext& ctx);

}  // namespace nb
