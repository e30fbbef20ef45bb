// formats/pickle_writer.h and formats/memory_snapshot.h, read back with the
// strict reader of pickle_reader.h.
// 1. The input (fields split at its first byte) is a little program that
//    builds a value, which is then written with PickleWriter:
//      N T F           None, True, False
//      iNUM uNUM dNUM  integer(), uinteger(), real()  (NUM as strtoll/strtoull/strtod, else hashed)
//      sTEXT           string()
//      [ { (           open a list, a dict, a 2-tuple (closes itself after two values)
//      ] } )           close the innermost container (missing values become None)
//      m               memoize the value just completed
//      gNUM            get() a memoized value
//      rNUM            NUM small integers into the open container (batches of 1000)
//    The bytes must read back as exactly that value: integers to the bit
//    (BININT1/2/BININT/LONG1 edges), floats bit for bit, strings with bad bytes
//    replaced, batches, tuples and memo references in place.
// 2. The same fields fill a SnapshotData (frames' file and function names,
//    numbers); the snapshot must read back with its entries' sizes, times and
//    frames intact and every stack written once and then referenced.
#include <map>
#include <memory>

#include "formats/memory_snapshot.h"
#include "formats/pickle_writer.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/pickle_reader.h"

using namespace nb::formats;
using nbfuzz::PPtr;
using nbfuzz::PValue;
using nbfuzz::shown;

namespace {

constexpr size_t kMaxDepth = 48;  // PickleWriter keeps 64 open containers
constexpr size_t kMaxNodes = 8000;

struct Node {
  enum class Kind { None, Bool, Int, UInt, Float, Str, List, Dict, Tuple, Get } kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s;
  std::vector<std::unique_ptr<Node>> items;
  uint32_t get_index = 0;   // Get: which memo entry
  bool memoize = false;
  uint32_t memo_index = 0;  // memoize: the index memoize() must return
  PPtr expected;
};

class Builder {
 public:
  Builder() {
    root_.kind = Node::Kind::List;
    open_.push_back(&root_);
  }

  void run(const std::vector<std::string>& ops) {
    for (const std::string& op : ops) {
      if (nodes_ >= kMaxNodes) break;
      const std::string arg = op.empty() ? "" : op.substr(1);
      switch (op.empty() ? 'N' : op[0]) {
        case 'T': scalar(Node::Kind::Bool).b = true; break;
        case 'F': scalar(Node::Kind::Bool).b = false; break;
        case 'i': scalar(Node::Kind::Int).i = nbfuzz::number_s64(arg); break;
        case 'u': scalar(Node::Kind::UInt).u = nbfuzz::number_u64(arg); break;
        case 'd': scalar(Node::Kind::Float).d = nbfuzz::number_double(arg); break;
        case 's': scalar(Node::Kind::Str).s = arg; break;
        case '[': open(Node::Kind::List); break;
        case '{': open(Node::Kind::Dict); break;
        case '(': open(Node::Kind::Tuple); break;
        case ']': case '}': case ')': if (open_.size() > 1) close(); break;
        case 'm': {
          Node* c = open_.back();
          if (!c->items.empty() && !c->items.back()->memoize) {
            c->items.back()->memoize = true;
            c->items.back()->memo_index = memoized_++;
            memo_.push_back(c->items.back().get());
          }
          break;
        }
        case 'g':
          if (memoized_ > 0) scalar(Node::Kind::Get).get_index = static_cast<uint32_t>(nbfuzz::number_u64(arg) % memoized_);
          break;
        case 'r': {
          const uint64_t n = nbfuzz::number_u64(arg) % 2200;
          for (uint64_t k = 0; k < n && nodes_ < kMaxNodes; ++k) {
            scalar(Node::Kind::Int).i = static_cast<int64_t>(k * 37 % 70000);
          }
          break;
        }
        default: scalar(Node::Kind::None); break;
      }
    }
    while (open_.size() > 1) close();
    finish(root_);
  }

  Node& root() { return root_; }
  const std::vector<Node*>& memo() const { return memo_; }

