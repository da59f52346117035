#!/usr/bin/env bash
# The consumer tests' recording (docs/report.md, "Checked with"): the demo guest recorded by
# the real `hvprof record` at 2 vCPUs and 1 kHz, then every report format written from it with
# the guest's binaries as symbol files. Usage: record.sh HVPROF GUEST_BUILD_DIR OUT
set -euo pipefail
hvprof=${1:?usage: record.sh HVPROF GUEST_BUILD_DIR OUT}
guest=${2:?}
out=${3:?}
rm -rf "$out/report"
mkdir -p "$out/report"
"$hvprof" record --guest demo --vcpus 2 --hz 1000 --duration 3 --quiet -o "$out/demo.fxt"
# Every function in the table (--limit): the pprof test compares each one's self samples.
"$hvprof" report "$out/demo.fxt" --symbols "$guest/progs" --vmlinux "$guest/hvprof-guest.elf" \
  --limit 1000000 --format all -o "$out/report"
for f in top.txt stacks.folded profile.pb.gz perf-script.txt flamegraph.svg timeline.fxt; do
  [ -s "$out/report/$f" ] || { echo "record.sh: $out/report/$f missing or empty" >&2; exit 1; }
done
