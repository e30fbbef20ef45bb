#include "collector/symbolizer.h"

#include "core/demangle.h"
#include "core/log.h"
#include "core/private_libs.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>  // types and prototypes only: libdw is dlopen'ed, never linked
#include <dwarf.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nb {

namespace {

// The libdwfl functions nb calls, found with dlsym on a private handle.
#define NB_DWFL_FUNCTIONS(X)  \
  X(dwfl_begin)               \
  X(dwfl_end)                 \
  X(dwfl_report_begin_add)    \
  X(dwfl_report_elf)          \
  X(dwfl_report_end)          \
  X(dwfl_addrmodule)          \
  X(dwfl_module_info)         \
  X(dwfl_module_addrname)     \
  X(dwfl_module_getsrc)       \
  X(dwfl_lineinfo)            \
  X(dwfl_line_comp_dir)       \
  X(dwfl_build_id_find_debuginfo) \
  X(dwfl_module_addrdie)      \
  X(dwarf_getscopes)          \
  X(dwarf_getscopes_die)      \
  X(dwarf_offdie)             \
  X(dwarf_dieoffset)          \
  X(dwfl_module_getdwarf)     \
  X(dwarf_tag)                \
  X(dwarf_attr)               \
  X(dwarf_attr_integrate)     \
  X(dwarf_formstring)         \
  X(dwarf_formudata)          \
  X(dwarf_getsrcfiles)        \
  X(dwarf_filesrc)

struct DwflApi {
  bool ok = false;
#define NB_DWFL_MEMBER(name) decltype(&::name) name = nullptr;
  NB_DWFL_FUNCTIONS(NB_DWFL_MEMBER)
#undef NB_DWFL_MEMBER
};

DwflApi load_dwfl() {
  DwflApi api;
  // Private (RTLD_LOCAL): libdw's and libelf's symbols stay out of the
  // global scope, where they could bind the host's own copies. libelf first,
  // so that a bundled libdw binds the bundled libelf.
  open_private_lib("libelf.so.1");
  void* h = open_private_lib("libdw.so.1");
  if (h == nullptr) {
    log::warn("libdw.so.1 could not be loaded (not found, or no memory): native frames named from symbol tables "
              "only, without source lines");
    return api;
  }
  log::debug(std::string("source lines through ") + lib_path(h));
#define NB_DWFL_RESOLVE(name)                                            \
  api.name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));       \
  if (api.name == nullptr) {                                             \
    dlerror();                                                           \
    dlclose(h);                                                          \
    return DwflApi{};                                                    \
  }
  NB_DWFL_FUNCTIONS(NB_DWFL_RESOLVE)
#undef NB_DWFL_RESOLVE
  // The handle is kept for the life of the process: unloading buys nothing
  // and would race any other Symbolizer still using it.
  api.ok = true;
  return api;
}

// Loaded once per process, on first use (a function-local static is
// initialised thread-safely).
const DwflApi& dwfl_api() {
  static const DwflApi api = load_dwfl();
  return api;
}

// Modules are handed to libdwfl with their file (dwfl_report_elf), so it
// never has to find one. The standard finder (dwfl_build_id_find_elf) would
// ask debuginfod servers when DEBUGINFOD_URLS is set — Debian sets it in
// login shells — and stall output on the network; this one declines.
int no_find_elf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) { return -1; }

// libdw and dladdr answer null for no name.
std::string demangled(const char* name) { return name == nullptr ? std::string() : demangle(name); }

// dladdr names the main program by argv[0], which may be relative or a
// bare name; the kernel's link is the file actually running.
std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

struct Symbolizer::Impl {
  Dwfl_Callbacks callbacks{};  // libdwfl keeps a pointer to it: lives as long as `dwfl`
  Dwfl* dwfl = nullptr;
  bool dwfl_tried = false;
  bool exe_read = false;
  std::string exe;
  // Modules already offered to libdwfl (load bias, path), whether it took
  // them or not, so a module without usable DWARF costs one attempt.
  std::set<std::pair<uintptr_t, std::string>> offered;
  std::unordered_map<uint64_t, SymbolizedFrame> cache;  // by the address looked up
  std::unordered_map<uint64_t, std::vector<SymbolizedFrame>> inline_cache;

