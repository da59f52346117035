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
for f in top.txt stacks.folded profile.pb.gz perf-script.txt flamegraph.svg timeline.fxt profile.json; do
  [ -s "$out/report/$f" ] || { echo "record.sh: $out/report/$f missing or empty" >&2; exit 1; }
done
# A base to compare with (hvprof diff; pprof -diff_base): the workload program alone.
"$hvprof" record --guest demo --vcpus 2 --hz 1000 --duration 2 --quiet -o "$out/base.fxt" \
  --cmdline 'progs=workload seconds=10'
rm -rf "$out/report-base"
"$hvprof" report "$out/base.fxt" --symbols "$guest/progs" --vmlinux "$guest/hvprof-guest.elf" \
  --limit 1000000 --format all -o "$out/report-base"
"$hvprof" diff "$out/base.fxt" "$out/demo.fxt" --symbols "$guest/progs" \
  --vmlinux "$guest/hvprof-guest.elf" --limit 1000000 --format all -o "$out/report/diff"
for f in report-base/top.txt report/diff/diff.txt report/diff/diff.folded report/diff/diff.svg \
  report/diff/diff.json report/diff/diff-tree.txt report/diff/base.pb.gz report/diff/new.pb.gz; do
  [ -s "$out/$f" ] || { echo "record.sh: $out/$f missing or empty" >&2; exit 1; }
done
