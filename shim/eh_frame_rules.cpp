// .eh_frame as the System V x86-64 ABI and the LSB define it: a CIE (the
// rules every frame of a group starts from) and an FDE per function (the
// address range and the call-frame instructions that change the rules as
// the function's code runs), found through the sorted table of
// .eh_frame_hdr. Only what decides the rule for rsp, rbp and the return
// address is kept; any other register's rule is skipped.
#include "shim/eh_frame_rules.h"

#include <cstring>

namespace nb::shim::cfi {
namespace {

// DWARF register numbers on x86-64.
constexpr uint64_t kRbp = 6, kRsp = 7;

// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kOmit = 0xff;
constexpr uint8_t kPcrel = 0x10, kDatarel = 0x30, kIndirect = 0x80;

uint64_t uleb(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  return v;
}

int64_t sleb(const uint8_t*& p) {
  int64_t v = 0;
  int shift = 0;
  uint8_t b = 0;
  do {
    b = *p++;
    v |= int64_t(b & 0x7f) << shift;
    shift += 7;
  } while ((b & 0x80) != 0 && shift < 64);
  if (shift < 64 && (b & 0x40) != 0) v |= -(int64_t(1) << shift);
  return v;
}

template <typename T>
T load(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

// A pointer in encoding `enc`; false for encodings not read here (text- or
// function-relative, aligned) and for kOmit. `datarel` is the base of
// data-relative values (.eh_frame_hdr's own address).
bool encoded(const uint8_t*& p, uint8_t enc, uint64_t datarel, uint64_t& out) {
  if (enc == kOmit) return false;
  const uint64_t field = reinterpret_cast<uint64_t>(p);
  uint64_t v = 0;
  switch (enc & 0x0f) {
    case 0x00: v = load<uint64_t>(p); break;
    case 0x01: v = uleb(p); break;
    case 0x02: v = load<uint16_t>(p); break;
    case 0x03: v = load<uint32_t>(p); break;
    case 0x04: v = load<uint64_t>(p); break;
    case 0x09: v = static_cast<uint64_t>(sleb(p)); break;
    case 0x0a: v = static_cast<uint64_t>(int64_t(load<int16_t>(p))); break;
    case 0x0b: v = static_cast<uint64_t>(int64_t(load<int32_t>(p))); break;
    case 0x0c: v = load<uint64_t>(p); break;
    default: return false;
  }
  switch (enc & 0x70) {
    case 0x00: break;
    case kPcrel: v += field; break;
    case kDatarel: v += datarel; break;
    default: return false;
  }
  if (enc & kIndirect) v = *reinterpret_cast<const uint64_t*>(v);
  out = v;
  return true;
}

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = 16;
  uint8_t fde_enc = 0;  // absptr
  bool augmented = false;  // 'z': FDEs carry augmentation data
  bool signal = false;     // 'S': frames of this CIE are signal frames
  const uint8_t* insns = nullptr;
  const uint8_t* end = nullptr;
};

// The length field of a CIE or FDE; `body` is what follows it, `end` the
// entry's end. False for a zero length (the terminator).
bool entry(const uint8_t* p, const uint8_t*& body, const uint8_t*& end, bool& wide) {
  uint64_t len = load<uint32_t>(p);
  wide = len == 0xffffffffu;
  if (wide) len = load<uint64_t>(p);
  if (len == 0) return false;
  body = p;
  end = p + len;
  return true;
}

bool parse_cie(const uint8_t* at, Cie& c) {
  const uint8_t *p = nullptr, *end = nullptr;
  bool wide = false;
  if (!entry(at, p, end, wide)) return false;
  const uint64_t id = wide ? load<uint64_t>(p) : load<uint32_t>(p);
  if (id != 0) return false;
  const uint8_t version = *p++;
  if (version != 1 && version != 3 && version != 4) return false;
  const char* aug = reinterpret_cast<const char*>(p);
  p += std::strlen(aug) + 1;
  if (aug[0] == 'e' && aug[1] == 'h') {  // an old GCC's pointer to exception data
    p += 8;
    aug += 2;
  }
  if (version == 4) p += 2;  // address size, segment selector size
  c.code_align = uleb(p);
  c.data_align = sleb(p);
  c.ra_reg = version == 1 ? *p++ : uleb(p);
  if (aug[0] == 'z') {
    c.augmented = true;
    const uint64_t len = uleb(p);
    const uint8_t* aug_end = p + len;
    for (const char* a = aug + 1; *a != '\0'; ++a) {
      if (*a == 'R') {
        c.fde_enc = *p++;
      } else if (*a == 'P') {
        const uint8_t enc = *p++;
        uint64_t personality = 0;
        // The personality routine's address is not needed: read past it
        // (without following an indirect one).
        if (!encoded(p, static_cast<uint8_t>(enc & ~kIndirect), 0, personality)) return false;
      } else if (*a == 'L') {
        ++p;
      } else if (*a == 'S') {
        c.signal = true;
      } else {
        break;  // one not known here ('B', 'G'): the length says where the data ends
      }
    }
    p = aug_end;
  } else if (aug[0] != '\0') {
    return false;
  }
  c.insns = p;
  c.end = end;
  return true;
}

// AtRbp: saved at rbp + offset (a DW_CFA_expression of just DW_OP_breg6).
enum class How : uint8_t { Same, Undefined, Offset, AtRbp, Other };
struct RegRule {
  How how = How::Same;
  int64_t offset = 0;
};
struct Row {
  uint64_t cfa_reg = ~uint64_t(0);
  int64_t cfa_offset = 0;
  bool cfa_expression = false;
  // The expression is GCC's for a realigned frame (DRAP): CFA = *(rbp + k),
  // k in cfa_offset.
  bool cfa_at_rbp = false;
  RegRule rbp, ra;
  bool rsp_set = false;  // a rule for rsp itself (other than "the CFA")
};

class Machine {
 public:
  Machine(const Cie& cie, uint64_t pc) : cie_(cie), pc_(pc) {}

