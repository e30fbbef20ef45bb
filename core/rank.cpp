#include "core/rank.h"

#include <unistd.h>

#include <climits>

namespace nb {

namespace {

// A non-negative decimal integer, or -1.
int64_t read_int(const EnvLookup& lookup, const char* name) {
  const char* v = name ? lookup(name) : nullptr;
  uint64_t out = 0;
  if (v == nullptr || !parse_uint(v, 0, INT64_MAX, out)) return -1;
  return static_cast<int64_t>(out);
}

struct Family {
  const char* source;
  const char* rank;
  const char* local_rank;
  const char* world_size;
  const char* local_world_size;
  const char* node;
};

constexpr Family kFamilies[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_SIZE", nullptr},
    {"PMI", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "MPI_LOCALNRANKS", nullptr},
    {"Slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "SLURM_NODEID"},
};

}  // namespace

RankInfo read_rank(const EnvLookup& lookup, const OptionalUInt& nb_rank) {
  RankInfo r;
  for (const Family& f : kFamilies) {
    const int64_t rank = read_int(lookup, f.rank);
    if (rank < 0) continue;
    r.rank = rank;
    r.local_rank = read_int(lookup, f.local_rank);
    r.world_size = read_int(lookup, f.world_size);
    r.local_world_size = read_int(lookup, f.local_world_size);
    r.node = read_int(lookup, f.node);
    r.source = f.source;
    break;
  }
  if (nb_rank.set) {
    r.rank = static_cast<int64_t>(nb_rank.value);
    r.source = "NB_RANK";
  }
  return r;
}

std::string short_host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string out;
  for (const char* p = buf; *p && *p != '.'; ++p) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? "host" : out;
}

}  // namespace nb
