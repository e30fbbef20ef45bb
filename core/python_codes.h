// The Python code objects seen in stacks, by id. The shim gives a code object
// an id the first time one of its frames is captured (shim/python_frames.h)
// and copies its file and function names here; the collector names Python
// frames by these ids when it writes a stack. Grows only, never destroyed
// while the process runs (the collector may read it from an exit handler).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace nb {

class PythonCodes {
 public:
  // How many code objects get an id; past it, frames get id 0 (not known).
  static constexpr uint32_t kMaxCodes = 1u << 20;

  // A new id (>= 1) for these names, or 0 when the table is full or memory
  // is short. Any thread.
  uint32_t add(std::string&& file, std::string&& function);
  // The names of an id handed out above; false for 0 and unknown ids.
  bool names(uint32_t id, std::string& file, std::string& function) const;

  // Where the interpreter's frame-evaluation function is ([begin, end) of
  // _PyEval_EvalFrameDefault), once the shim has found the interpreter:
  // Python frames take the place of native frames there.
  void set_eval_range(uint64_t begin, uint64_t end);
  bool is_eval_pc(uint64_t pc) const;

 private:
  struct Names {
    std::string file, function;
  };
  mutable std::mutex mu_;
  std::deque<Names> names_;  // id - 1 → names
  std::atomic<uint64_t> eval_begin_{0};
  std::atomic<uint64_t> eval_end_{0};
};

}  // namespace nb