  // Runs [p, end) from address `loc` up to the row that covers pc_; false
  // on an instruction not known here or a state stack used wrongly.
  bool run(const uint8_t* p, const uint8_t* end, uint64_t loc) {
    while (p < end) {
      const uint8_t op = *p++;
      const uint8_t low = op & 0x3f;
      switch (op & 0xc0) {
        case 0x40:
          loc += low * cie_.code_align;
          if (loc > pc_) return true;
          continue;
        case 0x80: set(low, How::Offset, static_cast<int64_t>(uleb(p)) * cie_.data_align); continue;
        case 0xc0: restore(low); continue;
        default: break;
      }
      uint64_t reg = 0, v = 0;
      switch (op) {
        case 0x00: break;  // nop
        case 0x01:         // set_loc
          if (!encoded(p, cie_.fde_enc, 0, v)) return false;
          loc = v;
          if (loc > pc_) return true;
          break;
        case 0x02:  // advance_loc1, 2, 4
        case 0x03:
        case 0x04:
          v = op == 0x02 ? load<uint8_t>(p) : op == 0x03 ? load<uint16_t>(p) : load<uint32_t>(p);
          loc += v * cie_.code_align;
          if (loc > pc_) return true;
          break;
        case 0x05:  // offset_extended
          reg = uleb(p);
          set(reg, How::Offset, static_cast<int64_t>(uleb(p)) * cie_.data_align);
          break;
        case 0x06: restore(uleb(p)); break;
        case 0x07: set(uleb(p), How::Undefined, 0); break;
        case 0x08: set(uleb(p), How::Same, 0); break;
        case 0x09:  // register: the value is in another register
          reg = uleb(p);
          uleb(p);
          set(reg, How::Other, 0);
          break;
        case 0x0a:  // remember_state
          if (depth_ == kDepth) return false;
          saved_[depth_++] = row_;
          break;
        case 0x0b:  // restore_state (the CFA rule too, as GCC's unwinder does)
          if (depth_ == 0) return false;
          row_ = saved_[--depth_];
          break;
        case 0x0c:  // def_cfa
          row_.cfa_reg = uleb(p);
          row_.cfa_offset = static_cast<int64_t>(uleb(p));
          row_.cfa_expression = row_.cfa_at_rbp = false;
          break;
        case 0x0d:  // def_cfa_register (after an expression: not valid; Other)
          reg = uleb(p);
          if (row_.cfa_expression) row_.cfa_at_rbp = false; else row_.cfa_reg = reg;
          break;
        case 0x0e:  // def_cfa_offset (the same)
          v = uleb(p);
          if (row_.cfa_expression) row_.cfa_at_rbp = false; else row_.cfa_offset = static_cast<int64_t>(v);
          break;
        case 0x0f: {  // def_cfa_expression
          v = uleb(p);
          if (v > static_cast<uint64_t>(end - p)) return false;
          const uint8_t* e = p;
          p += v;
          row_.cfa_expression = true;
          // DW_OP_breg6 k; DW_OP_deref: CFA = *(rbp + k) (k's last byte
          // just before the deref, so that reading it stays inside).
          row_.cfa_at_rbp = v >= 3 && e[0] == 0x76 && e[v - 1] == 0x06 && e[v - 2] < 0x80;
          if (row_.cfa_at_rbp) {
            const uint8_t* k = e + 1;
            row_.cfa_offset = sleb(k);
            row_.cfa_at_rbp = k == p - 1;  // nothing else in it
          }
          break;
        }
        case 0x11:  // offset_extended_sf
          reg = uleb(p);
          set(reg, How::Offset, sleb(p) * cie_.data_align);
          break;
        case 0x12:  // def_cfa_sf
          row_.cfa_reg = uleb(p);
          row_.cfa_offset = sleb(p) * cie_.data_align;
          row_.cfa_expression = row_.cfa_at_rbp = false;
          break;
        case 0x13: {  // def_cfa_offset_sf (the same)
          const int64_t off = sleb(p) * cie_.data_align;
          if (row_.cfa_expression) row_.cfa_at_rbp = false; else row_.cfa_offset = off;
          break;
        }
        case 0x14:  // val_offset
        case 0x15:  // val_offset_sf
          reg = uleb(p);
          if (op == 0x14) uleb(p); else sleb(p);
          set(reg, How::Other, 0);
          break;
        case 0x10:  // expression
        case 0x16: {  // val_expression
          reg = uleb(p);
          v = uleb(p);
          if (v > static_cast<uint64_t>(end - p)) return false;
          const uint8_t* e = p;
          p += v;
          // Saved at rbp + k (DW_OP_breg6 k alone): a realigned frame's rbp.
          if (op == 0x10 && v >= 2 && e[0] == 0x76 && e[v - 1] < 0x80) {
            const uint8_t* k = e + 1;
            const int64_t off = sleb(k);
            if (k == p) {
              set(reg, How::AtRbp, off);
              break;
            }
          }
          set(reg, How::Other, 0);
          break;
        }
        case 0x2e: uleb(p); break;  // GNU_args_size
        case 0x2f:                  // GNU_negative_offset_extended
          reg = uleb(p);
          set(reg, How::Offset, -static_cast<int64_t>(uleb(p)) * cie_.data_align);
          break;
        default: return false;
      }
    }
    return true;
  }

