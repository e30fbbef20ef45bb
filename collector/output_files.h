// The one place that creates output files. A file appears under its name
// only when complete: the content goes to a temporary file created
// exclusively beside it (<name>.partial), which is linked in under the name
// at the end, or renamed over an existing file when asked to overwrite.
// Nothing is ever truncated or written through a link, and a process killed
// while writing leaves at most the temporary file, never a file under the
// final name that looks whole and is not.
#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace nb {

// Makes the directories above `path`; false with `problem` if one cannot be.
bool make_parent_dirs(const std::string& path, std::string& problem);

// A new file in `dir` that has no name (O_TMPFILE, or created and unlinked
// at once): scratch space that vanishes with the process. Returns an fd
// open for reading and writing, or -1 with `problem` set.
int open_unlinked(const std::string& near_path, std::string& problem);

// "PATH exists; not overwritten (what to do)".
std::string exists_message(const std::string& path);

// Writes `path` whole through `fill`, or not at all: false with `problem`
// (one line for the log) when it exists (unless `overwrite`), or could not
// be written or put in place. Parent directories are made as needed.
bool write_output_file(const std::string& path, bool overwrite, const std::function<void(std::ostream&)>& fill,
                       std::string& problem);

}  // namespace nb
