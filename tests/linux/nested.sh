#!/usr/bin/env bash
# Run a command where there is a /dev/kvm, on a machine that has none (docs/testing.md,
# "Without /dev/kvm"): inside the test bed's outer VM (L1: QEMU's TCG emulating AMD SVM, and
# L1's own KVM on it, docs/linux.md), on this machine's own file system shared into L1 with
# virtio-9p, as root, in the current directory. The command's output is printed as it comes;
# nested.sh exits with the command's status (125: L1 did not run it to the end).
#
# Usage: nested.sh CACHE COMMAND [ARGUMENT...]
#   CACHE: the test bed's cache (prepare.sh: L1's kernel and initramfs)
# Env: HVPROF_NESTED_TIMEOUT  seconds for the whole L1 run (default 2400)
#      HVPROF_NESTED_MEM      L1's memory (default 8G)
#      HVPROF_TB_L0           trixie (default: Debian trixie's QEMU 10, as run.sh) or system
#      HVPROF_TB_SMP          L1's CPUs (default: the host's, at most 4)
set -euo pipefail
cache=$(cd "${1:?usage: nested.sh CACHE COMMAND [ARGUMENT...]}" && pwd)
shift
[ $# -gt 0 ] || { echo "usage: nested.sh CACHE COMMAND [ARGUMENT...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
timeout=${HVPROF_NESTED_TIMEOUT:-2400}
mem=${HVPROF_NESTED_MEM:-8G}
l0=${HVPROF_TB_L0:-trixie}
smp=${HVPROF_TB_SMP:-$(nproc)}
[ "$smp" -gt 4 ] && smp=4
log() { echo "nested: $*" >&2; }

for f in l1.cpio.gz kernel-generic/vmlinuz; do
  [ -s "$cache/$f" ] || { log "$cache/$f missing: run prepare.sh first"; exit 125; }
done
[ "$(id -u)" -eq 0 ] || { log "needs root (L1 runs the command as root on this file system)"; exit 125; }

# The folder L1 reads the command from and writes its log and status to; not under /tmp,
# which L1 replaces with a tmpfs of its own.
job=$(mktemp -d "$cache/nested.XXXXXX")
trap 'rm -rf "$job"' EXIT
{
  echo "cd $(printf %q "$PWD") || exit 125"
  # What the caller exported that says how to test (HVPROF_*, the sanitizers' options).
  while IFS= read -r kv; do
    case $kv in
      HVPROF_NESTED*) ;;
      HVPROF_*=* | ASAN_OPTIONS=* | UBSAN_OPTIONS=* | LSAN_OPTIONS=* | CTEST_*=*)
        printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}" ;;
    esac
  done < <(env)
  printf 'exec'
  printf ' %q' "$@"
  echo
} >"$job/command"
: >"$job/log"

qemu=(qemu-system-x86_64)
case $l0 in
  system) ;;
  trixie) qemu=(bash "$here/qemu_chroot.sh" --root-at /host "$cache/l0-trixie" "$cache" --) ;;
  *) log "HVPROF_TB_L0=$l0: system or trixie"; exit 125 ;;
esac
share=/
[ "$l0" = system ] || share=/host
log "L1 ($l0 QEMU, -smp $smp -m $mem) runs: $*"
start=$(date +%s)
set +e
timeout --kill-after=10 "$timeout" "${qemu[@]}" -accel tcg,thread=multi -cpu EPYC,+svm \
  -smp "$smp" -m "$mem" -display none -no-reboot -serial "file:$job/console" \
  -kernel "$cache/kernel-generic/vmlinuz" -initrd "$cache/l1.cpio.gz" \
  -append "console=ttyS0 quiet panic=-1 tsc=reliable hvtest.nested=$job" \
  -virtfs "local,path=$share,mount_tag=hostroot,security_model=passthrough,multidevs=remap,id=hostroot" \
  2>"$job/qemu.log" &
qpid=$!
tail -n +1 -f --pid="$qpid" "$job/log" &
tpid=$!
wait "$qpid"
rc=$?
wait "$tpid" 2>/dev/null
set -e
log "L1 exited with $rc after $(($(date +%s) - start))s"
if [ ! -s "$job/status" ]; then
  log "L1 did not finish the command (QEMU status $rc); its console and QEMU's messages:"
  tail -n 40 "$job/console" "$job/qemu.log" >&2 || true
  exit 125
fi
exit "$(cat "$job/status")"
