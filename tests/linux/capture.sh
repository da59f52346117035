#!/usr/bin/env bash
# Capture test data from real Debian guests on the test bed (docs/linux-introspection.md,
# "Captured guests"): each guest kernel boots under `hvprof-capture record` (tests/tools/capture:
# hvprof record with a capture at its end; HVPROF_CAPTURE_GUEST names the file), runs the work
# plan and reboots; the tool keeps the pages of guest memory the Linux layer reads.
# Writes guestos/tests/data/<release>.capture.gz and <release>.expected (the guest's own account
# of itself from its console: release, kernel and module symbols; and the capture's log).
#
# Usage: capture.sh BUILD_DIR [KERNEL...]   (after the linux_prepare fixture filled
#        BUILD_DIR/linux-testbed; KERNEL: generic, cloud (the default: both) or a suite of the
#        kernel matrix, which needs HVPROF_TB_L0=trixie: `HVPROF_TB_L0=trixie capture.sh build
#        bullseye`)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: capture.sh BUILD_DIR [KERNEL...]}" && pwd)
shift
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(generic cloud)
cache=$build/linux-testbed
out=$build/linux-runs/capture
data=$src/guestos/tests/data
mkdir -p "$data"
rm -rf "$out"
scen=$(mktemp)
trap 'rm -f "$scen"' EXIT
for k in "${kernels[@]}"; do
  echo "capture-$k|record|$k|1|256M|console=ttyS0 reboot=k panic=-1 pci=off hvtest.plan=work hvtest.ms=500 hvtest.stacks=1||HVPROF_CAPTURE_GUEST=/out/capture-$k/capture.bin" >>"$scen"
done
# hvprof-capture (tests/tools/capture): hvprof record with the capture at its end.
bash "$here/run.sh" "$cache" "$build/cli/hvprof-capture" "$scen" "$out"
for k in "${kernels[@]}"; do
  d=$out/capture-$k
  [ -s "$d/capture.bin" ] || { echo "capture-$k: no capture (see $d/summary.txt)" >&2; exit 1; }
  rel=$(cat "$cache/kernel-$k/release")
  gzip -9 -c "$d/capture.bin" >"$data/$rel.capture.gz"
  {
    echo "# The guest's own account (HVTEST lines of its console) and what the capture read."
    echo "# Captured by tests/linux/capture.sh from $(cat "$cache/kernel-$k/package")."
    grep -a -o 'HVTEST \(userspace\|ksym\|kmod\|kmodsym\|kstack\|kframe\|kstate\|ksyscall\|file\) .*' "$d/console.log" | tr -d '\r'
    grep '^capture:' "$d/summary.txt"
  } >"$data/$rel.expected"
  echo "$rel: $(du -h "$data/$rel.capture.gz" | cut -f1) capture, $(grep -c 'HVTEST' "$data/$rel.expected") guest lines"
done
