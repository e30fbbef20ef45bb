// TraceFile: events streamed into slices, put together as one gzip member
// (or plain JSON), the oldest slices dropped, a copy taken mid-way, events
// before a time left out.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "collector/deflaters.h"
#include "collector/trace_file.h"
#include "test_support.h"

using namespace nb;

namespace {

// The one gzip member of `bytes`, inflated; fails the test if there is more.
std::string gunzip_one(const std::string& bytes) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 31) == Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 14];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    REQUIRE((rc == Z_OK || rc == Z_STREAM_END));
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc != Z_STREAM_END);
  CHECK(zs.avail_in == 0);  // nothing after the first member
  inflateEnd(&zs);
  return out;
}

// One event as EventText writes it: ",\n{...}" with its "ts".
std::string event(int ts) { return ",\n{\"ph\":\"X\",\"name\":\"ts\\\":1\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(ts) + ",\"dur\":1}"; }

void add(TraceFile& f, int ts) {
  f.text() += event(ts);
  f.committed(ts);
}

const std::string kHead = "{\"traceEvents\":[{\"ph\":\"M\"}";
const std::string kTail = "\n]}\n";

}  // namespace

TEST_CASE("trace file: head, streamed events and tail are one gzip member, or plain JSON", "[trace_file]") {
  for (int level : {0, 1, 9}) {
    DYNAMIC_SECTION("level " << level) {
      nbtest::TempDir dir;
      TraceWriter writer;
      TraceFile f(writer, TraceFileConfig{dir.file("t.trace.json.gz"), level, {}});
      std::string problem;
      REQUIRE(f.open(problem));
      std::string expected = kHead;
      // More than one text buffer (1 MiB each), and several slices.
      for (int i = 0; i < 40000; ++i) {
        add(f, i);
        expected += event(i);
        if (i % 10000 == 9999) f.end_slice(0);
      }
      expected += kTail;
      REQUIRE(f.finish(kHead, kTail, TraceFinish{}, problem));
      const std::string bytes = nbtest::read_file(dir.file("t.trace.json.gz"));
      CHECK(f.file_bytes() == bytes.size());
      CHECK((level == 0 ? bytes : gunzip_one(bytes)) == expected);
      if (level != 0) CHECK(bytes.size() * 5 < expected.size());
      // Nothing else was left in the directory (the scratch files were unlinked).
      CHECK(nbtest::list_dir(dir.path()).size() == 1);
    }
  }
}

TEST_CASE("trace file: a flight recorder keeps the newest slices and cuts the oldest at a time", "[trace_file]") {
  // The copy made here (finish) or on the writer thread (finish_async, as a
  // dump is made while the run goes on).
  const bool async = GENERATE(false, true);
  INFO((async ? "finish_async" : "finish"));
  nbtest::TempDir dir;
  TraceWriter writer;
  TraceFile f(writer, TraceFileConfig{dir.file("k.trace.json.gz"), 1, {}});
  std::string problem;
  REQUIRE(f.open(problem));
  // Slices of 100 events; the newest 3 kept.
  for (int i = 0; i < 1000; ++i) {
    add(f, i);
    if (i % 100 == 99) f.end_slice(3);
  }
  for (int i = 1000; i < 1050; ++i) add(f, i);
  // A copy that leaves out what is before 850; the file goes on.
  TraceFinish dump;
  dump.keep_body = true;
  dump.from_ts = 850;
  f.set_path(dir.file("k.d1.trace.json.gz"));
  std::atomic<int> calls{0};
  std::atomic<uint64_t> async_bytes{0};
  if (async) {
    // (Catch2's checks are for this thread: the writer's call only notes.)
    f.finish_async(kHead, kTail, dump, [&](bool ok, const std::string& why, uint64_t bytes) {
      if (ok && why.empty()) async_bytes = bytes;
      ++calls;
    });
  } else {
    REQUIRE(f.finish(kHead, kTail, dump, problem));
  }
  // More events after the copy, into the same slice; then the end, all kept.
  for (int i = 1050; i < 1100; ++i) add(f, i);
  f.set_path(dir.file("k.trace.json.gz"));
  REQUIRE(f.finish(kHead, kTail, TraceFinish{}, problem));
  // The copy holds what came before it, whenever the writer made it (its
  // job comes before the end's, on the one writer thread).
  std::string expected = kHead;
  for (int i = 850; i < 1050; ++i) expected += event(i);
  const std::string copy = nbtest::read_file(dir.file("k.d1.trace.json.gz"));
  CHECK(gunzip_one(copy) == expected + kTail);
  if (async) {
    CHECK(calls == 1);
    CHECK(async_bytes == copy.size());
  }
  expected = kHead;
  for (int i = 800; i < 1100; ++i) expected += event(i);  // slices 800-899, 900-999, 1000-1099
  CHECK(gunzip_one(nbtest::read_file(dir.file("k.trace.json.gz"))) == expected + kTail);
}

