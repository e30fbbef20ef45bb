// NB_STEP's spec: every form, and a clear error for each kind of mistake.
#include <catch2/catch.hpp>

#include "core/step_marker.h"

using nb::StepMarker;

namespace {
StepMarker ok(const std::string& spec) {
  StepMarker m;
  std::string error;
  INFO(spec);
  REQUIRE(nb::parse_step_marker(spec, m, error));
  CHECK(error.empty());
  return m;
}
std::string bad(const std::string& spec) {
  StepMarker m;
  std::string error;
  INFO(spec);
  CHECK_FALSE(nb::parse_step_marker(spec, m, error));
  CHECK(m.kind == StepMarker::Kind::None);
  return error;
}
}  // namespace

TEST_CASE("step markers: every accepted form", "[unit][step]") {
  CHECK(ok("").kind == StepMarker::Kind::None);
  auto k = ok("kernel:^void gemm.*tile");
  CHECK(k.kind == StepMarker::Kind::Kernel);
  CHECK(k.text == "^void gemm.*tile");
  auto n = ok("nvtx:decode step:1");  // the name may hold colons
  CHECK(n.kind == StepMarker::Kind::Nvtx);
  CHECK(n.text == "decode step:1");
  CHECK(ok("sync").kind == StepMarker::Kind::Sync);
  CHECK(ok("profiler-api").kind == StepMarker::Kind::ProfilerApi);
  auto l = ok("launches:250");
  CHECK(l.kind == StepMarker::Kind::Launches);
  CHECK(l.count == 250);
  CHECK(ok("time:500ms").ns == 500000000);
  CHECK(ok("time:1.5s").ns == 1500000000);
  CHECK(ok("time:250us").ns == 250000);
  CHECK(ok("time:1000ns").ns == 1000);
}

TEST_CASE("step markers: mistakes are named, with what is accepted", "[unit][step]") {
  CHECK(bad("kernel:").find("regular expression") != std::string::npos);
  CHECK(bad("kernel:gemm(").find("not a valid POSIX extended regular expression") != std::string::npos);
  CHECK(bad("nvtx:").find("NVTX range") != std::string::npos);
  CHECK(bad("launches:0").find("N >= 1") != std::string::npos);
  CHECK(bad("launches:-3").find("N >= 1") != std::string::npos);
  CHECK(bad("launches:12x").find("N >= 1") != std::string::npos);
  CHECK(bad("time:5").find("ns, us, ms or s") != std::string::npos);
  CHECK(bad("time:0ms").find("positive") != std::string::npos);
  CHECK(bad("time:1.2.3s").find("positive") != std::string::npos);
  CHECK(bad("time:-1s").find("positive") != std::string::npos);
  const std::string e = bad("kernels:gemm");
  CHECK(e.find("kernel:REGEX") != std::string::npos);
  CHECK(e.find("profiler-api") != std::string::npos);
  bad("SYNC");
  bad(" sync");
}

#include <pthread.h>

#include "core/kernel_regex.h"

namespace {
struct LongMatch {
  const nb::KernelRegex* re;
  const std::string* text;
  bool found = false;
};
void* match_on_small_stack(void* arg) {
  auto* m = static_cast<LongMatch*>(arg);
  m->found = m->re->search(*m->text);
  return nullptr;
}
}  // namespace

TEST_CASE("kernel regex: `.*` over a huge templated name on a small thread stack", "[unit][step]") {
  // The match runs inside the program's launch call, on the program's
  // thread: std::regex recursed once per character and overflowed 1 MB
  // stacks on 5,000-character names.
  nb::KernelRegex re;
  std::string error;
  REQUIRE(re.compile("elementwise.*lm_head", error));
  const std::string name = "void elementwise<" + std::string(50000, 'x') + ">lm_head";
  LongMatch m{&re, &name};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t t;
  REQUIRE(pthread_create(&t, &attr, match_on_small_stack, &m) == 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  CHECK(m.found);
}
