#!/usr/bin/env bash
# hvprof top driven as a user drives it, in a terminal (tmux): the live table names the demo
# guest's hot function, the keys filter it (k: kernel samples only, p: per process, v: one
# vCPU), q stops the guest as Ctrl-C does and leaves a complete recording (docs/report.md,
# "A live view").
# usage: test_top_tmux.sh HVPROF
set -euo pipefail
hv=${1:?usage: test_top_tmux.sh HVPROF}
command -v tmux >/dev/null || { echo "FAIL: tmux is not installed (scripts/deps.sh installs it)"; exit 1; }
dir=$(mktemp -d)
sock=hvprof-top-test-$$
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$dir"' EXIT
tmux -L "$sock" new-session -d -x 150 -y 45 \
  "'$hv' top --guest demo --vcpus 2 --cmdline 'progs=workload,syscall seconds=120' --refresh 0.3 \
    --window 2 -o '$dir/top.fxt' --console '$dir/console.txt'; echo \$? > '$dir/exit'; sleep 60"

pane() { tmux -L "$sock" capture-pane -p; }
# Wait up to $2 seconds for the screen to show $1 (an extended regexp).
await() {
  for _ in $(seq 1 $(($2 * 5))); do
    pane | grep -Eq -- "$1" && return 0
    sleep 0.2
  done
  echo "FAIL: the screen never showed /$1/ in $2 s; it shows:"; pane; exit 1
}
ok() { echo "ok   $*"; }

await '\[\.\] hot_leaf' 90
pane | grep -q '^hvprof top: .* recorded; the last 2 s, all vCPUs, all samples' ||
  { echo "FAIL: header"; pane; exit 1; }
ok "the table names hot_leaf, the header the window and the filters"

tmux -L "$sock" send-keys k
await 'kernel samples: [0-9]+' 10
sleep 1
# With kernel samples only, every function with samples of its own is a kernel one.
bad=$(pane | awk '$3 ~ /^[0-9]+$/ && $3 > 0 && $5 == "[.]"')
[ -z "$bad" ] || { echo "FAIL: user functions with self samples after k:"; echo "$bad"; exit 1; }
pane | grep -q '\[k\] ' || { echo "FAIL: no kernel function after k"; pane; exit 1; }
ok "k: every function with self samples is a kernel one"

tmux -L "$sock" send-keys a p
await '^# Per process' 10
await 'syscall\.elf' 10
ok "p: the per-process table, the guest's programs in it"

tmux -L "$sock" send-keys v
await 'the last 2 s, vCPU 0,' 10
ok "v: vCPU 0 alone"

tmux -L "$sock" send-keys q
for _ in $(seq 1 150); do [ -s "$dir/exit" ] && break; sleep 0.2; done
[ "$(cat "$dir/exit" 2>/dev/null)" = 0 ] || { echo "FAIL: q: exit $(cat "$dir/exit" 2>/dev/null)"; pane; exit 1; }
"$hv" dump --stats "$dir/top.fxt" >/dev/null || { echo "FAIL: the recording does not read whole"; exit 1; }
"$hv" report -q "$dir/top.fxt" | grep -q '\[\.\] hot_leaf' || { echo "FAIL: report of the recording"; exit 1; }
ok "q: exit 0, a complete recording that report reads"

# An 80x24 terminal: every line cut to the width, the header and the keys' hint on the first
# line of every frame, the column header in view; resized to 200x60, the same.
small=hvprof-top-small-$$
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; tmux -L "$small" kill-server 2>/dev/null || true; rm -rf "$dir"' EXIT
tmux -L "$small" new-session -d -x 80 -y 24 \
  "'$hv' top --guest demo --vcpus 2 --cmdline 'progs=workload,syscall seconds=120' --refresh 0.3 \
    -o '$dir/small.fxt'; sleep 60"
