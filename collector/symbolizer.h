// Turns instruction addresses captured in this process (native stack frames
// from libunwind) into the frames of PyTorch's memory snapshot. Used at
// output time, never on the hot path.
//
// Module, offset and exported symbol come from the dynamic linker (dladdr1),
// which needs no library. File and line come from DWARF through elfutils'
// libdwfl, which is dlopen'ed (RTLD_LOCAL) on the first resolve and never
// linked: a host process that never has its stacks symbolized never loads
// it, and its symbols never meet the host's own. Without libdw the frames
// keep the dladdr data. Separate debug files are looked up locally by
// build id (/usr/lib/debug/.build-id); debuginfod is never asked, so no
// resolve can wait on the network.
//
// An address outside every module (0, heap, stack, kernel) resolves to
// module "", function "", file "??", line 0. The vDSO has module "[vdso]".
// `offset` is taken of the address looked up (pc-1 for a return address),
// so `addr2line -e module offset` names the same line.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nb {

struct SymbolizedFrame {
  std::string function;  // demangled; "" if unknown
  std::string file;      // source file if debug info has it, else the module's path ("??" if none)
  int line = 0;          // 0 if unknown
  std::string module;    // path of the ELF module holding the address ("" if none)
  uint64_t offset = 0;   // address minus the module's load base
};

class Symbolizer {
 public:
  // `line_info` false: the dynamic linker's data only (module, offset,
  // exported symbol), libdw never touched.
  explicit Symbolizer(bool line_info = true);
  // Loads libdw now, in this process, if it is to be had (a process that
  // forks to symbolize loads it before, so the child never calls dlopen).
  static bool load_line_info();
  ~Symbolizer();
  // `pc` is an address as captured by unw_backtrace. `return_address`: true for every
  // frame except the innermost (look up pc-1 so a call's line, not the next one, is found).
  // Results are cached per address; never throws; thread-compatible (one user at a time).
  SymbolizedFrame resolve(uint64_t pc, bool return_address);
  // The same address as the frames it stands for where calls were inlined:
  // innermost first, the last one being resolve()'s function; one frame when
  // nothing was inlined or there is no debug info.
  std::vector<SymbolizedFrame> resolve_inlined(uint64_t pc, bool return_address);
  bool has_line_info() const;  // libdw was found and loaded (loads it if not tried yet)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nb
