// nbprof, the front door: options map to NB_* variables from the shim's own
// table, booleans work as bare flags, a run writes the files (and stops
// before starting the program if they exist), subcommands and mistakes.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <catch2/catch.hpp>

#include "outputs.h"

TEST_CASE("nbprof maps options to NB_* variables; a bare boolean means 1", "[integration][nbprof]") {
  const auto r = nbtest::run({NB_NBPROF_PATH, "--dry-run", "--torch-allocs", "--stacks", "all", "--print-table", "0",
                              "-o", "x/run", "--", "prog", "arg"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("NB_TORCH_ALLOCS=1") != std::string::npos);
  CHECK(r.out.find("NB_STACKS=all") != std::string::npos);
  CHECK(r.out.find("NB_PRINT_TABLE=0") != std::string::npos);
  CHECK(r.out.find("NB_OUT=x/run") != std::string::npos);
  CHECK(r.out.find("libnb_shim.so") != std::string::npos);
  CHECK(r.out.find(" prog arg") != std::string::npos);

  const auto bad = nbtest::run({NB_NBPROF_PATH, "--no-such-option", "1", "--", "prog"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("unknown option --no-such-option") != std::string::npos);
  const auto missing = nbtest::run({NB_NBPROF_PATH, "--stacks"});
  CHECK(missing.exit_code != 0);
  // `--` ends the options: never taken for an option's value.
  for (const char* opt : {"--stacks", "-o", "--shim"}) {
    const auto dashes = nbtest::run({NB_NBPROF_PATH, opt, "--", "/bin/true"});
    CHECK(dashes.exit_code == 2);
    CHECK(dashes.err.find("needs a") != std::string::npos);
  }
}

TEST_CASE("nbprof runs a program under the shim and writes its files", "[integration][nbprof]") {
  nbtest::TempDir dir;
  // nbprof sets LD_PRELOAD and NB_OUT itself; the fake CUDA stack stands in for a GPU.
  const std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}, {"-LD_PRELOAD", ""}, {"-NB_OUT", ""}};
  const auto r = nbtest::run({NB_NBPROF_PATH, "-o", dir.file("out"), "--print-table", "0", "--",
                              nbtest::program("memory"), dir.file("manifest")},
                             env, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nbtest::file_exists(dir.file("out.trace.json.gz")));
  CHECK(nbtest::file_exists(dir.file("out.memory.pickle")));
  CHECK(nbtest::file_exists(dir.file("out.table.txt")));
}

TEST_CASE("nbprof steps suggests the kernel that ends each step", "[integration][nbprof][windows]") {
  nbtest::TempDir dir;
  const std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}, {"-LD_PRELOAD", ""}, {"-NB_OUT", ""}};
  // A steady loop: 3 layer kernels close together, then lm_head, every
  // 50 ms (long enough that a loaded machine's sleep overshoot stays a
  // small part of it).
  const auto r = nbtest::run({NB_NBPROF_PATH, "steps", "-o", dir.file("census"), "--",
                              nbtest::program("steps"), "12", "sleep_us=50000"},
                             env, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("suggested: NB_STEP='kernel:lm_head'") != std::string::npos);
  const std::string file = nbtest::read_file(dir.file("census.steps.txt"));
  CHECK(file.find("kernel:lm_head") != std::string::npos);
  // And the suggestion works: a window of exactly the steps asked for.
  auto e = nbtest::shim_env(dir.file("out"));
  e["NB_STEP"] = "kernel:lm_head";
  e["NB_ACTIVE"] = "3";
  e["NB_WAIT"] = "2";
  e["NB_PRINT_TABLE"] = "0";
  const auto w = nbtest::run({nbtest::program("steps"), "10"}, e, dir.path());
  REQUIRE(w.exit_code == 0);
  CHECK(nbtest::file_exists(dir.file("out.w1.trace.json.gz")));
}

namespace {

// The table a run printed on stderr: from its title line to the line
// before "nb: wrote".
std::string printed_table(const std::string& err, const std::string& program) {
  const size_t from = err.find("nb: " + program + " (pid ");
  const size_t to = err.find("nb: wrote ");
  if (from == std::string::npos || to == std::string::npos || to < from) return "";
  return err.substr(from, to - from);
}

const std::map<std::string, std::string>& fake_env() {
  static const std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}, {"-LD_PRELOAD", ""}, {"-NB_OUT", ""}, {"-NB_OVERWRITE", ""}};
  return env;
}

}  // namespace

