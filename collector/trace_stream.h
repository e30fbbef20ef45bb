// A recording's timeline on its way to <prefix>.trace.json.gz: the events
// the TraceBuilder makes, as text, into a TraceFile.
#pragma once
#include <string>

#include "collector/trace_builder.h"
#include "collector/trace_file.h"
#include "formats/chrome_trace.h"

namespace nb {

class TraceStream final : public EventSink {
 public:
  // `base_ns`: the epoch ns event times are written relative to.
  TraceStream(TraceWriter& writer, TraceFileConfig config, uint64_t base_ns, const TraceNames& names)
      : file_(writer, std::move(config)), text_(base_ns, names.all()), base_ns_(base_ns) {}

  bool open(std::string& problem) { return file_.open(problem); }
  void event(const formats::Event& e) override {
    if (!file_.is_open()) return;
    text_.event(file_.text(), e);
    file_.committed(ts(e.ts_ns));
  }
  void flow(const formats::Flow& f) override {
    if (!file_.is_open()) return;
    text_.flow(file_.text(), f);
    file_.committed(ts(f.ts_ns));
  }
  void counter(const formats::Counter& c) override {
    if (!file_.is_open()) return;
    text_.counter(file_.text(), c);
    file_.committed(ts(c.ts_ns));
  }
  // An epoch time as events write it (µs after base_ns).
  double ts(uint64_t epoch_ns) const {
    return (static_cast<double>(epoch_ns) - static_cast<double>(base_ns_)) / 1000.0;
  }
  TraceFile& file() { return file_; }
  uint64_t base_ns() const { return base_ns_; }

 private:
  TraceFile file_;
  formats::EventText text_;
  uint64_t base_ns_;
};

}  // namespace nb
