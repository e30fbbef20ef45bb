// Distinct stacks, each stored once: a program allocates from a few hundred
// places millions of times. The collector interns every stack it drains and
// hands its id on with the record; names are looked up only at the end, once
// per distinct address (Symbolizer), never on the program's threads.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/python_codes.h"
#include "formats/snapshot_model.h"

namespace nb {

// Where a stack's frames come from, beyond the program's own modules.
struct StackOrigins {
  uint64_t own_begin = 0, own_end = 0;  // the recorder's own code: its frames are cut from the top
  const PythonCodes* python = nullptr;  // Python frames' names, and where they go among native ones
};

class StackTable {
 public:
  explicit StackTable(StackOrigins origins = {}, size_t max_stacks = size_t(1) << 20)
      : origins_(origins), max_stacks_(max_stacks) {}

  // `native`: return addresses, innermost first (the recorder's own frames
  // still on top); `python`: encoded Python frames, innermost first. Returns
  // the stack's id, >= 1, or 0 when the table is full (counted).
  uint32_t intern(const uint64_t* native, uint32_t n_native, const uint64_t* python, uint32_t n_python);

  size_t size() const { return offsets_.size(); }  // distinct stacks
  uint64_t overflowed() const { return overflowed_; }

  // Every stack with names, index = id (index 0: the empty stack). `note`
  // (if given) says why native frames lack source lines, "" if none do
  // for a reason worth saying.
  std::vector<formats::Stack> symbolize(std::string* note = nullptr) const;

 private:
  struct Ref {
    uint32_t begin, native, python;
  };
  StackOrigins origins_;
  size_t max_stacks_;
  std::vector<uint64_t> arena_;          // all stacks' entries, back to back
  std::vector<uint64_t> kept_;           // a stack without the recorder's frames inside it
  std::vector<Ref> offsets_;             // id - 1 → where in arena_
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  uint64_t overflowed_ = 0;
};

}  // namespace nb