 private:
  Node& add(Node::Kind k) {
    Node* c = open_.back();
    c->items.push_back(std::make_unique<Node>());
    c->items.back()->kind = k;
    ++nodes_;
    return *c->items.back();
  }
  Node& scalar(Node::Kind k) {
    Node& n = add(k);
    if (open_.back()->kind == Node::Kind::Tuple && open_.back()->items.size() == 2) close();
    return n;
  }
  void open(Node::Kind k) {
    if (open_.size() >= kMaxDepth) return;
    open_.push_back(&add(k));
  }
  void close() {
    Node* c = open_.back();
    while ((c->kind == Node::Kind::Tuple && c->items.size() < 2) ||
           (c->kind == Node::Kind::Dict && c->items.size() % 2 != 0)) {
      c->items.push_back(std::make_unique<Node>());
    }
    open_.pop_back();
    if (open_.back()->kind == Node::Kind::Tuple && open_.back()->items.size() == 2) close();
  }
  // The value each node must read back as.
  void finish(Node& n) {
    for (auto& c : n.items) finish(*c);
    PValue::Kind k = PValue::Kind::None;
    switch (n.kind) {
      case Node::Kind::Get: n.expected = memo_[n.get_index]->expected; return;
      case Node::Kind::None: k = PValue::Kind::None; break;
      case Node::Kind::Bool: k = PValue::Kind::Bool; break;
      case Node::Kind::Int: case Node::Kind::UInt: k = PValue::Kind::Int; break;
      case Node::Kind::Float: k = PValue::Kind::Float; break;
      case Node::Kind::Str: k = PValue::Kind::Str; break;
      case Node::Kind::List: k = PValue::Kind::List; break;
      case Node::Kind::Dict: k = PValue::Kind::Dict; break;
      case Node::Kind::Tuple: k = PValue::Kind::Tuple; break;
    }
    n.expected = nbfuzz::make_value(k);
    n.expected->b = n.b;
    n.expected->i = n.kind == Node::Kind::UInt ? static_cast<__int128>(n.u) : static_cast<__int128>(n.i);
    std::memcpy(&n.expected->bits, &n.d, sizeof n.d);
    if (n.kind != Node::Kind::Float) n.expected->bits = 0;
    n.expected->s = nbfuzz::ref_repaired(n.s);
    for (auto& c : n.items) n.expected->items.push_back(c->expected);
  }

