// The shim's voice on stderr: spdlog underneath (compiled in, private), one
// "nb: " prefix, level from NB_LOG. Nothing else in the shim writes to the
// program's stderr.
//
// It writes to its own copy of the stderr the process had when nb loaded
// (open_stream), close-on-exec, never to whatever fd 2 is later: a program
// that closes fd 2 and opens a data file there gets nothing of nb's in it.
// Writes never block: on a pipe or a terminal the copy is a new open file
// description in non-blocking mode (the program's own fd 2 keeps its mode);
// what does not fit is dropped and counted (dropped_bytes).
#pragma once
#include <cstdint>
#include <string>

#include "core/options.h"

namespace nb::log {

// Once, in the library's constructor (later calls do nothing; a log used
// before it opens the stream itself).
void open_stream();
void init(LogLevel level);
bool enabled(LogLevel level);
void debug(const std::string& msg);
void info(const std::string& msg);
void warn(const std::string& msg);
void error(const std::string& msg);
// Text printed as it is (the table, the list of files), whatever the level
// unless it is "off".
void print(const std::string& text);
// Bytes of nb's messages that did not fit (a full pipe nobody reads yet).
uint64_t dropped_bytes();

}  // namespace nb::log
