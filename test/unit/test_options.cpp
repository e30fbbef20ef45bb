#include <catch2/catch.hpp>

#include <map>

#include "core/options.h"
#include "core/settings.h"

using namespace nb;

namespace {
Options parse(const std::map<std::string, std::string>& env, std::vector<std::string>& problems) {
  return parse_options(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      problems);
}
}  // namespace

TEST_CASE("defaults from the table, and every default parses", "[options]") {
  std::vector<std::string> problems;
  const Options o = parse({}, problems);
  REQUIRE(problems.empty());
  REQUIRE(o.out == "nb-%n-%p");
  REQUIRE(o.log == LogLevel::Warn);
  REQUIRE(o.mem_max_entries == 1000000);
  REQUIRE(o.enable);
  REQUIRE_FALSE(o.overwrite);
  // A default that did not parse would leave the field value-initialised;
  // feed every default back in as a value and expect no complaint.
  std::map<std::string, std::string> env;
  for (const auto& info : option_table()) env[info.name] = info.default_value;
  parse(env, problems);
  REQUIRE(problems.empty());
}

TEST_CASE("good values are taken", "[options]") {
  std::vector<std::string> problems;
  const Options o = parse({{"NB_OUT", "/tmp/run-%p"}, {"NB_LOG", "DEBUG"}, {"NB_MEM_MAX_ENTRIES", "10k"},
                           {"NB_ENABLE", "off"}, {"NB_OVERWRITE", " yes "}},
                          problems);
  REQUIRE(problems.empty());
  REQUIRE(o.out == "/tmp/run-%p");
  REQUIRE(o.log == LogLevel::Debug);
  REQUIRE(o.mem_max_entries == 10000);
  REQUIRE_FALSE(o.enable);
  REQUIRE(o.overwrite);
}

TEST_CASE("a bad value gives one line naming the variable and the accepted forms", "[options]") {
  for (const char* bad : {"", "garbage", "-5", "0", "1e9", "99999999999999999999999", "12q", "0x10"}) {
    std::vector<std::string> problems;
    const Options o = parse({{"NB_MEM_MAX_ENTRIES", bad}}, problems);
    INFO("value '" << bad << "'");
    REQUIRE(problems.size() == 1);
    REQUIRE(problems[0].find("NB_MEM_MAX_ENTRIES") != std::string::npos);
    REQUIRE(problems[0].find("expected an integer from 1 to") != std::string::npos);
    REQUIRE(o.mem_max_entries == 1000000);
  }
  std::vector<std::string> problems;
  const Options o = parse({{"NB_LOG", "loud"}, {"NB_ENABLE", "maybe"}, {"NB_OUT", ""}}, problems);
  REQUIRE(problems.size() == 3);
  REQUIRE(o.log == LogLevel::Warn);
  REQUIRE(o.enable);
  REQUIRE(o.out == "nb-%n-%p");
}

TEST_CASE("problem lines never echo control characters", "[options]") {
  std::vector<std::string> problems;
  parse({{"NB_LOG", std::string("bad\x1b[31m\nvalue")}}, problems);
  REQUIRE(problems.size() == 1);
  for (char c : problems[0]) REQUIRE(static_cast<unsigned char>(c) >= 0x20);
}

TEST_CASE("parse_uint edge cases", "[options]") {
  uint64_t v = 0;
  REQUIRE(parse_uint("18446744073709551615", 0, UINT64_MAX, v));
  REQUIRE(v == UINT64_MAX);
  REQUIRE_FALSE(parse_uint("18446744073709551616", 0, UINT64_MAX, v));
  REQUIRE_FALSE(parse_uint("18446744073709552g", 0, UINT64_MAX, v));
  REQUIRE(parse_uint("3m", 0, UINT64_MAX, v));
  REQUIRE(v == 3000000);
  REQUIRE_FALSE(parse_uint("3mm", 0, UINT64_MAX, v));
  REQUIRE_FALSE(parse_uint("+3", 0, UINT64_MAX, v));
  REQUIRE_FALSE(parse_uint("5", 6, 10, v));
}

