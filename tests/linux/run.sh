#!/usr/bin/env bash
# Run scenarios of the Linux test bed (docs/linux.md "Test bed"): boot the outer VM (L1) under
# QEMU's TCG with emulated AMD SVM, where hvprof runs each scenario against an unmodified Debian
# kernel (L2), and unpack what L1 wrote into OUT/<scenario>/ (rec.fxt, console.log, summary.txt,
# status, time) plus OUT/l1/ (l1.txt: L1's log of the scenarios, dmesg.txt) and
# OUT/l1-console.log. A scenario that is missing from OUT did not finish (L1 died in it).
#
# Usage: run.sh CACHE HVPROF_BINARY SCENARIOS OUT
#   SCENARIOS: one per line, name|command|kernel|vcpus|mem|cmdline|options
#              command: run or record (hvprof), or qemu (the reference: QEMU/KVM inside L1
#              booting the same kernel); kernel: generic or cloud
# Env: HVPROF_TB_TIMEOUT  seconds for the whole L1 run (default 1200)
#      HVPROF_TB_CPU      QEMU -cpu model of L1 (default EPYC,+svm; append ,+la57 for 5-level)
#      HVPROF_TB_SMP      L1 CPUs (default: the host's, at most 4)
set -euo pipefail
cache=$(cd "${1:?usage: run.sh CACHE HVPROF SCENARIOS OUT}" && pwd)
hvprof=${2:?}
scenarios=${3:?}
out=${4:?}
timeout=${HVPROF_TB_TIMEOUT:-1200}
cpu=${HVPROF_TB_CPU:-EPYC,+svm}
smp=${HVPROF_TB_SMP:-$(nproc)}
[ "$smp" -gt 4 ] && smp=4
log() { echo "linux-testbed: $*" >&2; }

for f in l1.cpio.gz l2.cpio.gz kernel-generic/vmlinuz kernel-cloud/vmlinuz; do
  [ -s "$cache/$f" ] || { log "$cache/$f missing: run prepare.sh first"; exit 1; }
done
command -v qemu-system-x86_64 >/dev/null || { log "qemu-system-x86_64 not installed"; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Inputs disk: a plain tar that L1 unpacks at /. hvprof comes with the libraries ldd lists, at
# the same paths (L1 has no other user space).
in=$work/in
mkdir -p "$in/bin" "$in/guest"
cp "$hvprof" "$in/bin/hvprof"
for l in $(ldd "$hvprof" | grep -o '/[^ ]*'); do
  mkdir -p "$in$(dirname "$l")"
  cp -L "$l" "$in$l"
done
cp "$cache/kernel-generic/vmlinuz" "$in/guest/vmlinuz-generic"
cp "$cache/kernel-cloud/vmlinuz" "$in/guest/vmlinuz-cloud"
cp "$cache/l2.cpio.gz" "$in/guest/l2.cpio.gz"
cp "$scenarios" "$in/scenarios"
# The reference VMM: Debian's QEMU with its libraries and the firmware a PC machine needs.
mkdir -p "$in/qemu/bin" "$in/qemu/lib" "$in/qemu/share"
cp /usr/bin/qemu-system-x86_64 "$in/qemu/bin/"
for l in $(ldd /usr/bin/qemu-system-x86_64 | grep -o '/[^ ]*'); do cp -L "$l" "$in/qemu/lib/"; done
cp /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
  /usr/share/qemu/kvmvapic.bin "$in/qemu/share/" 2>/dev/null || true
slot_mb=128
echo "$slot_mb" >"$in/slot_mb"
tar cf "$work/in.tar" -C "$in" .
nslots=$(($(grep -cv '^\s*\(#\|$\)' "$scenarios") + 1))
truncate -s $((nslots * slot_mb))M "$work/out.img"

log "L1: $(grep -cv '^\s*\(#\|$\)' "$scenarios") scenario(s), -cpu $cpu -smp $smp, timeout ${timeout}s"
start=$(date +%s)
set +e
timeout --kill-after=10 "$timeout" qemu-system-x86_64 -accel tcg,thread=multi -cpu "$cpu" \
  -smp "$smp" -m 3G -display none -no-reboot -serial "file:$out/l1-console.log" \
  -kernel "$cache/kernel-generic/vmlinuz" -initrd "$cache/l1.cpio.gz" \
  -append "console=ttyS0 quiet panic=-1" \
  -drive "file=$work/in.tar,if=virtio,format=raw,readonly=on" \
  -drive "file=$work/out.img,if=virtio,format=raw" 2>"$out/qemu.log"
rc=$?
set -e
log "L1: QEMU exited with $rc after $(($(date +%s) - start))s"

for k in $(seq 0 $((nslots - 1))); do
  dd if="$work/out.img" bs=1M skip=$((k * slot_mb)) count=$slot_mb 2>/dev/null |
    tar x -C "$out" 2>/dev/null || true
done
[ -f "$out/l1/l1.txt" ] || { log "no results from L1 (see $out/l1-console.log)"; exit 1; }
grep -q '^L1: done' "$out/l1/l1.txt" ||
  log "L1 did not finish: it died in the scenario after the last one in $out/l1/l1.txt"
[ "$rc" -eq 0 ] || { log "QEMU failed or timed out (see $out/l1-console.log)"; exit 1; }
exit 0
