// The one place that creates output files. A file appears under its name
// only when complete: the name is claimed first (never over an existing
// file unless asked, never through a symlink), the content goes to
// <name>.partial, which is renamed over the claim at the end.
#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace nb {

// Creates `path` for writing: parents made as needed, never through a
// symlink, never over an existing file unless `overwrite`. Returns an fd or
// -1 with `error` set.
int create_output_file(const std::string& path, bool overwrite, std::string& error);

// Writes `path` whole through `fill`, or not at all: false with `problem`
// (one line for the log) when it could not be claimed, written or renamed.
bool write_output_file(const std::string& path, bool overwrite, const std::function<void(std::ostream&)>& fill,
                       std::string& problem);

}  // namespace nb
