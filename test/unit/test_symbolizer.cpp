// The symbolizer on addresses of this very binary (built with debug info:
// meson's debugoptimized), of libc, and of no module at all.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "core/demangle.h"
#include "collector/symbolizer.h"
#include "test_support.h"

using nb::SymbolizedFrame;
using nb::Symbolizer;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

uint64_t address_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

// The address the call to this function returns to: what unw_backtrace
// reports for every frame but the innermost.
__attribute__((noinline)) uint64_t return_address_here() {
  return address_of(__builtin_extract_return_addr(__builtin_return_address(0)));
}

struct CallSite {
  uint64_t pc;
  int line;
};

// A call from a known line. The store after the call keeps it from becoming
// a tail jump (whose return address would be the caller's).
__attribute__((noinline)) CallSite symbolizer_test_call_site() {
  CallSite s{};
  s.pc = return_address_here(); s.line = __LINE__;  // one line on purpose
  asm volatile("" : : "r"(&s) : "memory");
  return s;
}

constexpr int kKnownFirstLine = __LINE__;
__attribute__((noinline)) int symbolizer_test_known_function(int x) {
  asm volatile("" : "+r"(x));
  return x * 3 + 1;
}
constexpr int kKnownLastLine = __LINE__;

// The main program is the first object dl_iterate_phdr reports.
uint64_t main_program_bias() {
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uint64_t*>(out) = info->dlpi_addr;
        return 1;
      },
      &bias);
  return bias;
}

