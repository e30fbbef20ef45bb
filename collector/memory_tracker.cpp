#include "collector/memory_tracker.h"

#include <algorithm>
#include <memory>

namespace nb {

using formats::Action;

namespace {
constexpr int32_t kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY == cudaErrorMemoryAllocation
constexpr uint64_t kLargeSegment = 1 << 20;  // PyTorch's small pool holds blocks <= 1 MiB
int device_or_zero(int32_t d) { return d >= 0 && d < 4096 ? d : 0; }
}  // namespace

void MemoryTracker::push(const Fact& f) {
  if (in_teardown_) return;  // after the snapshot's state (see ended_)
  ring_.push_back(f);
  entries_ += entries_of(f.kind);
  while (entries_ > max_entries_) {
    // The oldest entries go first, one at a time: a fact may lose some.
    ++front_skip_;
    --entries_;
    ++counts_.overwritten;
    if (front_skip_ == entries_of(ring_.front().kind)) {
      ring_.pop_front();
      front_skip_ = 0;
    }
  }
}

void MemoryTracker::forget_before(uint64_t ticks) {
  while (!ring_.empty()) {
    const Fact& f = ring_.front();
    uint64_t t = 0;
    while (front_skip_ < entries_of(f.kind) && (entry_of(f, front_skip_, t), t < ticks)) {
      ++front_skip_;
      --entries_;
      ++counts_.aged_out;
    }
    if (front_skip_ < entries_of(f.kind)) return;
    ring_.pop_front();
    front_skip_ = 0;
  }
}

formats::TraceEntry MemoryTracker::entry_of(const Fact& f, size_t i, uint64_t& ticks) {
  formats::TraceEntry e;
  e.addr = f.addr;
  e.size = f.size;
  e.stream = f.stream;
  e.stack = f.stack;
  ticks = f.ticks;
  switch (f.kind) {
    case FactKind::Alloc: e.action = i == 0 ? Action::SegmentAlloc : Action::Alloc; break;
    case FactKind::Map: e.action = i == 0 ? Action::SegmentMap : Action::Alloc; break;
    case FactKind::Free:
    case FactKind::Unmap:
      e.action = i == 0 ? Action::FreeRequested : i == 1 ? Action::FreeCompleted
                 : f.kind == FactKind::Unmap ? Action::SegmentUnmap : Action::SegmentFree;
      if (i != 0) ticks = f.done;
      break;
    case FactKind::Oom:
      e.action = Action::Oom;
      e.addr = 0;
      e.device_free = f.addr;
      break;
  }
  return e;
}

void MemoryTracker::grow_devices(int device) {
  const size_t n = static_cast<size_t>(device) + 1;
  if (live_bytes_.size() >= n) return;
  live_bytes_.resize(n, 0);
  peak_bytes_.resize(n, 0);
  async_bytes_.resize(n, 0);
}

// What every pool of `device` holds (a program may have several: the
// default one and its own), as each last reported.
uint64_t MemoryTracker::pools_reserved(int device) const {
  uint64_t sum = 0;
  for (const auto& [pool, p] : pools_) {
    if (p.device == device) sum += p.bytes;
  }
  return sum;
}

void MemoryTracker::note_point(uint64_t ticks, int device) {
  if (!on_point_) return;
  const size_t d = static_cast<size_t>(device);
  // Pools keep memory beyond their live allocations; what they reported last
  // (never less than what is live in them) stands for it.
  const uint64_t reserved = live_bytes_[d] - async_bytes_[d] + std::max(async_bytes_[d], pools_reserved(device));
  on_point_(MemoryPoint{ticks, device, live_bytes_[d], reserved});
}

void MemoryTracker::add_live(uint64_t addr, const Live& l) {
  live_[addr] = l;
  grow_devices(l.device);
  live_bytes_[static_cast<size_t>(l.device)] += l.size;
  if (l.async) async_bytes_[static_cast<size_t>(l.device)] += l.size;
  peak_bytes_[static_cast<size_t>(l.device)] =
      std::max(peak_bytes_[static_cast<size_t>(l.device)], live_bytes_[static_cast<size_t>(l.device)]);
}

void MemoryTracker::remove_live(uint64_t addr, const Live& l) {
  live_bytes_[static_cast<size_t>(l.device)] -= l.size;
  if (l.async) async_bytes_[static_cast<size_t>(l.device)] -= l.size;
  live_.erase(addr);
}

// `stack`: the freeing call's stack (the allocation's is in `l`).
void MemoryTracker::release(uint64_t addr, const Live& l, uint64_t t_req, uint64_t t_done,
                            bool unmap, uint32_t stack) {
  push(Fact{t_req, t_done, addr, l.size, l.stream, stack, static_cast<uint16_t>(l.device),
            unmap ? FactKind::Unmap : FactKind::Free});
  remove_live(addr, l);
  note_point(t_done, l.device);
}

void MemoryTracker::on_record(const Record& r) {
  in_teardown_ = (r.flags & record_flag::kTeardown) != 0;
  if (in_teardown_ && !ended_) {
    ended_ = true;
    end_live_ = live_;
    end_live_bytes_ = live_bytes_;
  }
  switch (r.kind) {
    case Kind::Alloc: {
      const int dev = device_or_zero(r.device);
      if (r.result != 0) {
        if (r.result == kOutOfMemory) {
          ++counts_.ooms;
          push(Fact{r.end, r.end, r.aux, r.bytes, r.stream, r.stack, static_cast<uint16_t>(dev), FactKind::Oom});
        }
        return;
      }
      if (r.ptr == 0) return;
      // An address handed out again without a free we saw (e.g. freed by a
      // path we do not intercept): close the old one first so that blocks
      // never overlap.
      auto old = live_.find(r.ptr);
      if (old != live_.end()) release(r.ptr, Live(old->second), r.start, r.start, old->second.mapped, 0);
      ++counts_.allocs;
      const bool async = (r.flags & record_flag::kAsync) != 0;
      const Live l{r.bytes, dev, r.stream, false, async, r.stack};
      push(Fact{r.end, r.end, r.ptr, r.bytes, r.stream, r.stack, static_cast<uint16_t>(dev), FactKind::Alloc});
      add_live(r.ptr, l);
      if (r.flags & record_flag::kPoolReserved) pools_[r.ptr2] = {dev, r.aux};
      note_point(r.end, dev);
      return;
    }
    case Kind::Free: {
      if (r.result != 0 || r.ptr == 0) return;
      auto it = live_.find(r.ptr);
      if (it == live_.end() || it->second.mapped) {
        ++counts_.unmatched_frees;
        return;
      }
      ++counts_.frees;
      const Live l = it->second;
      if (in_teardown_) {
        ++counts_.teardown_frees;
        counts_.teardown_bytes += l.size;
      }
      if (r.flags & record_flag::kPoolReserved) pools_[r.ptr2] = {l.device, r.aux};
      release(r.ptr, l, r.start, r.end, false, r.stack);
      return;
    }
    case Kind::VmmCreate:
      if (r.result == 0) vmm_handles_[r.ptr] = device_or_zero(r.device);
      else if (r.result == kOutOfMemory) {
        ++counts_.ooms;
        push(Fact{r.end, r.end, r.aux, r.bytes, 0, r.stack, static_cast<uint16_t>(device_or_zero(r.device)),
                  FactKind::Oom});
      }
      return;
    case Kind::VmmRelease:
      if (r.result == 0) vmm_handles_.erase(r.ptr);
      return;
    case Kind::VmmMap: {
      if (r.result != 0 || r.ptr == 0) return;
      auto h = vmm_handles_.find(r.ptr2);
      const int dev = h != vmm_handles_.end() ? h->second : device_or_zero(r.device);
      ++counts_.maps;
      push(Fact{r.end, r.end, r.ptr, r.bytes, 0, r.stack, static_cast<uint16_t>(dev), FactKind::Map});
      add_live(r.ptr, Live{r.bytes, dev, 0, true, false, r.stack});
      note_point(r.end, dev);
      return;
    }
    case Kind::VmmUnmap: {
      if (r.result != 0) return;
      // One unmap may cover several mappings: release every mapping that
      // starts inside [ptr, ptr + bytes).
      std::vector<uint64_t> inside;
      for (const auto& [addr, l] : live_) {
        if (l.mapped && addr >= r.ptr && addr < r.ptr + r.bytes) inside.push_back(addr);
      }
      std::sort(inside.begin(), inside.end());
      for (uint64_t addr : inside) {
        ++counts_.unmaps;
        if (in_teardown_) {
          ++counts_.teardown_frees;
          counts_.teardown_bytes += live_.at(addr).size;
        }
        release(addr, Live(live_.at(addr)), r.start, r.end, true, r.stack);
      }
      return;
    }
    default:
      return;
  }
}

uint64_t MemoryTracker::live_bytes(int device) const {
  const std::vector<uint64_t>& bytes = ended_ ? end_live_bytes_ : live_bytes_;
  return device >= 0 && static_cast<size_t>(device) < bytes.size() ? bytes[static_cast<size_t>(device)] : 0;
}

uint64_t MemoryTracker::peak_bytes(int device) const {
  return device >= 0 && static_cast<size_t>(device) < peak_bytes_.size() ? peak_bytes_[static_cast<size_t>(device)] : 0;
}

formats::SnapshotData MemoryTracker::snapshot(const TimeMap& time, uint64_t from_ticks) const {
  formats::SnapshotData s;
  int max_device = 0;

  // Segments too are made as they are written: a run whose frees were
  // dropped can end with a hundred thousand "live" allocations. Only their
  // order is kept here.
  const std::unordered_map<uint64_t, Live>& state = ended_ ? end_live_ : live_;
  auto order = std::make_shared<std::vector<std::pair<int, uint64_t>>>();
  order->reserve(state.size());
  for (const auto& [addr, l] : state) {
    order->emplace_back(l.device, addr);
    max_device = std::max(max_device, l.device);
  }
  std::sort(order->begin(), order->end());
  s.segment_source = [&state, order](const formats::SegmentSink& put) {
    formats::Segment seg;
    seg.blocks.resize(1);
    for (const auto& [device, addr] : *order) {
      const Live& l = state.at(addr);
      seg.device = l.device;
      seg.address = addr;
      seg.total_size = seg.allocated_size = seg.active_size = seg.requested_size = l.size;
      seg.stream = l.stream;
      seg.large = l.size > kLargeSegment;
      seg.is_expandable = l.mapped;
      seg.stack = l.stack;
      seg.blocks[0] = formats::Block{addr, l.size, l.size, formats::BlockState::ActiveAllocated, l.stack};
      put(seg);
    }
  };

  for (const Fact& f : ring_) max_device = std::max(max_device, static_cast<int>(f.device));
  // The history is written straight from the ring (see Fact), while the
  // tracker stands still: outputs are written on the collector thread.
  s.trace_devices = static_cast<size_t>(max_device) + 1;
  s.trace_source = [this, time, from_ticks](size_t device, const formats::TraceSink& put) {
    bool front = true;
    for (const Fact& f : ring_) {
      const size_t first = front ? front_skip_ : 0;
      front = false;
      if (f.device != device) continue;
      for (size_t i = first; i < entries_of(f.kind); ++i) {
        uint64_t ticks = 0;
        formats::TraceEntry e = entry_of(f, i, ticks);
        if (ticks < from_ticks) continue;
        e.time_us = time.epoch_ns(ticks) / 1000;
        put(e);
      }
    }
  };
  return s;
}

}  // namespace nb
