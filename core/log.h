// The shim's voice on stderr: spdlog underneath (compiled in, private), one
// "nb: " prefix, level from NB_LOG. Nothing else in the shim writes to the
// program's stderr.
#pragma once
#include <string>

#include "core/options.h"

namespace nb::log {

void init(LogLevel level);
bool enabled(LogLevel level);
void debug(const std::string& msg);
void info(const std::string& msg);
void warn(const std::string& msg);
void error(const std::string& msg);
// Text printed as it is (the table, the list of files), whatever the level
// unless it is "off".
void print(const std::string& text);

}  // namespace nb::log
