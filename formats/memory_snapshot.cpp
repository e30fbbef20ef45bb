#include "formats/memory_snapshot.h"

#include <limits>

#include "formats/pickle_writer.h"

namespace nb::formats {

const char* block_state_name(BlockState s) {
  switch (s) {
    case BlockState::ActiveAllocated: return "active_allocated";
    case BlockState::ActivePendingFree: return "active_pending_free";
    case BlockState::Inactive: return "inactive";
  }
  return "inactive";
}

const char* action_name(Action a) {
  switch (a) {
    case Action::Alloc: return "alloc";
    case Action::FreeRequested: return "free_requested";
    case Action::FreeCompleted: return "free_completed";
    case Action::SegmentAlloc: return "segment_alloc";
    case Action::SegmentFree: return "segment_free";
    case Action::SegmentMap: return "segment_map";
    case Action::SegmentUnmap: return "segment_unmap";
    case Action::Snapshot: return "snapshot";
    case Action::Oom: return "oom";
  }
  return "snapshot";
}

namespace {

constexpr uint32_t kNotWritten = std::numeric_limits<uint32_t>::max();

// Writes each stack's frame list once and refers back to it through the memo
// afterwards: a training run allocates from a few hundred distinct places
// millions of times, so this is what keeps files small.
class StackWriter {
 public:
  StackWriter(PickleWriter& p, const std::vector<Stack>& stacks)
      : p_(p), stacks_(stacks), memo_(stacks.size(), kNotWritten) {}

  void write(uint32_t index) {
    if (index >= stacks_.size()) index = 0;
    if (memo_[index] != kNotWritten) { p_.get(memo_[index]); return; }
    p_.begin_list();
    for (const Frame& f : stacks_[index]) {
      p_.item();
      p_.begin_dict();
      p_.item(); p_.string("filename"); p_.string(f.filename);
      p_.item(); p_.string("line"); p_.integer(f.line);
      p_.item(); p_.string("name"); p_.string(f.name);
      p_.end_dict();
    }
    p_.end_list();
    memo_[index] = p_.memoize();
  }

 private:
  PickleWriter& p_;
  const std::vector<Stack>& stacks_;
  std::vector<uint32_t> memo_;
};

// Keys repeat in every dict; memoizing them the first time is what PyTorch's
// own files do too (BINGET of the key instead of the string each time).
class KeyWriter {
 public:
  explicit KeyWriter(PickleWriter& p) : p_(p) {}
  void write(const char* key) {
    for (auto& [k, idx] : seen_) {
      if (k == key) { p_.get(idx); return; }
    }
    p_.string(key);
    seen_.emplace_back(key, p_.memoize());
  }

 private:
  PickleWriter& p_;
  std::vector<std::pair<const char*, uint32_t>> seen_;  // keys are literals
};

std::string pickle_into(const SnapshotData& s, std::ostream* sink) {
  PickleWriter p(sink);
  StackWriter stacks(p, s.stacks);
  KeyWriter key(p);
  const auto field = [&](const char* k) { p.item(); key.write(k); };

  p.begin_dict();

  field("segments");
  p.begin_list();
  const auto segment = [&](const Segment& seg) {
    p.item();
    p.begin_dict();
    field("device"); p.integer(seg.device);
    field("address"); p.uinteger(seg.address);
    field("total_size"); p.uinteger(seg.total_size);
    field("allocated_size"); p.uinteger(seg.allocated_size);
    field("active_size"); p.uinteger(seg.active_size);
    field("requested_size"); p.uinteger(seg.requested_size);
    field("stream"); p.uinteger(seg.stream);
    field("segment_type"); key.write(seg.large ? "large" : "small");
    field("segment_pool_id");
    p.integer(seg.pool_id.first); p.integer(seg.pool_id.second); p.tuple2();
    field("is_expandable"); p.boolean(seg.is_expandable);
    field("frames"); stacks.write(seg.stack);
    field("blocks");
    p.begin_list();
    for (const Block& b : seg.blocks) {
      p.item();
      p.begin_dict();
      field("address"); p.uinteger(b.address);
      field("size"); p.uinteger(b.size);
      field("requested_size"); p.uinteger(b.requested_size);
      field("state"); key.write(block_state_name(b.state));
      field("frames"); stacks.write(b.stack);
      p.end_dict();
    }
    p.end_list();
    p.end_dict();
  };
  if (s.segment_source) {
    s.segment_source(segment);
  } else {
    for (const Segment& seg : s.segments) segment(seg);
  }
  p.end_list();

  field("device_traces");
  p.begin_list();
  const auto entry = [&](const TraceEntry& e) {
    p.item();
    p.begin_dict();
    field("action"); key.write(action_name(e.action));
    if (e.action == Action::Oom) {
      field("device_free"); p.uinteger(e.device_free);
    } else {
      field("addr"); p.uinteger(e.addr);
    }
    field("size"); p.uinteger(e.size);
    field("stream"); p.uinteger(e.stream);
    field("time_us"); p.integer(e.time_us);
    field("frames"); stacks.write(e.stack);
    p.end_dict();
  };
  const size_t devices = s.trace_source ? s.trace_devices : s.device_traces.size();
  for (size_t d = 0; d < devices; ++d) {
    p.item();
    p.begin_list();
    if (s.trace_source) {
      s.trace_source(d, entry);
    } else {
      for (const TraceEntry& e : s.device_traces[d]) entry(e);
    }
    p.end_list();
  }
  p.end_list();

  field("allocator_settings");
  p.begin_dict();
  for (const auto& [k, v] : s.allocator_settings) {
    p.item(); p.string(k); p.string(v);
  }
  p.end_dict();

  field("external_annotations");
  p.begin_list();
  p.end_list();

  p.end_dict();
  return p.finish();
}

}  // namespace

std::string memory_snapshot_pickle(const SnapshotData& s) { return pickle_into(s, nullptr); }

std::vector<Segment> segments_of(const SnapshotData& s) {
  if (!s.segment_source) return s.segments;
  std::vector<Segment> out;
  s.segment_source([&](const Segment& seg) { out.push_back(seg); });
  return out;
}

std::vector<std::vector<TraceEntry>> traces_of(const SnapshotData& s) {
  if (!s.trace_source) return s.device_traces;
  std::vector<std::vector<TraceEntry>> out(s.trace_devices);
  for (size_t d = 0; d < out.size(); ++d) s.trace_source(d, [&](const TraceEntry& e) { out[d].push_back(e); });
  return out;
}

void write_memory_snapshot(const SnapshotData& s, std::ostream& out) { pickle_into(s, &out); }

}  // namespace nb::formats