  // The CIE's rows are what DW_CFA_restore goes back to.
  void mark_initial() { initial_ = row_; }
  const Row& row() const { return row_; }

 private:
  void set(uint64_t reg, How how, int64_t offset) {
    if (reg == kRsp) row_.rsp_set = how != How::Same;
    RegRule* r = reg == cie_.ra_reg ? &row_.ra : reg == kRbp ? &row_.rbp : nullptr;
    if (r != nullptr) *r = RegRule{how, offset};
  }
  void restore(uint64_t reg) {
    if (reg == kRsp) row_.rsp_set = initial_.rsp_set;
    if (reg == cie_.ra_reg) row_.ra = initial_.ra;
    if (reg == kRbp) row_.rbp = initial_.rbp;
  }

  static constexpr int kDepth = 8;
  const Cie& cie_;
  const uint64_t pc_;
  Row row_, initial_;
  Row saved_[kDepth];
  int depth_ = 0;
};

Rule other() {
  Rule r;
  r.kind = Kind::Other;
  return r;
}

Rule chain() {
  Rule r;
  r.kind = Kind::Chain;
  return r;
}

// The FDE whose range starts at or below pc, by the header's sorted table;
// nullptr when the table is missing or encoded otherwise than GCC and the
// linkers write it (data-relative signed 4-byte values). `below`: pc is
// before the table's first entry (no FDE covers it).
const uint8_t* find_fde(const uint8_t* hdr, uint64_t pc, bool& below) {
  below = false;
  if (hdr[0] != 1) return nullptr;
  const uint8_t eh_frame_enc = hdr[1], count_enc = hdr[2], table_enc = hdr[3];
  const uint8_t* p = hdr + 4;
  const uint64_t base = reinterpret_cast<uint64_t>(hdr);
  uint64_t eh_frame = 0, count = 0;
  if (!encoded(p, eh_frame_enc, base, eh_frame) || !encoded(p, count_enc, base, count)) return nullptr;
  if (table_enc != 0x3b || count == 0) return nullptr;
  struct Entry {
    int32_t start, fde;
  };
  const auto* table = reinterpret_cast<const Entry*>(p);
  const int64_t rel = static_cast<int64_t>(pc - base);
  if (rel < table[0].start) {
    below = true;
    return nullptr;
  }
  uint64_t lo = 0, hi = count;  // table[lo].start <= rel < table[hi].start
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (table[mid].start <= rel) lo = mid; else hi = mid;
  }
  return hdr + table[lo].fde;
}

}  // namespace