TEST_CASE("nbprof stats prints the table the run printed, from its trace", "[integration][nbprof][stats]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run({NB_NBPROF_PATH, "-o", dir.file("out"), "--table-rows", "5", "--table-sort", "calls",
                              "--", nbtest::program("device"), dir.file("manifest")},
                             fake_env(), dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string printed = printed_table(r.err, "device");
  REQUIRE(printed.find("more rows not shown") != std::string::npos);

  // By default, the run's own sort and number of rows: what it printed.
  const auto again = nbtest::run({NB_NBPROF_PATH, "stats", "out"}, {}, dir.path());
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(again.out == printed);
  // Every row: the table file; the trace's path works as well as the prefix.
  const auto all = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out.trace.json.gz"), "--rows", "0"});
  REQUIRE(all.exit_code == 0);
  CHECK(all.out == nbtest::read_file(dir.file("out.table.txt")));
  // Another order and number of rows.
  const auto by_name = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out"), "--sort", "name", "--rows=2"});
  REQUIRE(by_name.exit_code == 0);
  CHECK(by_name.out.find("more rows not shown") != std::string::npos);
  const size_t a = by_name.out.find("Memcpy"), b = by_name.out.find("cuLaunchKernel");
  CHECK(a != std::string::npos);
  CHECK(b == std::string::npos);  // c... comes after M... by name, beyond two rows

  // Mistakes name themselves.
  const auto no_run = nbtest::run({NB_NBPROF_PATH, "stats"});
  CHECK(no_run.exit_code != 0);
  CHECK(no_run.err.find("nbprof stats: which run?") != std::string::npos);
  const auto missing = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("nothere")});
  CHECK(missing.exit_code != 0);
  CHECK(missing.err.find("no trace at " + dir.file("nothere.trace.json.gz")) != std::string::npos);
  const auto bad_sort = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out"), "--sort", "speed"});
  CHECK(bad_sort.exit_code != 0);
  CHECK(bad_sort.err.find("unknown sort 'speed'") != std::string::npos);
  const auto bad_option = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out"), "--colour"});
  CHECK(bad_option.exit_code != 0);
  CHECK(bad_option.err.find("unknown option --colour") != std::string::npos);
  nbtest::write_file(dir.file("other.trace.json.gz"), "{\"traceEvents\": []}");
  const auto foreign = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("other")});
  CHECK(foreign.exit_code != 0);
  CHECK(foreign.err.find("has no ranking table") != std::string::npos);
}

TEST_CASE("nbprof stats reads a window's trace; the prefix alone names the windows", "[integration][nbprof][stats][windows]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run({NB_NBPROF_PATH, "-o", dir.file("out"), "--step", "kernel:lm_head", "--active", "2",
                              "--", nbtest::program("steps"), "6"},
                             fake_env(), dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(nbtest::file_exists(dir.file("out.w1.trace.json.gz")));
  const auto window = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out.w1")});
  INFO(window.err);
  REQUIRE(window.exit_code == 0);
  CHECK(window.out == printed_table(r.err, "steps"));
  const auto prefix = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out")});
  CHECK(prefix.exit_code != 0);
  CHECK(prefix.err.find("recorded in windows: " + dir.file("out.w1")) != std::string::npos);
}

TEST_CASE("nbprof: an unknown subcommand or option is an error naming it; -- always separates",
          "[integration][nbprof]") {
  const auto sub = nbtest::run({NB_NBPROF_PATH, "stat", "x"});
  CHECK(sub.exit_code == 2);
  CHECK(sub.err.find("unknown subcommand 'stat'") != std::string::npos);
  const auto no_dashes = nbtest::run({NB_NBPROF_PATH, "-o", "x", "prog"});
  CHECK(no_dashes.exit_code == 2);
  CHECK(no_dashes.err.find("unexpected 'prog'") != std::string::npos);
  const auto short_option = nbtest::run({NB_NBPROF_PATH, "-x", "--", "prog"});
  CHECK(short_option.exit_code == 2);
  CHECK(short_option.err.find("unknown option -x") != std::string::npos);
  // A program called like a subcommand runs after --.
  const auto literal = nbtest::run({NB_NBPROF_PATH, "--dry-run", "--", "stats", "arg"});
  REQUIRE(literal.exit_code == 0);
  CHECK(literal.out.find(" stats arg\n") != std::string::npos);
}

