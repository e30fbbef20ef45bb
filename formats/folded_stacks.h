// Brendan Gregg's folded stacks: one line per distinct stack, its frames
// outermost first and separated by ';', then a space and its weight. The
// input of flamegraph.pl, inferno and speedscope. Pure function.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "formats/snapshot_model.h"

namespace nb::formats {

struct FoldedLine {
  std::vector<std::string> frames;  // outermost first
  uint64_t weight = 0;
};

// Lines with the same frames are one (their weights added); lines in the
// order of their text; weight 0 left out.
std::string format_folded(const std::vector<FoldedLine>& lines);

// A frame as a folded line shows it: "function (file:line)", or
// "function (module)" without a line. Characters a folded line cannot hold
// (';', line breaks) are made visible.
std::string folded_frame(const Frame& f);

}  // namespace nb::formats
