#!/usr/bin/env bash
# Run scenarios of the Linux test bed (docs/linux.md "Test bed"): boot the outer VM (L1) under
# QEMU's TCG with emulated AMD SVM, where hvprof runs each scenario against an unmodified Debian
# kernel (L2), and unpack what L1 wrote into OUT/<scenario>/ (rec.fxt, console.log, summary.txt,
# status, time). A scenario missing from OUT did not finish in HVPROF_TB_L1_BOOTS L1 boots.
#
# L1's log of the scenarios is OUT/l1.log; each L1 boot's console OUT/l1-console.N.log.
#
# Usage: run.sh CACHE HVPROF_BINARY SCENARIOS OUT
#   SCENARIOS: one per line, name|command|kernel|vcpus|mem|cmdline|options[|environment]
#              command: run or record (hvprof), or qemu (the reference: QEMU/KVM inside L1
#              booting the same kernel); kernel: generic, cloud, or a suite of the
#              kernel matrix (bullseye, trixie, sid: prepare.sh)
# Env: HVPROF_TB_TIMEOUT  seconds for one L1 boot (default 1200); the scenarios it did not finish
#                         get a fresh L1, as after a reset
#      HVPROF_TB_DEADLINE seconds for all L1 boots together (default 1500): no L1 boot starts
#                         after it, and the last one gets only what is left
#      HVPROF_TB_CPU      QEMU -cpu model of L1 (default EPYC,+svm; append ,+la57 for 5-level)
#      HVPROF_TB_SMP      L1 CPUs (default: the host's, at most 4)
#      HVPROF_TB_TCG_THREAD  multi (default: one host thread per L1 CPU) or single
#      HVPROF_TB_STALL    seconds without a finished scenario before L1 is stopped (default 400)
#      HVPROF_TB_QUIET    seconds without a line on L1's console before L1 is stopped (default
#                         180; L1 prints a line every 60 s while a scenario or the warm-up runs)
#      HVPROF_TB_FAULT_ATTEMPTS  boots of a scenario whose guest triple-faults (default 3; the
#                         64-vCPU test takes 1: there most boots end so, docs/linux.md)
#      HVPROF_TB_L1_BOOTS  L1 boots at most, each for the scenarios the last left (default 10: the
#                         emulated SVM resets L1 now and then, docs/linux.md)
#      HVPROF_TB_WARMUP   a file with one scenario line run once at the start of every L1 boot,
#                         only its sample counts kept (docs/linux.md, "The first run after L1's
#                         boot"); unset: none
#      HVPROF_TB_L0       the QEMU that emulates L1 (docs/linux.md, "The emulator under the test
#                         bed"): trixie (default: Debian trixie's QEMU 10, from the root
#                         prepare.sh keeps in CACHE/l0-trixie) or system (this host's, bookworm's
#                         7.2: half its 2-vCPU boots triple-fault, and 5.10 and 7.x cannot boot)
#      HVPROF_TB_L1_APPEND  L1's kernel command line (default "console=ttyS0 quiet panic=-1
#                         tsc=reliable"; drop quiet to see L1's kernel messages in
#                         l1-console.N.log; tsc=reliable: docs/linux.md, "L1's clock")
set -euo pipefail
cache=$(cd "${1:?usage: run.sh CACHE HVPROF SCENARIOS OUT}" && pwd)
hvprof=${2:?}
scenarios=${3:?}
out=${4:?}
timeout=${HVPROF_TB_TIMEOUT:-1200}
deadline=$(($(date +%s) + ${HVPROF_TB_DEADLINE:-1500}))
cpu=${HVPROF_TB_CPU:-EPYC,+svm}
smp=${HVPROF_TB_SMP:-$(nproc)}
tcg_thread=${HVPROF_TB_TCG_THREAD:-multi}
stall=${HVPROF_TB_STALL:-400}
quiet=${HVPROF_TB_QUIET:-180}
# tsc=reliable: TCG's TSC is one host-time counter for all of L1's CPUs, so it is synchronized,
# but the emulated EPYC does not say invariant and Linux on AMD with several CPUs marks such a
# TSC unstable. KVM in L1 then holds each L2 vCPU's TSC still while its thread is scheduled out
# (kvm_arch_vcpu_load), and L2's watchdog saw its TSC fall behind kvm-clock ("frequency skew").
# A host with an invariant TSC, as servers have, does neither (docs/linux.md, "L1's clock").
l1_append=${HVPROF_TB_L1_APPEND:-console=ttyS0 quiet panic=-1 tsc=reliable}
l1_boots=${HVPROF_TB_L1_BOOTS:-10}
l0=${HVPROF_TB_L0:-trixie}
[ "$smp" -gt 4 ] && smp=4
log() { echo "linux-testbed: $*" >&2; }
here=$(cd "$(dirname "$0")" && pwd)