TEST_CASE("trace file: a body that cannot be kept gives one problem, and no file", "[trace_file]") {
  nbtest::TempDir dir;
  TraceWriter writer;
  TraceFile f(writer, TraceFileConfig{"/proc/nb-no-such-dir/t.trace.json.gz", 1, {}});
  std::string problem, again;
  CHECK_FALSE(f.open(problem));
  CHECK(problem.find("/proc/nb-no-such-dir") != std::string::npos);
  add(f, 1);  // ignored
  CHECK_FALSE(f.finish(kHead, kTail, TraceFinish{}, again));
  CHECK(again == problem);
}

TEST_CASE("trace file: a slice of many MB is cut at a time a buffer at a time", "[trace_file]") {
  for (int level : {0, 1}) {
    DYNAMIC_SECTION("level " << level) {
      nbtest::TempDir dir;
      TraceWriter writer;
      TraceFile f(writer, TraceFileConfig{dir.file("big.trace.json.gz"), level, {}});
      std::string problem;
      REQUIRE(f.open(problem));
      // One slice of 100,000 events (about 9 MB of text), cut in its middle.
      for (int i = 0; i < 100000; ++i) add(f, i);
      TraceFinish how;
      how.from_ts = 61234;
      REQUIRE(f.finish(kHead, kTail, how, problem));
      std::string expected = kHead;
      for (int i = 61234; i < 100000; ++i) expected += event(i);
      const std::string bytes = nbtest::read_file(dir.file("big.trace.json.gz"));
      CHECK((level == 0 ? bytes : gunzip_one(bytes)) == expected + kTail);
    }
  }
}

TEST_CASE("trace file: text that comes faster than level 9 compresses still makes one valid member", "[trace_file]") {
  // About 20 MB of events at once: the writer falls behind by more than
  // 8 MB, drops to level 1, and goes back to 9 as it catches up.
  nbtest::TempDir dir;
  TraceWriter writer;
  TraceFile f(writer, TraceFileConfig{dir.file("fast.trace.json.gz"), 9, {}});
  std::string problem;
  REQUIRE(f.open(problem));
  std::string expected = kHead;
  for (int i = 0; i < 220000; ++i) {
    add(f, i);
    expected += event(i);
  }
  expected += kTail;
  REQUIRE(f.finish(kHead, kTail, TraceFinish{}, problem));
  CHECK(gunzip_one(nbtest::read_file(dir.file("fast.trace.json.gz"))) == expected);
}

TEST_CASE("deflaters: pieces made on helpers, inline, or by a thread that waits, put in order are one deflate stream",
          "[trace_file]") {
  // `helping`: this thread also compresses queued pieces (help_one), as the
  // program's thread does at exit; wait() does as much for the writer.
  for (const auto& [helpers, helping] : {std::pair{0u, false}, std::pair{3u, false}, std::pair{1u, true}}) {
    DYNAMIC_SECTION(helpers << " helpers" << (helping ? ", and this thread" : "")) {
      Deflaters pool(helpers, 0);
      std::string whole;
      std::vector<std::shared_ptr<DeflatePiece>> pieces;
      for (int p = 0; p < 24; ++p) {
        auto piece = std::make_shared<DeflatePiece>();
        for (int i = 0; i < 2000 + 500 * p; ++i) piece->text += event(p * 100000 + i);
        piece->level = 1 + p % 9;  // each piece its own level
        // Primed with the text before it, but for a few that start afresh.
        if (p % 5 != 0) piece->history = whole.substr(whole.size() - std::min<size_t>(whole.size(), 32768));
        whole += piece->text;
        pieces.push_back(piece);
        pool.submit(piece);
      }
      // (How many this thread takes depends on timing; what it makes must
      // fit in order all the same.)
      while (helping && pool.help_one()) {
      }
      if (helpers == 0) CHECK_FALSE(pool.help_one());  // compressed as submitted: none waits
      std::string stream;
      uint32_t crc = 0;
      for (auto& piece : pieces) {
        pool.wait(*piece);
        REQUIRE(piece->ok);
        stream += piece->out;
        crc = static_cast<uint32_t>(crc32_combine(crc, piece->crc, static_cast<z_off_t>(piece->text.size())));
      }
      REQUIRE(deflate_piece("", 0, 1, true, stream));  // the final block
      CHECK(crc == static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(whole.data()), whole.size())));
      z_stream zs{};
      REQUIRE(inflateInit2(&zs, -15) == Z_OK);
      zs.next_in = reinterpret_cast<Bytef*>(stream.data());
      zs.avail_in = static_cast<uInt>(stream.size());
      std::string out(whole.size() + 1, '\0');
      zs.next_out = reinterpret_cast<Bytef*>(out.data());
      zs.avail_out = static_cast<uInt>(out.size());
      CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
      out.resize(out.size() - zs.avail_out);
      inflateEnd(&zs);
      CHECK(out == whole);
      CHECK(stream.size() * 5 < whole.size());
    }
  }
}
