// The memory snapshot pickle: loads with Python's pickle, with
// `python -m torch.cuda._memory_viz`, and in pytorch.org/memory_viz.
#pragma once
#include <ostream>
#include <string>

#include "formats/snapshot_model.h"

namespace nb::formats {

std::string memory_snapshot_pickle(const SnapshotData& snapshot);
// The same bytes, written to `out` as they are made.
void write_memory_snapshot(const SnapshotData& snapshot, std::ostream& out);

}  // namespace nb::formats
