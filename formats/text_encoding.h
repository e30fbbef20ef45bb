// Encoding of arbitrary bytes for the two output formats. Names come from
// programs we do not control (kernel names, thread names, file names), so
// they may hold quotes, control characters or bytes that are not UTF-8; both
// JSON and pickle need valid UTF-8, and a single bad byte would make a whole
// trace unloadable. Invalid sequences become U+FFFD.
#pragma once
#include <string>
#include <string_view>

namespace nb::formats {

// Appends `in` as the inside of a JSON string literal (no surrounding quotes).
void append_json_escaped(std::string& out, std::string_view in);

// Appends `in` as valid UTF-8 (invalid sequences and surrogates → U+FFFD).
void append_valid_utf8(std::string& out, std::string_view in);

// Length of the valid UTF-8 sequence starting at in[i], or 0 if the bytes
// there are not a valid, shortest-form encoding of a scalar value.
size_t utf8_sequence_length(std::string_view in, size_t i);

}  // namespace nb::formats