  ~Impl() {
    if (dwfl != nullptr) dwfl_api().dwfl_end(dwfl);
  }

  Dwfl* session() {
    if (!dwfl_tried) {
      dwfl_tried = true;
      const DwflApi& api = dwfl_api();
      if (api.ok) {
        callbacks.find_elf = no_find_elf;
        // Separate debug files by build id under /usr/lib/debug only (the
        // -dbgsym packages' layout); unlike dwfl_standard_find_debuginfo it
        // never falls through to debuginfod.
        callbacks.find_debuginfo = api.dwfl_build_id_find_debuginfo;
        dwfl = api.dwfl_begin(&callbacks);
      }
    }
    return dwfl;
  }

  const std::string& exe_path() {
    if (!exe_read) {
      exe_read = true;
      exe = self_exe();
    }
    return exe;
  }

  // libdwfl's module for `addr`, reporting the module dladdr found (`path`
  // loaded at `bias`) the first time one of its addresses is asked for:
  // only modules that appear in stacks are opened.
  Dwfl_Module* dwfl_module(uint64_t addr, uintptr_t bias, const std::string& path) {
    Dwfl* d = session();
    if (d == nullptr || path.empty()) return nullptr;
    const DwflApi& api = dwfl_api();
    Dwfl_Module* m = api.dwfl_addrmodule(d, addr);
    if (m == nullptr && offered.emplace(bias, path).second) {
      api.dwfl_report_begin_add(d);
      // add_p_vaddr: `bias` is link_map's l_addr, the difference between
      // the file's addresses and the loaded ones (also right for prelinked
      // or non-PIE files).
      api.dwfl_report_elf(d, path.c_str(), path.c_str(), -1, bias, true);
      api.dwfl_report_end(d, nullptr, nullptr);
      m = api.dwfl_addrmodule(d, addr);
    }
    if (m == nullptr) return nullptr;
    // Trust only the module dladdr names: after a dlclose another object
    // can sit where an earlier one was reported.
    const char* name = api.dwfl_module_info(m, nullptr, nullptr, nullptr, nullptr, nullptr,
                                            nullptr, nullptr);
    return (name != nullptr && path == name) ? m : nullptr;
  }

