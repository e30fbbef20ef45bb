// Trace events on their way from the collector thread to the writer
// thread, packed.
//
// Writing an event as JSON costs the collector more than draining and
// joining its records do, and the collector is the thread that must keep up
// with the rings (what it misses is lost). So it only packs each event (a
// few stores, about a sixth of the bytes of its text) and the writer thread, which
// may lag (its input waits in memory, then in the backlog file), turns the
// packs into text just before compressing them.
//
// A pack belongs to one trace file: a name or an argument key is sent the
// first time an event of that file uses it, so the unpacker must see every
// pack of the file, in order (the writer's one thread works a file's jobs in
// order). Byte order and layout are the process's own: packs never leave it.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "formats/chrome_trace.h"
#include "formats/trace_model.h"

namespace nb {

class EventPacker {
 public:
  // `names`: the names events are named from; appended to only.
  explicit EventPacker(const std::vector<std::string>* names) : names_(names) {}
  void event(std::string& out, const formats::Event& e);
  void flow(std::string& out, const formats::Flow& f);
  void counter(std::string& out, const formats::Counter& c);

 private:
  void send_names(std::string& out);
  char* put_key(char* p, std::string_view key);
  // pid, tid and ts as differences from the previous item's (at most 30 bytes).
  char* put_where(char* p, int64_t pid, int64_t tid, uint64_t ts);
  const std::vector<std::string>* names_;
  size_t names_sent_ = 0;
  // Argument keys are string literals: known by their address, sent once.
  static constexpr size_t kKeySlots = 512;
  struct KeySlot {
    const char* data = nullptr;
    uint32_t size = 0;
    uint8_t id = 0;
  };
  KeySlot keys_[kKeySlots];
  size_t keys_sent_ = 0;
  // The previous item's, which the next is sent as a difference from.
  int64_t pid_ = 0, tid_ = 0;
  uint64_t ts_ = 0, flow_id_ = 0;
};

class EventUnpacker {
 public:
  // `base_ns`: the epoch ns event times are written relative to.
  explicit EventUnpacker(uint64_t base_ns) : text_(base_ns, &names_) {}
  // Appends the text of the events packed in [p, p + n). False when the
  // pack is malformed or cut short (never for EventPacker's, whole).
  bool unpack(const char* p, size_t n, std::string& out);

 private:
  std::vector<std::string> names_;
  std::deque<std::string> keys_;  // stable: the events' keys point here
  formats::EventText text_;
  formats::Event event_;
  formats::Counter counter_;
  std::deque<std::string> inline_keys_;  // a counter's keys sent inline
  int64_t pid_ = 0, tid_ = 0;            // the packer's, as it had them
  uint64_t ts_ = 0, flow_id_ = 0;
};

}  // namespace nb
