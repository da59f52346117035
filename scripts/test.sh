#!/usr/bin/env bash
# The whole hvprof test suite, as CI runs it (.ci/run calls this):
#   1. install missing Debian packages, build, run every ctest test (unit + integration), then
#      the Linux boot smoke test (label linux-smoke, docs/linux.md) when CI is set or
#      HVPROF_LINUX_SMOKE=1,
#   2. the same suite again under ASan + UBSan,
#   3. every libFuzzer target for a bounded time (HVPROF_FUZZ_SECONDS, default 45),
#   4. the benchmark script in --quick mode (it measures, it never fails on a number).
# Set HVPROF_QUICK=1 to run only step 1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
start=$(date +%s)
jobs=$(nproc)

bash scripts/deps.sh

# The Linux boot smoke test (docs/linux.md) takes 1.5-4 minutes on PVM: CI runs it as its own step.
exclude='linux-smoke'
smoke=${HVPROF_LINUX_SMOKE:-0}
[ -n "${CI:-}" ] && smoke=${HVPROF_LINUX_SMOKE:-1}

echo "== build + test (RelWithDebInfo)"
HVPROF_BUILD_DIR=$top/build bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$jobs" -LE "$exclude"

if [ "$smoke" = 1 ]; then
  echo "== Linux boot smoke test"
  HVPROF_SMOKE_TIMEOUT=${HVPROF_SMOKE_TIMEOUT:-600} \
    ctest --test-dir build --output-on-failure -L linux-smoke
fi

if [ "${HVPROF_QUICK:-0}" != 1 ]; then
  echo "== build + test under ASan + UBSan"
  HVPROF_BUILD_DIR=$top/build-asan bash scripts/build.sh -DHVPROF_SANITIZE=ON
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "$exclude|slow"

  echo "== fuzzing"
  bash scripts/fuzz.sh "${HVPROF_FUZZ_SECONDS:-45}"

  if [ -x scripts/bench.sh ]; then
    echo "== benchmarks (--quick; numbers only, never a failure)"
    bash scripts/bench.sh --quick --no-write || echo "bench: quick run failed (not a test failure)"
  fi
fi
echo "test.sh: done in $(( $(date +%s) - start ))s"