TEST_CASE("output prefix expansion", "[options]") {
  PrefixFields f;
  f.pid = 42;
  f.program = "python3";
  REQUIRE(expand_prefix("nb-%n-%p", f) == "nb-python3-42");
  REQUIRE(expand_prefix("100%%-%x-%", f) == "100%-%x-%");
  f.pid = 7;
  REQUIRE(expand_prefix("out/%p/%p", f) == "out/7/7");
  f.rank = "3";
  f.local_rank = "1";
  f.host = "node7";
  f.env = [](const char* n) -> const char* { return std::string(n) == "SLURM_JOB_ID" ? "991" : nullptr; };
  REQUIRE(expand_prefix("out/%h-r%r-l%l", f) == "out/node7-r3-l1");
  REQUIRE(expand_prefix("job%q{SLURM_JOB_ID}-%q{UNSET}-%q{}-%q{OPEN", f) == "job991---%q{OPEN");
  REQUIRE(expand_prefix("%%q{SLURM_JOB_ID}", f) == "%q{SLURM_JOB_ID}");
}

namespace {
Settings settings_of(const std::map<std::string, std::string>& env, const std::vector<std::string>& argv = {}) {
  return read_settings(
      [&](const char* n) -> const char* {
        auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      ProcessFacts{100, "python3", argv, "node7", "/start"});
}
}  // namespace

TEST_CASE("rank: each launcher's variables, the most specific first, NB_RANK over all", "[options][rank]") {
  CHECK_FALSE(settings_of({}).rank.known());
  // Slurm alone (srun python train.py).
  Settings s = settings_of({{"SLURM_PROCID", "9"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "16"}, {"SLURM_NODEID", "4"}});
  CHECK(s.rank.rank == 9);
  CHECK(s.rank.local_rank == 1);
  CHECK(s.rank.world_size == 16);
  CHECK(s.rank.node == 4);
  CHECK(s.rank.source == "Slurm");
  // torchrun inside a Slurm allocation: the worker's RANK, not the task's.
  s = settings_of({{"SLURM_PROCID", "1"}, {"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"},
                   {"LOCAL_WORLD_SIZE", "4"}, {"GROUP_RANK", "1"}});
  CHECK(s.rank.rank == 5);
  CHECK(s.rank.local_rank == 1);
  CHECK(s.rank.world_size == 8);
  CHECK(s.rank.local_world_size == 4);
  CHECK(s.rank.source == "torchrun");
  // mpirun inside Slurm.
  s = settings_of({{"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                   {"OMPI_COMM_WORLD_SIZE", "4"}});
  CHECK(s.rank.rank == 3);
  CHECK(s.rank.world_size == 4);
  CHECK(s.rank.source == "Open MPI");
  s = settings_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}});
  CHECK(s.rank.rank == 2);
  CHECK(s.rank.world_size == 4);
  CHECK(s.rank.local_rank == -1);
  // A family whose rank is not a number does not count.
  s = settings_of({{"RANK", "first"}, {"PMI_RANK", "2"}});
  CHECK(s.rank.rank == 2);
  // NB_RANK overrides the rank and keeps the launcher's sizes; a bad one is
  // said once and ignored.
  s = settings_of({{"NB_RANK", "7"}, {"RANK", "1"}, {"WORLD_SIZE", "8"}});
  CHECK(s.rank.rank == 7);
  CHECK(s.rank.world_size == 8);
  s = settings_of({{"NB_RANK", "x"}, {"RANK", "1"}});
  CHECK(s.rank.rank == 1);
  REQUIRE(s.problems.size() == 1);
  CHECK(s.problems[0].find("NB_RANK='x' is not valid") == 0);
}

TEST_CASE("names: the default prefix has the rank when a launcher gives one; %n is a script's name", "[options][rank]") {
  CHECK(settings_of({}, {"/usr/bin/python3", "serve.py"}).prefix == "/start/nb-serve-100");
  CHECK(settings_of({{"RANK", "3"}}, {"/usr/bin/python3", "serve.py"}).prefix == "/start/nb-serve-r3-100");
  CHECK(settings_of({{"RANK", "3"}, {"NB_OUT", "runs/"}}, {"python3", "a.py"}).prefix == "/start/runs/nb-a-r3-100");
  CHECK(settings_of({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"NB_OUT", "out/%h-r%r-l%l"}}).prefix == "/start/out/node7-r3-l1");
  CHECK(settings_of({{"NB_OUT", "out/%h-r%r-l%l"}}).prefix == "/start/out/node7-r0-l0");
  CHECK(settings_of({{"NB_OUT", "j%q{JOB}"}, {"JOB", "12"}}).prefix == "/start/j12");
}

