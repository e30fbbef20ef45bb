// Interned strings (kernel names) shared between intercepting threads and the
// collector. Interning happens only when a thread meets a function handle it
// has not cached yet, so the mutex is off the steady-state path.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nb {

class NameTable {
 public:
  NameTable() { names_.emplace_back(); }  // id 0 = unknown
  uint32_t intern(std::string_view s);
  std::string get(uint32_t id) const;
  std::vector<std::string> snapshot() const;  // all names, index = id

 private:
  mutable std::mutex mu_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace nb
