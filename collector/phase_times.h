// How long each phase of writing the outputs took, for NB_LOG=debug: the
// program's exit waits for them, and a user asking why it waited (or a
// benchmark asking which phase to make faster) reads this line.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

namespace nb {

class PhaseTimes {
 public:
  // The time since the last mark (or since construction), named.
  void mark(const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    char ms[32];
    std::snprintf(ms, sizeof ms, " %.0f ms", std::chrono::duration<double, std::milli>(now - last_).count());
    if (!text_.empty()) text_ += ", ";
    text_ += phase;
    text_ += ms;
    last_ = now;
  }
  // Marks of another clock (a later part of the same exit), after ours.
  void append(const PhaseTimes& later) {
    if (later.text_.empty()) return;
    if (!text_.empty()) text_ += ", ";
    text_ += later.text_;
    last_ = later.last_;
  }
  const std::string& text() const { return text_; }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::string text_;
};

}  // namespace nb