for f in l1.cpio.gz l2.cpio.gz kernel-generic/vmlinuz kernel-cloud/vmlinuz; do
  [ -s "$cache/$f" ] || { log "$cache/$f missing: run prepare.sh first"; exit 1; }
done
command -v qemu-system-x86_64 >/dev/null || { log "qemu-system-x86_64 not installed"; exit 1; }
case $l0 in
  system) ;;
  trixie)
    [ -x "$cache/l0-trixie/usr/bin/qemu-system-x86_64" ] || {
      log "HVPROF_TB_L0=trixie: $cache/l0-trixie has no QEMU (prepare.sh makes it)"
      exit 1
    } ;;
  *) log "HVPROF_TB_L0=$l0: system or trixie"; exit 1 ;;
esac

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The inputs disk (a plain tar that L1 unpacks at /): hvprof with the libraries ldd lists, at
# the same paths (L1 has no other user space); the guest kernels and initramfs; the reference
# VMM, Debian's QEMU with its libraries and the firmware a PC machine needs.
in=$work/in
mkdir -p "$in/bin" "$in/guest" "$in/qemu/bin" "$in/qemu/lib" "$in/qemu/share"
cp "$hvprof" "$in/bin/hvprof"
for l in $(ldd "$hvprof" | grep -o '/[^ ]*'); do
  mkdir -p "$in$(dirname "$l")"
  cp -L "$l" "$in$l"
done
# Every kernel prepare.sh fetched, by its name (generic, cloud, and the kernel matrix's suites).
for k in "$cache"/kernel-*/vmlinuz; do cp "$k" "$in/guest/vmlinuz-$(basename "$(dirname "$k")" | sed 's/^kernel-//')"; done
cp "$cache/l2.cpio.gz" "$cache/l2-big.cpio.gz" "$cache/root.ext4.gz" "$cache/root.qcow2" "$in/guest/"
# The Debian system disks (debian_disk.sh, ~150-200 MiB each): only for the scenarios that
# boot them.
for sys in debian12 debian13; do
  if grep -q -e "/guest/$sys.qcow2" -e "|qemu-disk|$sys|" "$scenarios" && [ -f "$cache/$sys.qcow2" ]; then
    cp "$cache/$sys.qcow2" "$in/guest/"
  fi
  # Its boot entry's kernel, initrd and command line, for QEMU/KVM's boot of it (qemu-disk).
  if grep -q "|qemu-disk|$sys|" "$scenarios" && [ -f "$cache/$sys.vmlinuz" ]; then
    cp "$cache/$sys.vmlinuz" "$cache/$sys.initrd" "$cache/$sys.cmdline" "$in/guest/"
  fi
done
# e2fsck for the disk scenarios' images after their runs (docs/virtio.md), qemu-img for their
# qcow2 image; hvtest_kick, built
# beside hvprof, for the reference VMM under hvprof's load (kick.c).
kick=$(dirname "$hvprof")/../tests/linux/hvtest_kick
# qemu-img: hvprof has QEMU check a qcow2 image before it reads it (vmm/qcow/qcow_image.h).
for t in e2fsck qemu-img "$kick"; do
  [ -x "$t" ] || command -v "$t" >/dev/null || continue
  p=$(command -v "$t")
  cp "$p" "$in/bin/$(basename "$p")"
  for l in $(ldd "$p" | grep -o '/[^ ]*'); do
    mkdir -p "$in$(dirname "$l")"
    cp -L "$l" "$in$l"
  done