TEST_CASE("nbprof stops before starting the program if its outputs exist", "[integration][nbprof]") {
  nbtest::TempDir dir;
  const auto device_run = [&](std::vector<std::string> options, std::map<std::string, std::string> extra = {}) {
    std::vector<std::string> argv = {NB_NBPROF_PATH};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--print-table", "0", "--", nbtest::program("device"), dir.file("manifest")});
    auto env = fake_env();
    for (const auto& [k, v] : extra) env[k] = v;
    return nbtest::run(argv, env, dir.path());
  };
  const auto one_line = [](const std::string& err) { return std::count(err.begin(), err.end(), '\n') == 1; };

  // Relative to the current directory, as the shim takes it.
  ::mkdir(dir.file("sub").c_str(), 0755);
  nbtest::write_file(dir.file("sub/out.table.txt"), "an earlier run's\n");
  const auto r = device_run({"-o", "sub/out"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "nbprof: " + dir.file("sub/out.table.txt") + " exists: pass --overwrite, or another --out\n");
  CHECK_FALSE(nbtest::file_exists(dir.file("manifest")));  // the program never started
  CHECK(nbtest::read_file(dir.file("sub/out.table.txt")) == "an earlier run's\n");

  // A window's file of an earlier run counts too.
  nbtest::write_file(dir.file("win.w3.trace.json.gz"), "{}");
  const auto w = device_run({"-o", "win"});
  CHECK(w.exit_code == 2);
  CHECK(w.err.find(dir.file("win.w3.trace.json.gz") + " exists") != std::string::npos);
  CHECK(one_line(w.err));

  // %n is the program's name as the shim makes it safe for a file name.
  REQUIRE(::symlink(nbtest::program("device").c_str(), dir.file("dev ice+").c_str()) == 0);
  nbtest::write_file(dir.file("named-dev_ice_-%.memory.pickle"), "");
  const auto named = nbtest::run({NB_NBPROF_PATH, "-o", "named-%n-%%", "--", dir.file("dev ice+"), dir.file("m")},
                                 fake_env(), dir.path());
  CHECK(named.exit_code == 2);
  CHECK(named.err.find("named-dev_ice_-%.memory.pickle exists") != std::string::npos);
  // ... and the shim names the files that way.
  const auto fresh = nbtest::run({NB_NBPROF_PATH, "-o", "fresh-%n", "--print-table", "0", "--", dir.file("dev ice+"),
                                  dir.file("m")},
                                 fake_env(), dir.path());
  INFO(fresh.err);
  CHECK(fresh.exit_code == 0);
  CHECK(nbtest::file_exists(dir.file("fresh-dev_ice_.trace.json.gz")));
  // A '#!' script runs as its interpreter.
  nbtest::write_file(dir.file("job.sh"), "#!/usr/bin/env bash\nexit 0\n");
  ::chmod(dir.file("job.sh").c_str(), 0755);
  nbtest::write_file(dir.file("script-bash.table.txt"), "");
  const auto script = nbtest::run({NB_NBPROF_PATH, "-o", "script-%n", "--", "./job.sh"}, fake_env(), dir.path());
  CHECK(script.exit_code == 2);
  CHECK(script.err.find("script-bash.table.txt exists") != std::string::npos);

  // A place that cannot be a directory.
  nbtest::write_file(dir.file("afile"), "");
  const auto under_file = device_run({"-o", "afile/run"});
  CHECK(under_file.exit_code == 2);
  CHECK(under_file.err.find("afile is not a directory") != std::string::npos);
  CHECK(one_line(under_file.err));

  // Overwriting, when asked, by option or variable.
  const auto forced = device_run({"-o", "sub/out", "--overwrite"});
  INFO(forced.err);
  CHECK(forced.exit_code == 0);
  CHECK(nbtest::read_file(dir.file("sub/out.table.txt")) != "an earlier run's\n");
  const auto by_env = device_run({"-o", "sub/out"}, {{"NB_OVERWRITE", "yes"}});
  CHECK(by_env.exit_code == 0);
}

namespace {

std::vector<std::string> sorted_dir(const std::string& dir) {
  auto names = nbtest::list_dir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("nbprof --version prints the project's version", "[integration][nbprof]") {
  const auto r = nbtest::run({NB_NBPROF_PATH, "--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "nbprof " NB_VERSION "\n");
}

TEST_CASE("nbprof from the source tree runs the build beside it", "[integration][nbprof]") {
  nbtest::TempDir dir;
  ::mkdir(dir.file("scripts").c_str(), 0755);
  nbtest::write_file(dir.file("scripts/nbprof"), nbtest::read_file(nbtest::source_dir() + "/scripts/nbprof"));
  ::chmod(dir.file("scripts/nbprof").c_str(), 0755);
  const auto unbuilt = nbtest::run({dir.file("scripts/nbprof"), "--version"});
  CHECK(unbuilt.exit_code == 2);
  CHECK(unbuilt.err.find("build nb first") != std::string::npos);

  REQUIRE(::symlink(NB_BUILD_ROOT, dir.file("build").c_str()) == 0);
  const auto version = nbtest::run({dir.file("scripts/nbprof"), "--version"});
  CHECK(version.out == "nbprof " NB_VERSION "\n");
  const auto dry = nbtest::run({dir.file("scripts/nbprof"), "--dry-run", "--", "prog"});
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("/shim/libnb_shim.so prog\n") != std::string::npos);
}

TEST_CASE("meson install: nbprof alone in bin, helpers in libexec/nb, the shim in the library dir, docs, man page",
          "[integration][nbprof][install]") {
  nbtest::TempDir dir;
  const std::string dest = dir.file("dest");
  const auto install = nbtest::run({NB_MESON, "install", "-C", NB_BUILD_ROOT, "--destdir", dest, "--no-rebuild"}, {},
                                   "", 120);
  INFO(install.out << install.err);
  REQUIRE(install.exit_code == 0);
  const auto at = [&](const std::string& d) { return dest + (d[0] == '/' ? d : std::string(NB_PREFIX) + "/" + d); };
  const std::string bin = at(NB_BINDIR), libexec = at(NB_LIBEXECDIR) + "/nb", lib = at(NB_LIBDIR) + "/nb",
                    doc = at(NB_DATADIR) + "/doc/nb";
  CHECK(sorted_dir(bin) == std::vector<std::string>{"nbprof"});
  CHECK(sorted_dir(libexec) == std::vector<std::string>{"nb-demo", "nb-merge", "nb-options", "nb-report", "nb-stats"});
  CHECK(sorted_dir(lib) == std::vector<std::string>{"libnb_shim.so", "nb-libs"});
  CHECK(nbtest::file_exists(doc + "/README.md"));
  CHECK(nbtest::file_exists(doc + "/LICENSE"));
  CHECK(nbtest::file_exists(doc + "/docs/performance.md"));
  CHECK(nbtest::read_file(at(NB_MANDIR) + "/man1/nbprof.1").find(".TH NBPROF 1") == 0);

  // The installed nbprof finds the installed shim and helpers.
  const std::string nbprof = bin + "/nbprof";
  CHECK(nbtest::run({nbprof, "--version"}).out == "nbprof " NB_VERSION "\n");
  const auto help = nbtest::run({nbprof, "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("NB_TABLE_SORT") != std::string::npos);  // from nb-options
  const auto stats = nbtest::run({nbprof, "stats", nbtest::source_dir() + "/test/golden/chrome_trace_sample.json"});
  CHECK(stats.exit_code == 0);
  CHECK(stats.out.find("nb: demo (pid 4242)\n") == 0);
  const auto r = nbtest::run({nbprof, "-o", dir.file("out"), "--print-table", "0", "--", nbtest::program("device"),
                              dir.file("manifest")},
                             fake_env(), dir.path());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("nb: wrote") != std::string::npos);
  const auto dry = nbtest::run({nbprof, "--dry-run", "--", "prog"});
  CHECK(dry.out.find("LD_PRELOAD=" + lib + "/libnb_shim.so prog") == 0);
}

TEST_CASE("demo.sh runs the demo under nbprof and says how to open each file", "[integration][nbprof][demo]") {
  nbtest::TempDir dir;
  // The suite's own build: nothing left to build, so this runs the demo.
  std::map<std::string, std::string> env = fake_env();
  env["NB_BUILD_DIR"] = NB_BUILD_ROOT;
  const auto r = nbtest::run({"/bin/bash", nbtest::source_dir() + "/scripts/demo.sh", "demo"}, env, dir.path(), 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* f : {"demo.trace.json.gz", "demo.memory.pickle", "demo.table.txt"}) {
    CHECK(nbtest::file_exists(dir.file(f)));
  }
  CHECK(r.err.find("nb demo: building ") != std::string::npos);
  const std::string end = r.err.substr(r.err.find("nb demo: done."));
  CHECK(end.find("demo.trace.json.gz") != std::string::npos);
  CHECK(end.find("https://ui.perfetto.dev") != std::string::npos);
  CHECK(end.find("chrome://tracing") != std::string::npos);
  CHECK(end.find("demo.memory.pickle") != std::string::npos);
  CHECK(end.find("https://pytorch.org/memory_viz") != std::string::npos);
  CHECK(end.find("python -m torch.cuda._memory_viz trace_plot demo.memory.pickle") != std::string::npos);
  CHECK(end.find("demo.table.txt") != std::string::npos);
  CHECK(end.find("nbprof stats demo") != std::string::npos);

  // A build directory that cannot be set up: meson's own error shows.
  env["NB_BUILD_DIR"] = dir.file("demo.table.txt") + "/build";
  const auto bad = nbtest::run({"/bin/bash", nbtest::source_dir() + "/scripts/demo.sh", "demo"}, env, dir.path(), 120);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("nb demo: meson setup failed (its output is above)") != std::string::npos);
  CHECK(bad.err.find("ERROR") != std::string::npos);
}
