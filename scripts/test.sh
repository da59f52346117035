#!/usr/bin/env bash
# The whole hvprof test suite, as CI runs it (.ci/run calls this):
#   1. install missing Debian packages, build, run every ctest test (unit + integration),
#   2. the Linux test bed (label linux, docs/linux.md "Test bed"): Debian's kernels booted by
#      hvprof under nested virtualization, CI's matrix (scripts/test-linux-full.sh runs the full
#      one), ~20 minutes; needs root and Debian's mirror. HVPROF_LINUX=0 skips it (and says so),
#   3. the suite again under ASan + UBSan (without the Linux stage),
#   4. every libFuzzer target for a bounded time (HVPROF_FUZZ_SECONDS, default 30),
#   5. the benchmark script in --quick mode (it measures, it never fails on a number).
# Set HVPROF_QUICK=1 to run only steps 1 and 2.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
start=$(date +%s)
jobs=$(nproc)

bash scripts/deps.sh

echo "== build + test (RelWithDebInfo)"
HVPROF_BUILD_DIR=$top/build bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$jobs" -LE linux

if [ "${HVPROF_LINUX:-1}" = 0 ]; then
  echo "== Linux test bed: SKIPPED (HVPROF_LINUX=0)"
else
  echo "== Linux test bed (nested virtualization, docs/linux.md)"
  # CI's matrix (docs/linux.md): the 64-vCPU test (label linux_full) is in the full one only.
  ctest --test-dir build --output-on-failure -L linux -LE linux_full
fi

if [ "${HVPROF_QUICK:-0}" != 1 ]; then
  echo "== build + test under ASan + UBSan"
  HVPROF_BUILD_DIR=$top/build-asan bash scripts/build.sh -DHVPROF_SANITIZE=ON
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "linux|slow"

  echo "== fuzzing"
  bash scripts/fuzz.sh "${HVPROF_FUZZ_SECONDS:-30}"

  if [ -x scripts/bench.sh ]; then
    echo "== benchmarks (--quick; numbers only, never a failure)"
    bash scripts/bench.sh --quick --no-write || echo "bench: quick run failed (not a test failure)"
  fi
fi
echo "test.sh: done in $(( $(date +%s) - start ))s"
