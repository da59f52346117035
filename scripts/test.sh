#!/usr/bin/env bash
# The whole hvprof test suite, as CI runs it (.ci/run calls this):
#   1. install missing Debian packages, build, run every ctest test (unit + integration),
#   2. the Linux test bed (label linux, docs/linux.md "Test bed"): Debian's kernels booted by
#      hvprof under nested virtualization, CI's matrix (scripts/test-linux-full.sh runs the full
#      one), ~20 minutes; needs root and Debian's mirror. HVPROF_LINUX=0 skips it (and says so),
#   3. the suite again under ASan + UBSan (without the Linux stage),
#   4. every libFuzzer target for a bounded time (HVPROF_FUZZ_SECONDS, default 10: the
#      corpus replayed and a short search; scripts/fuzz.sh N for a real campaign),
#   5. the benchmark script in --quick mode (it measures, it never fails on a number).
# Set HVPROF_QUICK=1 to run only steps 1 and 2.
#
# The tests that boot a guest (label kvm) need /dev/kvm. On a host without one they run inside
# the test bed's outer VM, on this file system (tests/linux/nested.sh: QEMU's TCG emulating AMD
# SVM gives L1 a KVM of its own; docs/testing.md, "Without /dev/kvm"), then the rest on the host.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
start=$(date +%s)
jobs=$(nproc)

bash scripts/deps.sh

host_kvm=1
if ! [ -c /dev/kvm ] || ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
  host_kvm=0
  echo "== this host has no /dev/kvm: the tests that boot a guest (label kvm) run under nested virtualization"
fi

# suite DIR EXCLUDED: ctest over the tests of one build but those whose labels match EXCLUDED,
# those with label kvm under nested virtualization where this host has no /dev/kvm. The
# consumers' recording (label kvm) is then made in L1, and the consumers that read it run here
# (-FS: not set up again).
suite() {
  local dir=$1 excluded=$2 rc=0
  if [ "$host_kvm" = 1 ]; then
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" -LE "$excluded"
    return
  fi
  bash tests/linux/nested.sh build/linux-testbed \
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L kvm -LE "$excluded" || rc=$?
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" -LE "kvm|$excluded" -FS '^consumers$' || rc=$?
  return "$rc"
}

echo "== build + test (RelWithDebInfo)"
HVPROF_BUILD_DIR=$top/build bash scripts/build.sh
if [ "$host_kvm" = 0 ]; then
  # L1's kernel and initramfs (the Linux stage's prepare.sh keeps them).
  bash tests/linux/prepare.sh --l1-only build/linux-testbed
fi
suite build linux

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
    suite build-asan "linux|slow"

  echo "== fuzzing"
  bash scripts/fuzz.sh "${HVPROF_FUZZ_SECONDS:-10}"

  if [ "$host_kvm" = 0 ]; then
    echo "== benchmarks: not run (no /dev/kvm here; under nested emulation their times would not be this host's)"
  elif [ -x scripts/bench.sh ]; then
    echo "== benchmarks (--quick; numbers only, never a failure)"
    bash scripts/bench.sh --quick --no-write || echo "bench: quick run failed (not a test failure)"
  fi
fi
echo "test.sh: done in $(( $(date +%s) - start ))s"