  Node root_;
  std::vector<Node*> open_;
  std::vector<Node*> memo_;
  uint32_t memoized_ = 0;
  size_t nodes_ = 0;
};

void write(PickleWriter& p, const Node& n) {
  switch (n.kind) {
    case Node::Kind::None: p.none(); break;
    case Node::Kind::Bool: p.boolean(n.b); break;
    case Node::Kind::Int: p.integer(n.i); break;
    case Node::Kind::UInt: p.uinteger(n.u); break;
    case Node::Kind::Float: p.real(n.d); break;
    case Node::Kind::Str: p.string(n.s); break;
    case Node::Kind::Get: p.get(n.get_index); break;
    case Node::Kind::List:
    case Node::Kind::Dict:
      n.kind == Node::Kind::List ? p.begin_list() : p.begin_dict();
      for (size_t k = 0; k < n.items.size(); ++k) {
        if (n.kind == Node::Kind::List || k % 2 == 0) p.item();
        write(p, *n.items[k]);
      }
      n.kind == Node::Kind::List ? p.end_list() : p.end_dict();
      break;
    case Node::Kind::Tuple:
      write(p, *n.items[0]);
      write(p, *n.items[1]);
      p.tuple2();
      break;
  }
  if (n.memoize) {
    const uint32_t got = p.memoize();
    NB_FUZZ_CHECK(got == n.memo_index, "memoize() gave " + std::to_string(got) + ", want " + std::to_string(n.memo_index));
  }
}

void check_program(const std::vector<std::string>& ops) {
  Builder b;
  b.run(ops);
  PickleWriter p;
  write(p, b.root());
  const std::string bytes = p.finish();
  PPtr got;
  std::string error;
  NB_FUZZ_CHECK(nbfuzz::read_pickle(bytes, got, error), "malformed pickle: " + error + "\n" + shown(bytes, 400));
  nbfuzz::SeenPairs seen;
  NB_FUZZ_CHECK(nbfuzz::same_value(got, b.root().expected, seen, error), "read back differently: " + error);
}

// ---- the memory snapshot -----------------------------------------------------

const PPtr* field(const PPtr& dict, const char* key) {
  if (dict->kind != PValue::Kind::Dict) return nullptr;
  for (size_t k = 0; k + 1 < dict->items.size(); k += 2) {
    if (dict->items[k]->kind == PValue::Kind::Str && dict->items[k]->s == key) return &dict->items[k + 1];
  }
  return nullptr;
}

#define NB_FIELD(var, dict, key)                                                  \
  const PPtr* var##_p = field(dict, key);                                          \
  NB_FUZZ_CHECK(var##_p != nullptr, std::string("no key '") + key + "' in a dict"); \
  const PPtr& var = *var##_p

bool is_int(const PPtr& v, __int128 want) { return v->kind == PValue::Kind::Int && v->i == want; }

// Each stack is written once and referenced through the memo afterwards: the
// reader then hands out the very same object.
std::map<uint32_t, const PValue*> g_written;

void check_frames(const PPtr& got, const SnapshotData& s, uint32_t index, const char* where) {
  if (index >= s.stacks.size()) index = 0;
  const auto [first, added] = g_written.emplace(index, got.get());
  NB_FUZZ_CHECK(added || first->second == got.get(),
                std::string(where) + ": stack " + std::to_string(index) + " written twice");
  if (!added) return;  // the very object checked before
  const Stack& stack = s.stacks[index];
  NB_FUZZ_CHECK(got->kind == PValue::Kind::List && got->items.size() == stack.size(), std::string(where) + ": frames");
  for (size_t k = 0; k < stack.size(); ++k) {
    const PPtr& f = got->items[k];
    NB_FIELD(filename, f, "filename");
    NB_FIELD(line, f, "line");
    NB_FIELD(name, f, "name");
    NB_FUZZ_CHECK(filename->s == nbfuzz::ref_repaired(stack[k].filename) && name->s == nbfuzz::ref_repaired(stack[k].name) &&
                      is_int(line, stack[k].line),
                  std::string(where) + ": frame " + std::to_string(k));
  }
}

void check_snapshot(const std::vector<std::string>& f) {
  SnapshotData s;
  for (size_t i = 0; i < f.size(); ++i) {
    if (i == 0 || f[i].size() % 3 == 0) s.stacks.emplace_back();
    s.stacks.back().push_back({f[i], nbfuzz::number_s64(f[i]), f[(i + 1) % f.size()]});
  }
  const uint32_t n_stacks = static_cast<uint32_t>(s.stacks.size());
  s.device_traces.resize(f.size() % 3 + 1);
  for (size_t i = 0; i < f.size(); ++i) {
    const uint64_t u = nbfuzz::number_u64(f[i]);
    const int64_t si = nbfuzz::number_s64(f[i]);
    TraceEntry e;
    e.action = static_cast<Action>(u % 9);
    e.addr = u;
    e.size = u >> 3;
    e.stream = ~u;
    e.time_us = si;
    e.device_free = u ^ 0xFFFF;
    e.stack = static_cast<uint32_t>(i % (n_stacks + 2));  // some out of range: the empty stack
    s.device_traces[i % s.device_traces.size()].push_back(e);
    if (i < 8) {
      Segment seg;
      seg.device = static_cast<int>(si);
      seg.address = u;
      seg.total_size = u >> 1;
      seg.large = i % 2 == 0;
      seg.pool_id = {si, -static_cast<int64_t>(i)};
      seg.stack = static_cast<uint32_t>((i + 1) % (n_stacks + 1));
      for (size_t b = 0; b < i % 3; ++b) {
        seg.blocks.push_back({u + b, u >> b, u, BlockState::Inactive, static_cast<uint32_t>(b)});
      }
      s.segments.push_back(seg);
    }
    if (i % 2 == 1) s.allocator_settings.emplace_back(f[i - 1], f[i]);
  }

  const std::string bytes = memory_snapshot_pickle(s);
  g_written.clear();
  PPtr root;
  std::string error;
  NB_FUZZ_CHECK(nbfuzz::read_pickle(bytes, root, error), "malformed snapshot: " + error);
  NB_FUZZ_CHECK(root->kind == PValue::Kind::Dict && root->items.size() == 8, "snapshot is not a dict of four keys");
  NB_FIELD(segments, root, "segments");
  NB_FIELD(traces, root, "device_traces");
  NB_FIELD(settings, root, "allocator_settings");
  NB_FIELD(annotations, root, "external_annotations");
  NB_FUZZ_CHECK(annotations->kind == PValue::Kind::List && annotations->items.empty(), "external_annotations");

  NB_FUZZ_CHECK(segments->items.size() == s.segments.size(), "segment count");
  for (size_t k = 0; k < s.segments.size(); ++k) {
    const Segment& want = s.segments[k];
    const PPtr& seg = segments->items[k];
    NB_FIELD(device, seg, "device");
    NB_FIELD(address, seg, "address");
    NB_FIELD(pool, seg, "segment_pool_id");
    NB_FIELD(frames, seg, "frames");
    NB_FIELD(blocks, seg, "blocks");
    NB_FUZZ_CHECK(is_int(device, want.device) && is_int(address, want.address), "segment numbers");
    NB_FUZZ_CHECK(pool->kind == PValue::Kind::Tuple && is_int(pool->items[0], want.pool_id.first) &&
                      is_int(pool->items[1], want.pool_id.second),
                  "segment_pool_id");
    check_frames(frames, s, want.stack, "segment");
    NB_FUZZ_CHECK(blocks->items.size() == want.blocks.size(), "block count");
    for (size_t b = 0; b < want.blocks.size(); ++b) {
      NB_FIELD(size, blocks->items[b], "size");
      NB_FIELD(block_frames, blocks->items[b], "frames");
      NB_FUZZ_CHECK(is_int(size, want.blocks[b].size), "block size");
      check_frames(block_frames, s, want.blocks[b].stack, "block");
    }
  }

  NB_FUZZ_CHECK(traces->items.size() == s.device_traces.size(), "device_traces count");
  for (size_t d = 0; d < s.device_traces.size(); ++d) {
    NB_FUZZ_CHECK(traces->items[d]->items.size() == s.device_traces[d].size(), "trace length");
    for (size_t k = 0; k < s.device_traces[d].size(); ++k) {
      const TraceEntry& want = s.device_traces[d][k];
      const PPtr& e = traces->items[d]->items[k];
      NB_FIELD(action, e, "action");
      NB_FIELD(size, e, "size");
      NB_FIELD(stream, e, "stream");
      NB_FIELD(time, e, "time_us");
      NB_FIELD(frames, e, "frames");
      NB_FUZZ_CHECK(action->s == action_name(want.action), "action");
      NB_FUZZ_CHECK(is_int(size, want.size) && is_int(stream, want.stream) && is_int(time, want.time_us), "entry numbers");
      if (want.action == Action::Oom) {
        NB_FIELD(free, e, "device_free");
        NB_FUZZ_CHECK(is_int(free, want.device_free), "device_free");
      } else {
        NB_FIELD(addr, e, "addr");
        NB_FUZZ_CHECK(is_int(addr, want.addr), "addr");
      }
      check_frames(frames, s, want.stack, "trace entry");
    }
  }

  NB_FUZZ_CHECK(settings->items.size() == 2 * s.allocator_settings.size(), "allocator_settings");
  for (size_t k = 0; k < s.allocator_settings.size(); ++k) {
    NB_FUZZ_CHECK(settings->items[2 * k]->s == nbfuzz::ref_repaired(s.allocator_settings[k].first) &&
                      settings->items[2 * k + 1]->s == nbfuzz::ref_repaired(s.allocator_settings[k].second),
                  "allocator setting " + std::to_string(k));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> fields = nbfuzz::split_fields(data, size);
  check_program(fields);
  check_snapshot(fields);
  return 0;
}
