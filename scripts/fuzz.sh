#!/usr/bin/env bash
# Build every libFuzzer target with clang + ASan + UBSan and run each for a bounded time.
# Usage: scripts/fuzz.sh [seconds-per-target]   (default 60; HVPROF_FUZZ_SECONDS overrides)
# A crash, leak or sanitizer report fails the script; each target's execution count is printed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${HVPROF_FUZZ_SECONDS:-60}}
dir=${HVPROF_FUZZ_BUILD_DIR:-$top/build-fuzz}
CC=clang cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHVPROF_FUZZ=ON \
  -DHVPROF_SANITIZE=ON -DHVPROF_BUILD_GUEST=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
# One target: its verdict line into $dir/$target.result (the failure's log tail after it).
run_one() {
  local target=$1 corpus=$2 bin work log execs
  bin=$(find "$dir" -type f -name "$target" -perm -u+x | head -n1)
  work=$(mktemp -d)
  [ -n "$corpus" ] && [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  log="$dir/$target.log"
  if (cd "$dir" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "$work" >"$log" 2>&1); then
    execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "fuzz: $target: ok, ${execs:-?} executions in ${secs}s" >"$dir/$target.result"
  else
    { echo "fuzz: $target: FAILED (see $log)"; tail -n 30 "$log"; } >"$dir/$target.result"
  fi
  rm -rf "$work"
}
# One target per core at a time (each is single-threaded): 27 targets x 30 s take ~7 minutes on
# two cores instead of ~14.
parallel=$(nproc)
targets=()
while IFS=: read -r target corpus; do
  [ -n "$target" ] || continue
  targets+=("$target")
  rm -f "$dir/$target.result"
  run_one "$target" "$corpus" &
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
done <"$dir/fuzzers.txt"
wait
fail=0
for target in "${targets[@]}"; do
  if [ -f "$dir/$target.result" ]; then
    cat "$dir/$target.result"
    grep -q ': ok, ' "$dir/$target.result" || fail=1
  else
    echo "fuzz: $target: FAILED (no result)"; fail=1
  fi
done
exit $fail
