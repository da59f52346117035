#!/usr/bin/env bash
# The Linux test bed's full matrix (docs/linux.md, "CI's matrix and the full one"): every
# scenario of every Linux test, with its repeats, where CI runs each of a smaller set once.
# Builds like scripts/test.sh and runs only the Linux stage; 33 minutes on two cores the last time
# it was measured (docs/linux.md, "Times"), more when the outer VM dies.
# Needs root and Debian's mirror, as the test bed always does. Extra arguments go to ctest
# (e.g. -R test_linux_boot).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/deps.sh
HVPROF_BUILD_DIR=$top/build bash scripts/build.sh
HVPROF_TB_FULL=1 ctest --test-dir build --output-on-failure -L linux "$@"