  // A name for a function's DIE: the linkage name demangled (what the
  // symbol table would say), else the plain name; both may sit on the
  // abstract origin of an inlined copy.
  static std::string die_name(const DwflApi& api, Dwarf_Die* die) {
    Dwarf_Attribute a;
    for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
      if (api.dwarf_attr_integrate(die, at, &a) != nullptr) {
        if (const char* n = api.dwarf_formstring(&a)) return demangled(n);
      }
    }
    if (api.dwarf_attr_integrate(die, DW_AT_name, &a) != nullptr) {
      if (const char* n = api.dwarf_formstring(&a)) return n;
    }
    return {};
  }

  // The frames that one address stands for when the compiler inlined calls
  // into its function, innermost first: the inlined callee at the line the
  // line table gives, then each caller at the line of its inlined call, out
  // to the real function (`outer`, whose name comes from the symbol table).
  std::vector<SymbolizedFrame> expand_inlined(uint64_t addr, const SymbolizedFrame& outer) {
    std::vector<SymbolizedFrame> frames{outer};
    const DwflApi& api = dwfl_api();
    Dl_info info{};
    link_map* lm = nullptr;
    if (!api.ok || outer.module.empty() || outer.module == "[vdso]" ||
        dladdr1(reinterpret_cast<void*>(addr), &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0 ||
        lm == nullptr) {
      return frames;
    }
    Dwfl_Module* m = dwfl_module(addr, lm->l_addr, outer.module);
    if (m == nullptr) return frames;
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = api.dwfl_module_addrdie(m, addr, &bias);
    if (cu == nullptr) return frames;
    // dwarf_getscopes stops at the innermost inlined copy and goes on with
    // the scopes of its abstract definition; the physical chain of callers
    // (inlined copies within inlined copies, out to the function) comes
    // from that DIE's own parents, as eu-addr2line -i finds them.
    using Scopes = std::unique_ptr<Dwarf_Die, decltype(&std::free)>;
    Dwarf_Die* raw = nullptr;
    const int n = api.dwarf_getscopes(cu, addr - bias, &raw);
    Scopes scopes(raw, &std::free);
    // The innermost inlined copy (lexical blocks may sit inside it).
    int first = 0;
    while (first < n && api.dwarf_tag(&raw[first]) != DW_TAG_inlined_subroutine) {
      if (api.dwarf_tag(&raw[first]) == DW_TAG_subprogram) return frames;  // nothing inlined here
      ++first;
    }
    if (n <= 0 || raw == nullptr || first == n) return frames;
    Dwarf_Addr dwarf_bias = 0;
    Dwarf* dwarf = api.dwfl_module_getdwarf(m, &dwarf_bias);
    Dwarf_Die innermost;
    if (dwarf == nullptr || api.dwarf_offdie(dwarf, api.dwarf_dieoffset(&raw[first]), &innermost) == nullptr) {
      return frames;
    }
    Dwarf_Die* raw_chain = nullptr;
    const int nchain = api.dwarf_getscopes_die(&innermost, &raw_chain);
    Scopes chain_scopes(raw_chain, &std::free);
    if (nchain <= 0 || raw_chain == nullptr) return frames;
    std::vector<Dwarf_Die*> chain;  // inlined copies, innermost first
    for (int i = 0; i < nchain; ++i) {
      const int tag = api.dwarf_tag(&raw_chain[i]);
      if (tag == DW_TAG_inlined_subroutine) chain.push_back(&raw_chain[i]);
      if (tag == DW_TAG_subprogram) break;
    }
    if (!chain.empty()) {
      Dwarf_Files* files = nullptr;
      size_t nfiles = 0;
      if (api.dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = nullptr;
      std::string comp_dir;
      Dwarf_Attribute a;
      if (api.dwarf_attr(cu, DW_AT_comp_dir, &a) != nullptr) {
        if (const char* d = api.dwarf_formstring(&a)) comp_dir = d;
      }
      std::vector<SymbolizedFrame> expanded;
      SymbolizedFrame f = outer;  // innermost: the line table's file and line
      f.function = die_name(api, chain[0]);
      for (size_t i = 0; i < chain.size(); ++i) {
        expanded.push_back(f);
        // The next frame out is the caller, at the inlined call's site; the
        // outermost is the real function, named by the symbol table.
        f = outer;
        if (i + 1 < chain.size()) f.function = die_name(api, chain[i + 1]);
        f.line = 0;
        f.file = "??";
        Dwarf_Word file = 0, line = 0;
        if (api.dwarf_attr(chain[i], DW_AT_call_line, &a) != nullptr && api.dwarf_formudata(&a, &line) == 0) {
          f.line = static_cast<int>(line);
        }
        if (files != nullptr && api.dwarf_attr(chain[i], DW_AT_call_file, &a) != nullptr &&
            api.dwarf_formudata(&a, &file) == 0 && file < nfiles) {
          if (const char* src = api.dwarf_filesrc(files, file, nullptr, nullptr)) {
            f.file = (src[0] != '/' && !comp_dir.empty() && comp_dir[0] == '/') ? comp_dir + "/" + src : src;
          }
        }
      }
      expanded.push_back(f);
      frames = std::move(expanded);
    }
    return frames;
  }

  SymbolizedFrame lookup(uint64_t addr) {
    SymbolizedFrame f;
    f.file = "??";
    Dl_info info{};
    link_map* lm = nullptr;
    // dladdr1 compares the address with the loaded objects' ranges and never
    // reads it, so any value (0, kernel, freed library) is safe.
    if (dladdr1(reinterpret_cast<void*>(addr), &info, reinterpret_cast<void**>(&lm),
                RTLD_DL_LINKMAP) == 0 ||
        lm == nullptr)
      return f;
    f.offset = addr - lm->l_addr;
    f.function = demangled(info.dli_sname);
    // The vDSO has a link_map but no file to read DWARF from.
    const unsigned long vdso = getauxval(AT_SYSINFO_EHDR);
    if (vdso != 0 && reinterpret_cast<uintptr_t>(info.dli_fbase) == vdso) {
      f.module = f.file = "[vdso]";
      return f;
    }
    f.module = (lm->l_name != nullptr && lm->l_name[0] != '\0') ? std::string(lm->l_name) : exe_path();
    if (f.module.empty()) return f;
    f.file = f.module;
    Dwfl_Module* m = dwfl_module(addr, lm->l_addr, f.module);
    if (m == nullptr) return f;
    const DwflApi& api = dwfl_api();
    // dladdr sees only exported symbols; the symbol table also has static
    // functions and everything in an executable.
    if (f.function.empty()) f.function = demangled(api.dwfl_module_addrname(m, addr));
    if (Dwfl_Line* line = api.dwfl_module_getsrc(m, addr)) {
      int n = 0;
      const char* src = api.dwfl_lineinfo(line, nullptr, &n, nullptr, nullptr, nullptr);
      if (src != nullptr && src[0] != '\0') {
        f.file = src;
        f.line = n;
        // Names the compiler was given relative to its working directory
        // (meson passes "../src/x.cpp") come back relative; a reader of the
        // snapshot needs them whole.
        const char* dir = api.dwfl_line_comp_dir(line);
        if (src[0] != '/' && dir != nullptr && dir[0] == '/') f.file = std::string(dir) + "/" + src;
      }
    }
    return f;
  }
};

Symbolizer::Symbolizer(bool line_info) : impl_(new (std::nothrow) Impl) {
  if (impl_ && !line_info) impl_->dwfl_tried = true;
}

bool Symbolizer::load_line_info() { return dwfl_api().ok; }

Symbolizer::~Symbolizer() = default;

std::vector<SymbolizedFrame> Symbolizer::resolve_inlined(uint64_t pc, bool return_address) {
  const SymbolizedFrame outer = resolve(pc, return_address);
  const uint64_t addr = (return_address && pc != 0) ? pc - 1 : pc;
  try {
    if (impl_ == nullptr) return {outer};
    auto it = impl_->inline_cache.find(addr);
    if (it != impl_->inline_cache.end()) return it->second;
    std::vector<SymbolizedFrame> frames = impl_->expand_inlined(addr, outer);
    impl_->inline_cache.emplace(addr, frames);
    return frames;
  } catch (...) {
    return {outer};
  }
}

SymbolizedFrame Symbolizer::resolve(uint64_t pc, bool return_address) {
  // A return address is the instruction after the call, which may belong to
  // the next line (or, after a call that never returns, the next function).
  const uint64_t addr = (return_address && pc != 0) ? pc - 1 : pc;
  try {
    if (impl_ == nullptr) throw std::bad_alloc();
    auto it = impl_->cache.find(addr);
    if (it != impl_->cache.end()) return it->second;
    SymbolizedFrame f = impl_->lookup(addr);
    impl_->cache.emplace(addr, f);
    return f;
  } catch (...) {
    // Out of memory while printing someone else's stacks: an unknown frame
    // is better than an exception in their process.
    SymbolizedFrame f;
    f.file = "??";
    return f;
  }
}

bool Symbolizer::has_line_info() const { return dwfl_api().ok; }

}  // namespace nb
