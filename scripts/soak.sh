#!/usr/bin/env bash
# Soak: `hvprof record` under each hostile test-guest program for S seconds (default 60), sampling
# the recorder's memory once a second from /proc/PID/status (VmRSS) and /proc/PID/smaps (the
# same minus the guest-RAM mapping, whose pages the guest touches on its own: "host RSS").
# Memory is flat when host RSS stops growing once recording runs: the script prints, per program,
# host RSS at 25 % of the run and at the end, their difference, VmRSS max, the summary's per-sample
# figures, and fails if any growth exceeds HVPROF_SOAK_MAX_GROWTH_KB (default 4096).
#   scripts/soak.sh [seconds] [build-dir]        full length: scripts/soak.sh 60
# CI runs it short (ctest test_hostile_soak: 8 s). Per-second samples: $out/<prog>.rss.csv.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${HVPROF_SOAK_SECONDS:-60}}
build=${2:-${HVPROF_BINARY_DIR:-$top/build}}
hvprof=${HVPROF_EXE:-$build/cli/hvprof}
max_growth=${HVPROF_SOAK_MAX_GROWTH_KB:-4096}
progs=${HVPROF_SOAK_PROGS:-"hostile_fp hostile_kfp hostile_pt hostile_hugestack hostile_fsbase hostile_cpl0 hostile_pio hostile_triple"}
mem_mib=256
out=${HVPROF_SOAK_DIR:-$(mktemp -d /tmp/hvprof-soak.XXXXXX)}
mkdir -p "$out"
[ -x "$hvprof" ] || { echo "soak: no hvprof at $hvprof (build first)"; exit 2; }
[ -r /dev/kvm ] || { echo "soak: no /dev/kvm: skipped"; exit 77; }

# Resident KiB of every mapping smaller than the guest RAM (i.e. everything but guest RAM).
host_rss_kb() {
  awk -v lim=$((mem_mib * 1024)) '
    /^Size:/ { big = $2 >= lim }
    /^Rss:/ { if (!big) sum += $2 }
    END { print sum + 0 }' "/proc/$1/smaps" 2>/dev/null || echo 0
}

fail=0
printf '%-18s %6s %9s %9s %9s %9s %10s %9s %s\n' program status hostkb@25% hostkb@end growthkb \
  vmrss_max us/sample samples verdict
for p in $progs; do
  csv=$out/$p.rss.csv
  echo "t_s,vmrss_kb,host_rss_kb" >"$csv"
  extra=""
  [ "$p" = hostile_cpl0 ] && extra=" cpl0_us=1000000"
  "$hvprof" record -o "$out/$p.fxt" --guest demo --vcpus 2 --mem ${mem_mib}M \
    --console "$out/$p.console" --cmdline "progs=$p seconds=$secs$extra" \
    --timeout $((secs + 60))s 2>"$out/$p.stderr" &
  pid=$!
  t=0
  while kill -0 $pid 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status 2>/dev/null || true)
    [ -n "$rss" ] && echo "$t,$rss,$(host_rss_kb $pid)" >>"$csv"
    sleep 1
    t=$((t + 1))
  done
  status=0
  wait $pid || status=$?
  # Growth is measured from 25 % of the run (boot and first-touch allocations are over by then).
  read -r at25 atend vmax < <(awk -F, -v q=$((secs / 4)) 'NR > 1 {
      if ($1 >= q && a == "") a = $3; last = $3; if ($2 > m) m = $2 }
      END { print (a == "" ? last : a), last, m }' "$csv")
  growth=$((atend - at25))
  us=$(awk '/^  total/ {print $NF}' "$out/$p.stderr")
  samples=$(awk '/^  total/ {print $2 + $3 + $4}' "$out/$p.stderr")
  want=0
  [ "$p" = hostile_triple ] && want=1
  verdict=ok
  if [ "$status" != "$want" ] || [ "$growth" -gt "$max_growth" ] ||
     ! "$hvprof" dump --stats "$out/$p.fxt" >/dev/null 2>"$out/$p.dumperr"; then
    verdict=FAIL
    fail=1
  fi
  printf '%-18s %6s %9s %9s %9s %9s %10s %9s %s\n' "$p" "$status" "$at25" "$atend" "$growth" \
    "$vmax" "${us:-?}" "${samples:-?}" "$verdict"
done
echo "soak: ${secs}s per program; per-second samples in $out"
exit $fail
