#include "core/name_table.h"

namespace nb {

uint32_t NameTable::intern(std::string_view s) {
  if (s.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(std::string(s));
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  ids_.emplace(names_.back(), id);
  return id;
}

std::string NameTable::get(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id < names_.size() ? names_[id] : std::string();
}

std::vector<std::string> NameTable::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_;
}

}  // namespace nb
