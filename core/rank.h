// Which rank of a distributed job this process is, as its launcher says
// (torchrun, Open MPI, MPICH/PMI, Slurm), read once at load from the
// environment: it names the files (%r, %l, the default prefix) and goes into
// the trace as Kineto's "distributedInfo", so that HTA reads a directory of
// per-rank traces as one job.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/options.h"

namespace nb {

struct RankInfo {
  int64_t rank = -1;              // -1: not launched as a rank
  int64_t local_rank = -1;        // on this host
  int64_t world_size = -1;
  int64_t local_world_size = -1;  // ranks on this host
  int64_t node = -1;              // this host's index in the job
  std::string source;             // the launcher whose variables gave the rank, or "NB_RANK"
  bool known() const { return rank >= 0; }
};

// The launchers, first match wins: torchrun (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK), Open MPI (OMPI_COMM_WORLD_*), MPICH/PMI
// (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID), Slurm (SLURM_PROCID, SLURM_LOCALID,
// SLURM_NTASKS, SLURM_NODEID). The most specific first: torchrun and mpirun
// run inside a Slurm allocation, where the SLURM_* variables describe the
// task that started them, not the worker. A family counts only when its
// rank variable is an integer. `nb_rank` (NB_RANK) overrides the rank.
RankInfo read_rank(const EnvLookup& lookup, const OptionalUInt& nb_rank);

// This host's name up to its first '.', made safe for a file name.
std::string short_host_name();

}  // namespace nb