TEST_CASE("program_name: the script or module an interpreter runs", "[options][rank]") {
  CHECK(program_name({"/usr/bin/python3", "serve.py", "--port", "80"}, "python3") == "serve");
  CHECK(program_name({"python3", "-u", "-W", "ignore", "-X", "dev", "dir/train.py"}, "python3") == "train");
  CHECK(program_name({"python3", "-m", "pkg.mod", "x.py"}, "python3") == "pkg.mod");
  CHECK(program_name({"python3.12", "-um", "pkg.mod"}, "python3.12") == "pkg.mod");
  CHECK(program_name({"/usr/bin/python3.13t", "serve.py"}, "python3.13t") == "serve");
  CHECK(program_name({"pythonista", "serve.py"}, "pythonista") == "pythonista");
  CHECK(program_name({"python", "-mvllm.entrypoints"}, "python") == "vllm.entrypoints");
  CHECK(program_name({"python3", "-Wignore", "--", "-odd.py"}, "python3") == "-odd");
  // A #! script: the kernel runs the interpreter with the script's path.
  CHECK(program_name({"/usr/bin/python3", "/usr/local/bin/torchrun", "--nproc_per_node=2", "t.py"}, "python3") ==
        "torchrun");
  // Nothing with a name: the interpreter's.
  CHECK(program_name({"python3", "-c", "import x"}, "python3") == "python3");
  CHECK(program_name({"python3"}, "python3") == "python3");
  CHECK(program_name({"python3", "-"}, "python3") == "python3");
  // Not an interpreter: the executable's short name, whatever its arguments.
  CHECK(program_name({"./bin/decode", "model.py"}, "decode") == "decode");
  CHECK(program_name({}, "decode") == "decode");
}

TEST_CASE("describe_options lists every variable once", "[options]") {
  std::vector<std::string> problems;
  const auto lines = describe_options(parse({}, problems));
  REQUIRE(lines.size() == option_table().size());
  REQUIRE(lines[0] == "NB_OUT=nb-%n-%p");
}

TEST_CASE("choices and paths", "[options]") {
  std::vector<std::string> problems;
  Options o = parse({{"NB_CUPTI_JOIN", " None "}, {"NB_TABLE_SORT", "calls"}, {"NB_CUPTI_LIB", ""}}, problems);
  REQUIRE(problems.empty());
  CHECK(o.cupti_join == CuptiJoin::None);
  CHECK(o.table_sort == TableSort::Calls);
  CHECK(o.cupti_lib.empty());
  o = parse({{"NB_CUPTI_JOIN", "kineto"}}, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("NB_CUPTI_JOIN='kineto' is not valid (expected one of order, callback, none)") !=
        std::string::npos);
  CHECK(o.cupti_join == CuptiJoin::Order);
  std::string out;
  CHECK_FALSE(parse_choice("call", "callback|none", out));
  CHECK_FALSE(parse_choice("", "callback|none", out));
  CHECK(parse_choice("none", "callback|none", out));
}

TEST_CASE("typed values: each choice has its enum, NB_STEP its marker", "[options]") {
  std::vector<std::string> problems;
  Options o = parse({{"NB_STACKS", "ALL"}, {"NB_UNWIND", "libunwind"}, {"NB_TRIGGER", "signal"},
                     {"NB_STEP", "kernel:lm_head"}},
                    problems);
  REQUIRE(problems.empty());
  CHECK(o.stacks == StackKinds::All);
  CHECK(o.unwind == Unwinder::Libunwind);
  CHECK(o.trigger == Trigger::Signal);
  CHECK(o.step.kind == StepMarker::Kind::Kernel);
  CHECK(o.step.text == "lm_head");
  CHECK(o.step.spec == "kernel:lm_head");
  CHECK(std::string(choice_name(o.stacks)) == "all");
  // Every value of every choice option parses back to itself.
  for (const OptionInfo& info : option_table()) {
    if (std::string(info.type) != "Choice") continue;
    std::string list = info.choices;
    for (size_t start = 0; start <= list.size();) {
      const size_t bar = std::min(list.find('|', start), list.size());
      const std::string value = list.substr(start, bar - start);
      problems.clear();
      parse({{info.name, value}}, problems);
      CHECK(problems.empty());
      start = bar + 1;
    }
  }
  // A bad NB_STEP falls back to no marker, and a schedule then uses sync.
  o = parse({{"NB_STEP", "kernel:("}, {"NB_ACTIVE", "4"}}, problems);
  CHECK(o.step.kind == StepMarker::Kind::None);
  const Settings s = read_settings([](const char* n) -> const char* {
    return std::string(n) == "NB_ACTIVE" ? "4" : std::string(n) == "NB_OUT" ? "runs/%n-%p" : nullptr;
  }, ProcessFacts{42, "my prog", {}, "host", "/start"});
  CHECK(s.step.kind == StepMarker::Kind::Sync);
  CHECK(s.step.spec == "sync");
  CHECK(s.prefix == "/start/runs/my_prog-42");
}