done
# The guest's binaries, for scenarios that give hvprof `--symbols /guest/files` (docs/cfi.md).
if [ -d "$cache/guest-files" ]; then cp -r "$cache/guest-files" "$in/guest/files"; fi
cp /usr/bin/qemu-system-x86_64 "$in/qemu/bin/"
for l in $(ldd /usr/bin/qemu-system-x86_64 | grep -o '/[^ ]*'); do cp -L "$l" "$in/qemu/lib/"; done
cp /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
  /usr/share/qemu/kvmvapic.bin "$in/qemu/share/" 2>/dev/null || true
slot_mb=128
echo "$slot_mb" >"$in/slot_mb"
echo "${HVPROF_TB_FAULT_ATTEMPTS:-3}" >"$in/fault_attempts"
if [ -n "${HVPROF_TB_WARMUP:-}" ]; then cp "$HVPROF_TB_WARMUP" "$in/warmup"; fi

# One L1 boot for the scenarios in file $1; results unpacked into $out. Returns QEMU's status.
boot_l1() {
  local list=$1 attempt=$2 nslots rc limit
  limit=$((deadline - $(date +%s)))
  [ "$limit" -gt "$timeout" ] && limit=$timeout
  cp "$list" "$in/scenarios"
  tar cf "$work/in.tar" -C "$in" .
  nslots=$(($(grep -cv '^\s*\(#\|$\)' "$list") + 1))
  rm -f "$work/out.img"
  truncate -s $((nslots * slot_mb))M "$work/out.img"
  log "L1 boot $attempt: $(($nslots - 1)) scenario(s), $l0 QEMU, -cpu $cpu -smp $smp, timeout ${limit}s"
  local start console=$out/l1-console.$attempt.log qemu=(qemu-system-x86_64)
  [ "$l0" = system ] || qemu=(bash "$here/qemu_chroot.sh" "$cache/l0-$l0" "$cache" "$work" "$out" --)
  start=$(date +%s)
  : >"$console"
  timeout --kill-after=10 "$limit" "${qemu[@]}" -accel "tcg,thread=$tcg_thread" -cpu "$cpu" \
    -smp "$smp" -m 3G -display none -no-reboot -serial "file:$console" \
    -kernel "$cache/kernel-generic/vmlinuz" -initrd "$cache/l1.cpio.gz" \
    -append "$l1_append" \
    -drive "file=$work/in.tar,if=virtio,format=raw,readonly=on" \
    -drive "file=$work/out.img,if=virtio,format=raw" 2>"$out/qemu.$attempt.log" &
  local qpid=$! done_before=-1 last_progress=$start size_before=-1 last_output=$start
  # L1 can wedge below user space (a soft lockup in its KVM, docs/linux.md): then nothing in it
  # runs, hvprof's own timeouts included. Watch its console: a soft-lockup report, no line for
  # $quiet seconds (its user space prints one every 60 s while a scenario runs), or no
  # scenario finishing for $stall seconds, kills it; the scenarios left get a fresh L1.
  while kill -0 "$qpid" 2>/dev/null; do
    sleep 2
    local now done_now size_now
    now=$(date +%s)
    done_now=$(grep -c '^L1: scenario .* exit ' "$console" 2>/dev/null || true)
    if [ "$done_now" != "$done_before" ]; then
      done_before=$done_now
      last_progress=$now
    fi
    size_now=$(stat -c %s "$console" 2>/dev/null || echo 0)
    if [ "$size_now" != "$size_before" ]; then
      size_before=$size_now
      last_output=$now
    fi
    if grep -q 'soft lockup' "$console" 2>/dev/null; then
      log "L1 boot $attempt: L1's kernel reports a soft lockup: stopping it"
      echo "L1 boot $attempt wedged: $(grep -m1 'soft lockup' "$console" | sed 's/^\[[ 0-9.]*\] //')" >>"$out/l1.log"
      kill "$qpid" 2>/dev/null
      break
    elif [ $((now - last_output)) -ge "$quiet" ]; then
      log "L1 boot $attempt: no line on L1's console for ${quiet}s: stopping it"
      echo "L1 boot $attempt went quiet: no line on its console for ${quiet}s" >>"$out/l1.log"
      kill "$qpid" 2>/dev/null
      break
    elif [ $((now - last_progress)) -ge "$stall" ]; then
      log "L1 boot $attempt: no scenario finished for ${stall}s: stopping it"
      echo "L1 boot $attempt stalled: no scenario finished for ${stall}s" >>"$out/l1.log"
      kill "$qpid" 2>/dev/null
      break
    fi
  done
  set +e
  wait "$qpid"
  rc=$?
  set -e
  # Killed by the watchdog above (143), or at the boot's timeout (124: scenarios finishing, but
  # slowly; one CI run's 64-vCPU boots took 1200 s for four): not a QEMU failure, the
  # scenarios left are retried while the deadline allows.
  if [ "$rc" -eq 124 ]; then
    echo "L1 boot $attempt reached its timeout (${limit}s)" >>"$out/l1.log"
    log "L1 boot $attempt: reached its timeout (${limit}s): the scenarios left get a fresh L1"
  fi
  if [ "$rc" -eq 143 ] || [ "$rc" -eq 124 ]; then rc=0; fi
  log "L1 boot $attempt: QEMU exited with $rc after $(($(date +%s) - start))s"
  for k in $(seq 0 $((nslots - 1))); do
    dd if="$work/out.img" bs=1M skip=$((k * slot_mb)) count=$slot_mb 2>/dev/null |
      tar x -C "$out" 2>/dev/null || true
  done
  if [ -f "$out/l1/l1.txt" ]; then
    cat "$out/l1/l1.txt" >>"$out/l1.log"
    grep -e '^L1: warm-up' -e '^L1: clock' "$out/l1/l1.txt" | sed "s/^L1: /L1 boot $attempt: /" |
      while IFS= read -r l; do log "$l"; done
  fi
  rm -rf "$out/l1"
  return $rc
}

