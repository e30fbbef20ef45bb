// A recording's timeline on its way to <prefix>.trace.json.gz: the events
// the TraceBuilder makes, packed into a TraceFile, whose writer thread
// makes text of them (event_pack.h says why).
#pragma once
#include <memory>
#include <string>

#include "collector/event_pack.h"
#include "collector/trace_builder.h"
#include "collector/trace_file.h"

namespace nb {

class TraceStream final : public EventSink {
 public:
  // `base_ns`: the epoch ns event times are written relative to.
  TraceStream(TraceWriter& writer, TraceFileConfig config, uint64_t base_ns, const TraceNames& names)
      : file_(writer, with_unpacker(std::move(config), base_ns)), pack_(names.all()), base_ns_(base_ns) {}

  bool open(std::string& problem) { return file_.open(problem); }
  void event(const formats::Event& e) override {
    if (!file_.is_open()) return;
    pack_.event(file_.text(), e);
    file_.committed(ts(e.ts_ns));
  }
  void flow(const formats::Flow& f) override {
    if (!file_.is_open()) return;
    pack_.flow(file_.text(), f);
    file_.committed(ts(f.ts_ns));
  }
  void counter(const formats::Counter& c) override {
    if (!file_.is_open()) return;
    pack_.counter(file_.text(), c);
    file_.committed(ts(c.ts_ns));
  }
  // An epoch time as events write it (µs after base_ns).
  double ts(uint64_t epoch_ns) const {
    return (static_cast<double>(epoch_ns) - static_cast<double>(base_ns_)) / 1000.0;
  }
  TraceFile& file() { return file_; }
  uint64_t base_ns() const { return base_ns_; }

 private:
  static TraceFileConfig with_unpacker(TraceFileConfig config, uint64_t base_ns) {
    auto unpacker = std::make_shared<EventUnpacker>(base_ns);
    config.to_text = [unpacker](const char* p, size_t n, std::string& text) { return unpacker->unpack(p, n, text); };
    return config;
  }
  TraceFile file_;
  EventPacker pack_;
  uint64_t base_ns_;
};

}  // namespace nb