spane() { tmux -L "$small" capture-pane -p -J; }
fits() { # $1 columns, $2 rows
  for _ in $(seq 1 100); do
    spane | head -1 | grep -q '^hvprof top: .* recorded' && spane | grep -q '^keys: q quit' && break
    sleep 0.2
  done
  local s; s=$(spane)
  echo "$s" | head -1 | grep -q '^hvprof top: .* recorded; the last 5 s, all vCPUs, all samples: [0-9]' ||
    { echo "FAIL: $1x$2: the first line is not the header:"; echo "$s"; exit 1; }
  grep -q '^keys: q quit  k kernel  u user  a all  p per process  f per function  v vCPU$' <<<"$s" ||
    { echo "FAIL: $1x$2: the keys are not shown whole:"; echo "$s"; exit 1; }
  grep -q '# Children' <<<"$s" || { echo "FAIL: $1x$2: no column header:"; echo "$s"; exit 1; }
  local long; long=$(echo "$s" | awk -v w="$1" 'length($0) > w')
  [ -z "$long" ] || { echo "FAIL: $1x$2: lines wider than the terminal:"; echo "$long"; exit 1; }
  [ "$(echo "$s" | wc -l)" -le "$2" ] || { echo "FAIL: $1x$2: more lines than rows"; exit 1; }
}
await_small() {
  for _ in $(seq 1 450); do spane | grep -q '\[\.\] hot_leaf' && return 0; sleep 0.2; done
  echo "FAIL: 80x24: no table"; spane; exit 1
}
await_small
fits 80 24
ok "80x24: the header first, the keys shown, every line within 80 columns"
tmux -L "$small" resize-window -x 200 -y 60
sleep 1.5
fits 200 60
spane | head -1 | grep -q 'the last 5 s' || { echo "FAIL: 200x60 header"; exit 1; }
ok "resized to 200x60: redrawn, the header first"
tmux -L "$small" send-keys q

# Batch mode: plain tables (no escape sequences), -n of them, then the guest stops.
"$hv" top -b -n 3 --refresh 0.5 --guest demo --vcpus 1 --cmdline 'progs=workload seconds=60' \
  > "$dir/batch.txt" 2> "$dir/batch.err" || { echo "FAIL: batch exit"; cat "$dir/batch.err"; exit 1; }
! grep -q $'\033' "$dir/batch.txt" || { echo "FAIL: escapes in batch output"; exit 1; }
[ "$(grep -c '^hvprof top: ' "$dir/batch.txt")" = 3 ] || { echo "FAIL: not 3 tables"; cat "$dir/batch.txt"; exit 1; }
grep -q '\[\.\] hot_leaf' "$dir/batch.txt" || { echo "FAIL: batch table lacks hot_leaf"; exit 1; }
ok "top -b -n 3: three plain tables, then the guest stops"

# hvprof record on a terminal: the guest's console to its own file (said once), the progress
# line alone on the terminal, a summary of a few lines ending with the file, its size and the
# next command; -v gives the whole account.
rec=hvprof-record-$$
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; tmux -L "$small" kill-server 2>/dev/null || true; tmux -L "$rec" kill-server 2>/dev/null || true; rm -rf "$dir"' EXIT
tmux -L "$rec" new-session -d -x 120 -y 40 \
  "'$hv' record --guest demo --duration 2 -o '$dir/r.fxt'; echo \$? > '$dir/rexit'; sleep 60"
for _ in $(seq 1 300); do [ -s "$dir/rexit" ] && break; sleep 0.2; done
rpane=$(tmux -L "$rec" capture-pane -p -J)
[ "$(cat "$dir/rexit")" = 0 ] || { echo "FAIL: record exit"; echo "$rpane"; exit 1; }
grep -q "^hvprof record: the guest's console goes to $dir/r.fxt.console" <<<"$rpane" ||
  { echo "FAIL: the console's file is not said"; echo "$rpane"; exit 1; }
! grep -q 'workload:' <<<"$rpane" || { echo "FAIL: the guest's console on the terminal"; echo "$rpane"; exit 1; }
grep -q '^workload: ' "$dir/r.fxt.console" || { echo "FAIL: the console file lacks the guest's lines"; exit 1; }
grep -Eq '^hvprof record: [0-9]+ samples of 1 vCPU at 1000 Hz' <<<"$rpane" ||
  { echo "FAIL: no brief summary"; echo "$rpane"; exit 1; }
grep -Eq "^\[ hvprof record: wrote $dir/r.fxt \([0-9.]+ MB, [0-9]+ samples\); -v for the details \]" <<<"$rpane" ||
  { echo "FAIL: no final line"; echo "$rpane"; exit 1; }
grep -q "^next: hvprof report $dir/r.fxt" <<<"$rpane" || { echo "FAIL: no next command"; exit 1; }
lines=$(grep -c . <<<"$rpane")
[ "$lines" -le 8 ] || { echo "FAIL: $lines lines on the terminal"; echo "$rpane"; exit 1; }
! grep -Eq 'dropped(workload|hvprof-guest)' <<<"$rpane" || { echo "FAIL: glued lines"; exit 1; }
ok "record on a terminal: the console in its own file, $lines lines, the file and the next command last"
