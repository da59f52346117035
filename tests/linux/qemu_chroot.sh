#!/usr/bin/env bash
# Run the QEMU of another Debian release as the test bed's L0 (docs/linux.md, "The emulator
# under the test bed"): its binary loads that release's libraries and modules, so it runs in a
# root of that release (debootstrap, prepare.sh), chrooted, in a mount namespace of its own in
# which the host directories QEMU's arguments name are bound at the same paths.
#
# Usage: qemu_chroot.sh [--root-at PATH] ROOT DIR... -- QEMU-ARGUMENTS
#   --root-at PATH: the host's whole file system, bound at PATH in the root as well (nested.sh
#                   shares it with L1)
# The script execs (unshare, bash, chroot, QEMU: one process), so signals reach QEMU itself.
set -euo pipefail
root_at=
if [ "${1:-}" = --root-at ]; then
  root_at=${2:?--root-at PATH}
  shift 2
fi
root=${1:?usage: qemu_chroot.sh [--root-at PATH] ROOT DIR... -- QEMU-ARGUMENTS}
shift
dirs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  dirs+=("$(cd "$1" && pwd)")
  shift
done
[ $# -gt 0 ] || { echo "qemu_chroot.sh: no -- before QEMU's arguments" >&2; exit 2; }
shift
[ -x "$root/usr/bin/qemu-system-x86_64" ] || {
  echo "qemu_chroot.sh: $root has no usr/bin/qemu-system-x86_64 (prepare.sh makes it)" >&2
  exit 1
}
# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --propagation private -- bash -c '
  set -e
  root=$1 root_at=$2 n=$3
  shift 3
  if [ -n "$root_at" ]; then
    mkdir -p "$root$root_at"
    mount --rbind / "$root$root_at"
  fi
  mount --rbind /dev "$root/dev"
  mount -t proc proc "$root/proc"
  for ((i = 0; i < n; i++)); do
    mkdir -p "$root$1"
    mount --bind "$1" "$root$1"
    shift
  done
  exec chroot "$root" /usr/bin/qemu-system-x86_64 "$@"
' _ "$root" "$root_at" "${#dirs[@]}" "${dirs[@]}" "$@"