# An emulated machine can reset under the load of nested virtualization (docs/linux.md, "The
# triple fault"): L1 then dies with no message, in the middle of a scenario. The scenarios that
# did not finish get a fresh L1, $l1_boots boots in all; one that kills L1 every time stays
# missing, and its test says so.
todo=$work/todo
grep -v '^\s*\(#\|$\)' "$scenarios" >"$todo"
: >"$out/l1.log"
rc=0
for attempt in $(seq 1 "$l1_boots"); do
  boot_l1 "$todo" "$attempt" || rc=$?
  left=$work/left
  : >"$left"
  while IFS= read -r line; do
    [ -f "$out/${line%%|*}/status" ] || echo "$line" >>"$left"
  done <"$todo"
  [ -s "$left" ] || break
  first=$(head -n 1 "$left" | cut -d'|' -f1)
  log "L1 boot $attempt did not finish $(wc -l <"$left") scenario(s), first $first"
  echo "L1 boot $attempt died in $first" >>"$out/l1.log"
  # A scenario that took L1 down twice goes to the end of the list: the others run first
  # rather than wait behind it for the boots that are left.
  if [ "$(grep -c "died in $first\$" "$out/l1.log")" -ge 2 ] && [ "$(wc -l <"$left")" -gt 1 ]; then
    { tail -n +2 "$left"; head -n 1 "$left"; } >"$todo"
  else
    mv "$left" "$todo"
  fi
  [ "$rc" -eq 0 ] || break # QEMU itself failed: no point in trying again
  if [ $((deadline - $(date +%s))) -lt 60 ]; then
    log "the test bed's deadline (HVPROF_TB_DEADLINE) is reached: $(wc -l <"$todo") scenario(s) left unrun"
    echo "deadline reached with $(wc -l <"$todo") scenario(s) left" >>"$out/l1.log"
    break
  fi
done
[ "$rc" -eq 0 ] || { log "QEMU failed (see $out/qemu.*.log and $out/l1-console.*.log)"; exit 1; }
exit 0