bool libdw_loaded() {
  void* h = dlopen("libdw.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

}  // namespace

// Hidden: run by the next test in a fresh process of this binary, where no
// other test has resolved anything yet.
TEST_CASE("symbolizer: libdw is loaded by the first resolve, privately (fresh process)",
          "[.][symbolizer-fresh]") {
  Symbolizer s;
  REQUIRE_FALSE(libdw_loaded());  // constructing one loads nothing
  s.resolve(address_of(reinterpret_cast<void*>(&symbolizer_test_known_function)), false);
  CHECK(libdw_loaded());
  CHECK(s.has_line_info());
  // RTLD_LOCAL: nothing of libdw or libelf is visible to the host's lookups.
  CHECK(dlsym(RTLD_DEFAULT, "dwfl_begin") == nullptr);
  CHECK(dlsym(RTLD_DEFAULT, "elf_begin") == nullptr);
}

TEST_CASE("libdw is loaded by the first resolve, privately", "[symbolizer]") {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  const auto r = nbtest::run({std::string(self, static_cast<size_t>(n)), "[symbolizer-fresh]"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("All tests passed (5 assertions in 1 test case)") != std::string::npos);
}

TEST_CASE("a return address resolves to the line of its call", "[symbolizer]") {
  Symbolizer s;
  REQUIRE(s.has_line_info());  // scripts/install-deps.sh installs libdw
  const CallSite site = symbolizer_test_call_site();
  const SymbolizedFrame f = s.resolve(site.pc, true);
  CHECK(f.function == "(anonymous namespace)::symbolizer_test_call_site()");
  CHECK(ends_with(f.file, "/test/unit/test_symbolizer.cpp"));
  CHECK(f.file[0] == '/');  // made whole with the compilation directory
  CHECK(f.line == site.line);
  CHECK(ends_with(f.module, "/nb_unit_tests"));
  CHECK(f.module[0] == '/');
  // The offset is of the address looked up (pc-1) from this program's load
  // bias, as the dynamic linker reports it.
  CHECK(f.offset == site.pc - 1 - main_program_bias());
}

TEST_CASE("a function's own address resolves to its name and lines", "[symbolizer]") {
  Symbolizer s;
  const uint64_t pc = address_of(reinterpret_cast<void*>(&symbolizer_test_known_function));
  const SymbolizedFrame f = s.resolve(pc, false);
  CHECK(f.function == "(anonymous namespace)::symbolizer_test_known_function(int)");
  CHECK(ends_with(f.file, "test/unit/test_symbolizer.cpp"));
  CHECK(f.line > kKnownFirstLine);
  CHECK(f.line < kKnownLastLine);
  CHECK(f.offset > 0);
  CHECK(f.offset < pc);

  // As a return address the byte before is looked up, which is not in this
  // function: the pc-1 rule is applied.
  CHECK(s.resolve(pc, true).function != f.function);

  // Cached answers are the same answers.
  const SymbolizedFrame again = s.resolve(pc, false);
  CHECK(again.function == f.function);
  CHECK(again.file == f.file);
  CHECK(again.line == f.line);
  CHECK(again.module == f.module);
  CHECK(again.offset == f.offset);
}

TEST_CASE("an address in libc names libc and its symbol", "[symbolizer]") {
  Symbolizer s;
  // getpid, not malloc: sanitizer runtimes define their own malloc, which
  // &malloc then names.
  pid_t (*fn)() = &getpid;
  const SymbolizedFrame f = s.resolve(address_of(reinterpret_cast<void*>(fn)), false);
  CHECK(f.module.find("libc.so") != std::string::npos);
  CHECK(f.module[0] == '/');
  CHECK(f.function.find("getpid") != std::string::npos);
  CHECK(f.offset > 0);
  // Without libc's debug info the file is the module itself.
  if (f.line == 0) CHECK(f.file == f.module);
}

TEST_CASE("addresses outside every module resolve to an unknown frame", "[symbolizer]") {
  Symbolizer s;
  auto heap = std::make_unique<int>(7);
  int on_stack = 0;
  for (const uint64_t pc : {uint64_t{0}, uint64_t{1}, address_of(heap.get()), address_of(&on_stack),
                            uint64_t{0xffffffffff600000ull}, ~uint64_t{0}}) {
    for (const bool ret : {false, true}) {
      CAPTURE(pc, ret);
      const SymbolizedFrame f = s.resolve(pc, ret);
      CHECK(f.function.empty());
      CHECK(f.module.empty());
      CHECK(f.file == "??");
      CHECK(f.line == 0);
    }
  }
}

TEST_CASE("an address in the vDSO is named without reading a file", "[symbolizer]") {
  const unsigned long vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso == 0) return;  // no vDSO on this kernel
  Symbolizer s;
  const SymbolizedFrame f = s.resolve(vdso + 0x10, false);
  CHECK(f.module == "[vdso]");
  CHECK(f.file == "[vdso]");
  CHECK(f.line == 0);
}

namespace {
int g_inline_line = 0;
// Inlined into its caller: one return address stands for two frames.
__attribute__((always_inline)) inline uint64_t symbolizer_inlined_helper() {
  const uint64_t pc = return_address_here(); g_inline_line = __LINE__;  // one line on purpose
  return pc;
}
__attribute__((noinline)) CallSite symbolizer_inline_caller() {
  CallSite s;
  s.pc = symbolizer_inlined_helper(); s.line = __LINE__;  // one line on purpose
  return s;
}
}  // namespace

TEST_CASE("symbolizer: an inlined call comes back as the callee and its caller", "[symbolizer]") {
  const CallSite site = symbolizer_inline_caller();
  Symbolizer s;
  REQUIRE(s.has_line_info());  // libdw1 comes with libdw-dev (scripts/install-deps.sh)
  const auto frames = s.resolve_inlined(site.pc, true);
  REQUIRE(frames.size() >= 2);
  CHECK(frames[0].function.find("symbolizer_inlined_helper") != std::string::npos);
  CHECK(frames[0].line == g_inline_line);
  CHECK(ends_with(frames[0].file, "test_symbolizer.cpp"));
  CHECK(frames[1].function.find("symbolizer_inline_caller") != std::string::npos);
  CHECK(frames[1].line == site.line);
  CHECK(ends_with(frames[1].file, "test_symbolizer.cpp"));
  // Without inlining at that address: just resolve()'s frame.
  const auto plain = s.resolve_inlined(address_of(reinterpret_cast<const void*>(&return_address_here)), false);
  CHECK(plain.size() == 1);
}

namespace {
int g_inner_line = 0, g_mid_line = 0;
__attribute__((always_inline)) inline uint64_t symbolizer_inner() {
  const uint64_t pc = return_address_here(); g_inner_line = __LINE__;  // one line on purpose
  return pc;
}
__attribute__((always_inline)) inline uint64_t symbolizer_mid() {
  const uint64_t pc = symbolizer_inner(); g_mid_line = __LINE__;  // one line on purpose
  return pc;
}
__attribute__((noinline)) CallSite symbolizer_outer() {
  CallSite s;
  s.pc = symbolizer_mid(); s.line = __LINE__;  // one line on purpose
  return s;
}
}  // namespace

TEST_CASE("symbolizer: two levels of inlining give three frames, each at its own line", "[symbolizer]") {
  const CallSite site = symbolizer_outer();
  Symbolizer s;
  REQUIRE(s.has_line_info());
  const auto frames = s.resolve_inlined(site.pc, true);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].function.find("symbolizer_inner") != std::string::npos);
  CHECK(frames[0].line == g_inner_line);
  CHECK(frames[1].function.find("symbolizer_mid") != std::string::npos);
  CHECK(frames[1].line == g_mid_line);
  CHECK(frames[2].function.find("symbolizer_outer") != std::string::npos);
  CHECK(frames[2].line == site.line);
  for (const auto& f : frames) CHECK(ends_with(f.file, "test_symbolizer.cpp"));
}

TEST_CASE("demangle: only mangled C++ names are demangled", "[symbolizer]") {
  CHECK(nb::demangle("_Z7kernelAPf") == "kernelA(float*)");
  CHECK(nb::demangle("f") == "f");  // not "float"
  CHECK(nb::demangle("nvjet_sm90_hsh_64x32") == "nvjet_sm90_hsh_64x32");
  CHECK(nb::demangle("_Znot a name") == "_Znot a name");
  CHECK(nb::demangle("").empty());
}
