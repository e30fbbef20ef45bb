#include "collector/stack_table.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "collector/frame_names.h"

namespace nb {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

constexpr uint64_t kPythonBit = 1ull << 63;

}  // namespace

uint32_t StackTable::intern(const uint64_t* native, uint32_t n_native, const uint64_t* python, uint32_t n_python) {
  // The hook and the capture itself sit on top of every native stack, and
  // nb's wrapper of main at its bottom: none of the recorder's own frames
  // is the program's.
  const auto own = [this](uint64_t pc) { return pc >= origins_.own_begin && pc < origins_.own_end; };
  uint32_t skip = 0;
  while (skip < n_native && own(native[skip])) ++skip;
  native += skip;
  n_native -= skip;
  if (std::any_of(native, native + n_native, own)) {
    kept_.clear();
    for (uint32_t i = 0; i < n_native; ++i) {
      if (!own(native[i])) kept_.push_back(native[i]);
    }
    native = kept_.data();
    n_native = static_cast<uint32_t>(kept_.size());
  }
  if (n_native == 0 && n_python == 0) return 0;

  uint64_t h = mix(n_native, n_python);
  for (uint32_t i = 0; i < n_native; ++i) h = mix(h, native[i]);
  for (uint32_t i = 0; i < n_python; ++i) h = mix(h, python[i]);
  auto range = by_hash_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    const Ref& r = offsets_[it->second - 1];
    if (r.native == n_native && r.python == n_python &&
        std::equal(native, native + n_native, arena_.begin() + r.begin) &&
        std::equal(python, python + n_python, arena_.begin() + r.begin + n_native)) {
      return it->second;
    }
  }
  if (offsets_.size() >= max_stacks_) {
    ++overflowed_;
    return 0;
  }
  const Ref r{static_cast<uint32_t>(arena_.size()), n_native, n_python};
  arena_.insert(arena_.end(), native, native + n_native);
  arena_.insert(arena_.end(), python, python + n_python);
  offsets_.push_back(r);
  const uint32_t id = static_cast<uint32_t>(offsets_.size());
  by_hash_.emplace(h, id);
  return id;
}

std::vector<formats::Stack> StackTable::symbolize(std::string* note) const {
  std::vector<formats::Stack> out(offsets_.size() + 1);
  std::unordered_map<uint32_t, std::pair<std::string, std::string>> code_names;

  // Every distinct native address, named at once (frame_names.h); one
  // address may stand for several frames (calls the compiler inlined).
  std::vector<uint64_t> pcs;
  {
    std::unordered_set<uint64_t> seen;
    for (const Ref& r : offsets_) {
      for (uint32_t i = 0; i < r.native; ++i) {
        const uint64_t pc = arena_[r.begin + i];
        if ((origins_.python == nullptr || !origins_.python->is_eval_pc(pc)) && seen.insert(pc).second) pcs.push_back(pc);
      }
    }
  }
  std::string naming_note;
  const auto native_names = name_frames(pcs, naming_note);
  if (note != nullptr) *note = naming_note;
  const auto native_frames = [&](uint64_t pc) -> const std::vector<formats::Frame>& { return native_names.at(pc); };
  const auto python_frame = [&](uint64_t e) {
    const uint32_t code = static_cast<uint32_t>((e & ~kPythonBit) >> 32);
    auto it = code_names.find(code);
    if (it == code_names.end()) {
      std::string file, function;
      if (origins_.python == nullptr || !origins_.python->names(code, file, function)) {
        file = "<python>";
        function = "??";
      }
      it = code_names.emplace(code, std::make_pair(std::move(file), std::move(function))).first;
    }
    return formats::Frame{it->second.first, static_cast<int64_t>(e & 0xffffffffu), it->second.second};
  };

  for (size_t id = 1; id <= offsets_.size(); ++id) {
    const Ref& r = offsets_[id - 1];
    const uint64_t* native = arena_.data() + r.begin;
    const uint64_t* python = native + r.native;
    formats::Stack& stack = out[id];
    stack.reserve(r.native + r.python);
    // Python frames go where the interpreter's evaluation loop first appears
    // (innermost first, like the native ones); the interpreter's own frames
    // are left out, the rest of the native stack stays around them.
    bool python_placed = r.python == 0;
    for (uint32_t i = 0; i < r.native; ++i) {
      if (origins_.python != nullptr && origins_.python->is_eval_pc(native[i])) {
        if (!python_placed) {
          for (uint32_t k = 0; k < r.python; ++k) stack.push_back(python_frame(python[k]));
          python_placed = true;
        }
        continue;
      }
      for (const formats::Frame& f : native_frames(native[i])) stack.push_back(f);
    }
    if (!python_placed) {
      for (uint32_t k = 0; k < r.python; ++k) stack.push_back(python_frame(python[k]));
    }
  }
  return out;
}

}  // namespace nb
