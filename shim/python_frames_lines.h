// Line tables of CPython code objects, 3.9–3.13: the formats, and a decoder
// for each that answers what PyCode_Addr2Line would, from a copy of the table
// (the path without the GIL cannot call the interpreter). Pure functions of
// their arguments, so the probe library checks them against the real thing.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nb::shim::python {

enum class LineTable : uint8_t {
  kLnotab,     // co_lnotab, (bytecode delta, line delta) pairs (3.9; Objects/lnotab_notes.txt)
  kPep626,     // co_linetable, PEP 626 (bytecode delta, line delta or -128) pairs (3.10)
  kLocations,  // co_linetable, location entries (3.11+; Objects/locations.md)
};

// The line of the instruction at byte offset `addr` (-1: not started) in a
// code object whose first line is `line`, from its table `p` of `n` bytes;
// -1 when that instruction has none.
int lnotab_line(const unsigned char* p, size_t n, int line, int addr);
int pep626_line(const unsigned char* p, size_t n, int line, int addr);
int location_line(const unsigned char* p, size_t n, int line, int addr);

}  // namespace nb::shim::python
