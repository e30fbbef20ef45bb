#include "core/python_codes.h"

namespace nb {

uint32_t PythonCodes::add(std::string&& file, std::string&& function) {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (names_.size() >= kMaxCodes) return 0;
    names_.push_back(Names{std::move(file), std::move(function)});
    return static_cast<uint32_t>(names_.size());
  } catch (...) {
    return 0;
  }
}

bool PythonCodes::names(uint32_t id, std::string& file, std::string& function) const {
  if (id == 0) return false;
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (id > names_.size()) return false;
    const Names& n = names_[id - 1];
    file = n.file;
    function = n.function;
    return true;
  } catch (...) {
    return false;
  }
}

void PythonCodes::set_eval_range(uint64_t begin, uint64_t end) {
  eval_end_.store(end, std::memory_order_relaxed);
  eval_begin_.store(begin, std::memory_order_release);
}

bool PythonCodes::is_eval_pc(uint64_t pc) const {
  const uint64_t begin = eval_begin_.load(std::memory_order_acquire);
  return begin != 0 && pc >= begin && pc < eval_end_.load(std::memory_order_relaxed);
}

}  // namespace nb
