#!/usr/bin/env bash
# The README's first command: install what is missing, build, and profile the built-in demo
# guest. Writes every report format into ./hvprof-demo/ (or $1) and prints the top table.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$PWD/hvprof-demo}")
bash "$top/scripts/deps.sh"
HVPROF_BUILD_DIR=$top/build bash "$top/scripts/build.sh" >/dev/null
hv=$top/build/cli/hvprof
mkdir -p "$out"
# --force: the demo rewrites its own folder (a previous demo.fxt is kept as demo.fxt.old).
record=("$hv" record --guest demo --vcpus 2 --hz 1000 --force --console "$out/console.log"
  -o "$out/demo.fxt")
if ! [ -c /dev/kvm ] || ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
  # No /dev/kvm here: the recording is made where there is one, in a VM of QEMU's software
  # emulation with emulated AMD SVM, on this file system (docs/testing.md, "Without /dev/kvm").
  # L1 has a /tmp of its own: it writes into the build tree, and the files are moved to $out.
  echo "== no /dev/kvm on this host: recording under nested virtualization (tests/linux/nested.sh)"
  bash "$top/tests/linux/prepare.sh" --l1-only "$top/build/linux-testbed"
  nd=$top/build/nested-demo
  rm -rf "$nd"
  mkdir -p "$nd"
  record=(bash "$top/tests/linux/nested.sh" "$top/build/linux-testbed" "$hv" record --guest demo
    --vcpus 2 --hz 1000 --console "$nd/console.log" -o "$nd/demo.fxt")
fi
echo "== hvprof record: the demo guest, 2 vCPUs, 1 kHz  (guest console: $out/console.log)"
"${record[@]}"
if [ -n "${nd:-}" ]; then mv -f "$nd/demo.fxt" "$nd/console.log" "$out/"; fi
echo "== hvprof report: every format into $out"
"$hv" report "$out/demo.fxt" --format all --force -o "$out"
echo
"$hv" report "$out/demo.fxt" --format top