Rule rule_at(const uint8_t* eh_frame_hdr, uint64_t pc) {
  bool below = false;
  const uint8_t* fde = find_fde(eh_frame_hdr, pc, below);
  if (fde == nullptr) return below ? chain() : other();
  const uint8_t *p = nullptr, *end = nullptr;
  bool wide = false;
  if (!entry(fde, p, end, wide) || wide) return other();
  const uint8_t* id_field = p;
  const uint32_t cie_back = load<uint32_t>(p);
  if (cie_back == 0) return other();  // a CIE, not an FDE
  Cie cie;
  if (!parse_cie(id_field - cie_back, cie)) return other();
  uint64_t begin = 0, range = 0;
  if (!encoded(p, cie.fde_enc, 0, begin) || !encoded(p, cie.fde_enc & 0x0f, 0, range)) return other();
  if (pc < begin || pc - begin >= range) return chain();  // no FDE covers pc
  if (cie.augmented) {
    const uint64_t len = uleb(p);
    p += len;
  }
  Machine m(cie, pc);
  if (!m.run(cie.insns, cie.end, begin)) return other();
  m.mark_initial();
  if (!m.run(p, end, begin)) return other();

  const Row& row = m.row();
  Rule r;
  if (row.ra.how == How::Undefined) {
    r.kind = Kind::End;
    return r;
  }
  if (cie.signal || row.rsp_set) return other();
  if (row.ra.how != How::Offset || row.ra.offset != -8) return other();
  if (row.cfa_expression) {
    // A realigned frame (GCC's DRAP, as in cuBLASLt): CFA = *(rbp + k), the
    // caller's rbp at rbp + j. Anything else computed: libunwind.
    if (!row.cfa_at_rbp || row.rbp.how != How::AtRbp) return other();
    if (row.cfa_offset < INT16_MIN || row.cfa_offset > INT16_MAX) return other();
    if (row.rbp.offset < INT16_MIN || row.rbp.offset > INT16_MAX) return other();
    r.kind = Kind::RbpDeref;
    r.cfa_offset = static_cast<int32_t>(row.cfa_offset);
    r.rbp_offset = static_cast<int16_t>(row.rbp.offset);
    return r;
  }
  if (row.cfa_offset < 8 || row.cfa_offset > INT32_MAX) return other();
  if (row.cfa_reg == kRsp) {
    r.kind = Kind::Rsp;
  } else if (row.cfa_reg == kRbp) {
    r.kind = Kind::Rbp;
  } else {
    return other();  // a frame realigned through another register (DRAP)
  }
  r.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  switch (row.rbp.how) {
    case How::Same: r.rbp_offset = kRbpSame; break;
    case How::Undefined: r.rbp_offset = kRbpUndefined; break;
    case How::Offset:
      if (row.rbp.offset >= 0 || row.rbp.offset <= INT16_MIN) return other();
      r.rbp_offset = static_cast<int16_t>(row.rbp.offset);
      break;
    case How::AtRbp:
    case How::Other: return other();
  }
  return r;
}

}  // namespace nb::shim::cfi
