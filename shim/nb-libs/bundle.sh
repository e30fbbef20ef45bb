#!/bin/sh
# Copies the build machine's libunwind, libdw and libelf (Debian's packages)
# into nb-libs/ next to libnb_shim.so, which opens them privately at run time
# (core/private_libs.h): machines without those packages, like the H200
# image, still get fast native stacks and source lines. Their other needs
# (liblzma, libz, libbz2, libc) are in every base system.
#
#   bundle.sh OUTDIR SONAME...
set -eu
out=$1
shift
for so in "$@"; do
  src=$(${CC:-cc} -print-file-name="$so")
  case $src in
    /*) ;;
    *) echo "nb-libs: $so not found (install libunwind-dev and libdw-dev: scripts/install-deps.sh)" >&2; exit 1 ;;
  esac
  cp -fL "$src" "$out/$so"
done
