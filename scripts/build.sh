#!/usr/bin/env bash
# Configure and build hvprof into build/ (or $HVPROF_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${HVPROF_BUILD_DIR:-$top/build}
cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHVPROF_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
