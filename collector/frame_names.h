// Names for the native frames of the stacks: function, file and line
// through libdw, worked out in a child process. libdw ends the process
// (exit or abort) when it runs out of memory, and a bug on odd DWARF would
// crash it; in a child either costs only the names. What the child did not
// name keeps the dynamic linker's data, read here: module + offset, or the
// exported symbol.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/snapshot_model.h"

namespace nb {

// `pcs`: return addresses (each looked up at pc-1). One frame per address,
// or several where calls were inlined (innermost first). `note` says why
// some or all frames have no source lines, "" when nothing went wrong.
std::unordered_map<uint64_t, std::vector<formats::Frame>> name_frames(const std::vector<uint64_t>& pcs,
                                                                       std::string& note);

}  // namespace nb
