#!/usr/bin/env bash
# valgrind memcheck over the real pipeline: `hvprof record` (short, 2 vCPUs: the normal programs,
# then a hostile one whose page tables point at themselves) and `hvprof report` / `hvprof dump` of
# the recordings, plus the error path of a truncated file. Any memcheck error or definite/possible
# leak fails (--error-exitcode). valgrind runs the VMM fine here: KVM ioctls are plain syscalls
# whose kvm_run page it treats as mapped memory. Exit 77 (skipped) without valgrind or /dev/kvm.
set -euo pipefail
hvprof=${HVPROF_EXE:-${HVPROF_BINARY_DIR:?}/cli/hvprof}
command -v valgrind >/dev/null || { echo "no valgrind: skipped"; exit 77; }
[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "no /dev/kvm: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/hvprof-valgrind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
vg=(valgrind --leak-check=full --errors-for-leak-kinds=definite,possible --error-exitcode=99
    --trace-children=no -q)
fail=0
check() { # check <expected-status> <args...>
  local want=$1 rc=0
  shift
  "${vg[@]}" "$hvprof" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" != "$want" ] || grep -q '^==[0-9]*==' "$tmp/err"; then
    echo "FAIL (status $rc, want $want): hvprof $*"; cat "$tmp/err"; fail=1
    # A recording's guest: the end of its console says how its programs ended.
    for c in "$tmp"/*.con; do [ -f "$c" ] && { echo "--- $c"; tail -n 15 "$c"; }; done
  else
    echo "ok   (status $rc): hvprof $*"
  fi
}
# record --no-sandbox: valgrind's own system calls (its scheduler, its reading of debug info)
# are not hvprof's, and a seccomp filter would stop valgrind itself; test_confined and the rest
# of the suite judge the sandbox.
check 0 record --no-sandbox -o "$tmp/a.fxt" --quiet --guest demo --vcpus 2 --console "$tmp/a.con" \
  --cmdline "progs=workload,syscall,threads procs=1 seconds=1"
check 0 record --no-sandbox -o "$tmp/b.fxt" --quiet --guest demo --vcpus 1 --console "$tmp/b.con" \
  --cmdline "progs=hostile_pt seconds=1"
check 0 report "$tmp/a.fxt"
check 0 report --format all -o "$tmp/rep" "$tmp/a.fxt"
check 0 report "$tmp/b.fxt"
check 0 dump --stats "$tmp/a.fxt"
check 0 dump "$tmp/b.fxt"
# Cut 4 bytes short: records are whole 8-byte words, so this always ends inside a record.
# A cut recording: what it holds is shown and reported (exit 0), read under valgrind too.
head -c $(($(stat -c %s "$tmp/a.fxt") - 4)) "$tmp/a.fxt" >"$tmp/cut.fxt"
check 0 dump "$tmp/cut.fxt"
check 0 report "$tmp/cut.fxt"
exit $fail
