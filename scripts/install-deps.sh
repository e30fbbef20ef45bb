#!/usr/bin/env bash
# Installs what building and testing nb needs on Debian 12 / Ubuntu (root or
# sudo). The CUDA toolkit itself (headers only) is expected at /usr/local/cuda
# or through CUDA_HOME / CUDA_PATH / nvcc on PATH.
set -euo pipefail
packages=(
  build-essential meson ninja-build pkg-config  # build
  libunwind-dev libspdlog-dev libfmt-dev        # linked into the shim (static / header-only)
  libdw-dev                                    # elfutils headers; libdw itself is dlopen'ed to symbolize stacks
  zlib1g-dev                                   # the trace's gzip (libz.a linked into the shim, hidden)
  nlohmann-json3-dev python3                    # nb-stats (header-only JSON); python3 builds nbprof and its man page
  python3-matplotlib                            # nbprof report's picture (the report itself needs python3 only)
  catch2                                        # tests (Catch2 v2 on Debian 12; python3's stdlib reads outputs)
  binutils                                      # nm / readelf for the symbol hygiene test
  python3-pandas python3-plotly python3-networkx python3-pydot python3-psutil  # HTA's, for the test that runs it on nb's rank traces (NB_HTA_SRC)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}"
