#!/usr/bin/env bash
# hvprof's benchmarks: overhead against the exit floor, the perf kvm peer, per-sample cost,
# throughput, accuracy against the test guest's ground truth, scale; plus every module
# micro-benchmark. Rewrites BENCHMARKS.md (every number in it comes from this run).
#
#   scripts/bench.sh [--quick] [--no-write] [--no-perf]
#     --quick     a smoke run of every section in under 2 minutes (CI: --quick --no-write)
#     --no-write  print the markdown to stdout instead of writing BENCHMARKS.md
#     --no-perf   skip the perf kvm peer (otherwise Debian's linux-perf is installed if missing)
# Build directory: $HVPROF_BUILD_DIR (default build/), built first with scripts/build.sh.
# Numbers never fail this script; a command that fails or prints something unparsable does.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${HVPROF_BUILD_DIR:-$top/build}
args=()
perf=1
for a in "$@"; do
  case "$a" in
    --quick|--no-write) args+=("$a") ;;
    --no-perf) args+=("$a"); perf=0 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

# The peer is a benchmark-only dependency: installed here, not in scripts/deps.sh.
if [ "$perf" = 1 ] && ! command -v perf >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "bench.sh: installing linux-perf for the perf kvm comparison" >&2
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         $SUDO apt-get install -y -qq --no-install-recommends linux-perf >/dev/null; }; then
    echo "bench.sh: linux-perf could not be installed; the perf kvm section is skipped" >&2
    args+=(--no-perf)
  fi
fi

HVPROF_BUILD_DIR=$build bash "$top/scripts/build.sh" >/dev/null
exec python3 "$top/bench/bench.py" --top "$top" --build "$build" \
  --command "bash scripts/bench.sh $*" "${args[@]}"
