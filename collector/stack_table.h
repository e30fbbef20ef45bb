// Distinct stacks, each stored once: a program allocates from a few hundred
// places millions of times. The collector interns every stack it drains and
// hands its id on with the record; names are looked up only at the end, once
// per distinct address (Symbolizer), never on the program's threads.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/snapshot_model.h"

namespace nb {

// What the shim knows that the collector needs to name frames.
struct StackSources {
  std::function<bool(uint64_t)> is_own_pc;          // the recorder's own frames, cut from the top
  std::function<bool(uint64_t)> is_python_eval_pc;  // where Python frames go among native ones
  std::function<bool(uint32_t, std::string&, std::string&)> python_code_info;  // id → file, function
};

class StackTable {
 public:
  explicit StackTable(StackSources sources = {}, size_t max_stacks = size_t(1) << 20)
      : sources_(std::move(sources)), max_stacks_(max_stacks) {}

  // `native`: return addresses, innermost first (the recorder's own frames
  // still on top); `python`: encoded Python frames, innermost first. Returns
  // the stack's id, >= 1, or 0 when the table is full (counted).
  uint32_t intern(const uint64_t* native, uint32_t n_native, const uint64_t* python, uint32_t n_python);

  size_t size() const { return offsets_.size(); }  // distinct stacks
  uint64_t overflowed() const { return overflowed_; }

  // Every stack with names, index = id (index 0: the empty stack).
  std::vector<formats::Stack> symbolize() const;

 private:
  struct Ref {
    uint32_t begin, native, python;
  };
  StackSources sources_;
  size_t max_stacks_;
  std::vector<uint64_t> arena_;          // all stacks' entries, back to back
  std::vector<Ref> offsets_;             // id - 1 → where in arena_
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  uint64_t overflowed_ = 0;
};

}  // namespace nb
