// How to step out of the frame of one instruction: read from a loaded
// module's .eh_frame (through its .eh_frame_hdr search table), as compilers
// emit it for x86-64, and reduced to the few rules nb's unwinder follows
// (native_unwind.h). Anything else (a CFA computed by an expression, as in a
// realigned frame; a signal frame; a return address not at CFA - 8) is
// `Kind::Other`, for which the capture falls back to libunwind.
//
// A pure function of the memory it is pointed at: the module must stay
// loaded while it runs (its caller's stack passes through the module).
#pragma once
#include <cstdint>

namespace nb::shim::cfi {

enum class Kind : uint8_t {
  Unknown = 0,  // no entry (a cache's empty slot)
  Rsp,          // CFA = rsp + cfa_offset
  Rbp,          // CFA = rbp + cfa_offset
  End,          // the return address is undefined: the outermost frame
  Other,        // none of the above: let libunwind do this stack
  Chain,        // no FDE covers the pc: step by the frame-pointer chain, as libunwind does
  RbpDeref,     // a realigned frame: CFA = *(rbp + cfa_offset), the caller's rbp at rbp + rbp_offset
};

// rbp of the caller: unchanged, or saved at CFA + rbp_offset, or unknown.
constexpr int16_t kRbpSame = 0;
constexpr int16_t kRbpUndefined = INT16_MIN;

struct Rule {
  int32_t cfa_offset = 0;
  int16_t rbp_offset = kRbpSame;
  Kind kind = Kind::Unknown;
  uint8_t pad = 0;
};
static_assert(sizeof(Rule) == 8);

// The rule at `pc` (an instruction's address; for a return address, pass the
// address before it) of the module whose PT_GNU_EH_FRAME segment is at
// `eh_frame_hdr`. Kind::Chain when no entry of the table covers `pc` (code
// built without unwind tables); Kind::Other when the table or the entry
// uses an encoding this code does not read.
Rule rule_at(const uint8_t* eh_frame_hdr, uint64_t pc);

}  // namespace nb::shim::cfi
