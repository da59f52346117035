#!/usr/bin/env bash
# A perf user's first commands (docs/report.md, "For perf and pprof users"), run on the demo
# guest as they would type them, each checked for what perf would give; then the habits that
# tripped users before: lists and repeated filters, a --comm that matches nothing, a window past
# the end, a cut file, options that need others, what the host cannot give.
# usage: test_perf_habits.sh HVPROF
set -euo pipefail
hv=${1:?usage: test_perf_habits.sh HVPROF}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }
has() { grep -q -- "$2" <<<"$1" || fail "$3: no '$2' in:"$'\n'"$1"; }

# 1. perf record -F 999 -g -a (-q: no summary)
"$hv" record -F 999 -g -a -q --guest demo --vcpus 2 --duration 2 -o perf.fxt --console con.txt
[ -s perf.fxt ] || fail "record -F 999 -g -a -q wrote nothing"
ok "record -F 999 -g -a -q -o perf.fxt"
# 2. perf report -i perf.data --stdio
out=$("$hv" report -i perf.fxt --stdio -q)
has "$out" '# Children     Self    Samples  Shared Object            Symbol' "report -i --stdio"
has "$out" 'hot_leaf' "report -i --stdio"
ok "report -i perf.fxt --stdio: the children table"
# 3. perf report --no-children --sort dso,sym: one Overhead column, by self
out=$("$hv" report -i perf.fxt --no-children --sort dso,sym -q)
has "$out" '# Overhead    Samples  Shared Object            Symbol' "--no-children --sort dso,sym"
# Sorted by the one Overhead column (self), largest first; the demo's leaves lead it.
grep '^ ' <<<"$out" | awk '{ v = $1 + 0; if (NR > 1 && v > prev) bad = 1; prev = v } END { exit bad }' ||
  fail "--no-children: rows not in decreasing Overhead:"$'\n'"$out"
first=$(grep '^ ' <<<"$out" | head -5 || true)
grep -q 'hot_leaf' <<<"$first" || fail "--no-children: hot_leaf not among the first rows"
ok "report --no-children --sort dso,sym: by self, largest first, hot_leaf among the first"
# 4. perf report --sort comm --percent-limit 5
out=$("$hv" report -i perf.fxt --sort comm --percent-limit 5 -q)
has "$out" 'Command' "--sort comm"
has "$out" 'rows under 5.00% left out (--percent-limit)' "--percent-limit"
while read -r pct _; do
  awk -v p="${pct%\%}" 'BEGIN { exit !(p >= 5) }' || fail "a row under 5 %: $pct"
done < <(grep '^ ' <<<"$out")
ok "report --sort comm --percent-limit 5: every row at 5 % or more"
# 5. perf report --comms a,b and repeated --comm: both programs
out=$("$hv" report -i perf.fxt --comms workload.elf,syscall.elf --sort comm,pid -q)
has "$out" 'workload.elf' "--comms a,b"
has "$out" 'syscall.elf' "--comms a,b"
out2=$("$hv" report -i perf.fxt --comm workload.elf --comm syscall.elf --sort comm,pid -q)
[ "$out" = "$out2" ] || fail "--comm a --comm b differs from --comms a,b"
ok "report --comms a,b = --comm a --comm b: both programs"
# 6. perf report --pid: the table's pids, a list
pids=$("$hv" report -i perf.fxt -q | awk '/^# Per process/ {p=1; next} p && /^ / {print $4}' | head -2 | paste -sd,)
out=$("$hv" report -i perf.fxt --pids "$pids" -q)
n=$(awk '/^# Per process/ {p=1; next} /^# Per vCPU/ {p=0} p && /^ / {n++} END {print n+0}' <<<"$out")
[ "$n" = 2 ] || fail "--pids $pids: $n processes"
ok "report --pids $pids: those two processes"
# 7. perf report -g: callers and callees
out=$("$hv" report -i perf.fxt -g -q)
has "$out" 'callers' "report -g"
ok "report -g: the call graph (tree)"
# 8. perf report --header-only
out=$("$hv" report -i perf.fxt --header-only -q)
has "$out" '# sample rate    : 999 Hz per vCPU' "--header-only"
has "$out" '# vCPUs          : 2' "--header-only"
has "$out" '# command line   : hvprof record -F 999 -g -a -q' "--header-only"
has "$out" '# captured on    : 20' "--header-only"
ok "report --header-only: rate, vCPUs, command line, start time"
# 9. perf script
out=$("$hv" report -i perf.fxt --format perf-script -q | head -20)
has "$out" 'cpu-clock' "perf-script"
ok "report --format perf-script: perf script's text"
# perf script -F +srcline: each frame's source line under it (the guest's files for their DWARF).
guest=$(cd "$(dirname "$hv")/../tests/guest" && pwd)
out=$("$hv" report -i perf.fxt --format perf-script --srcline --symbols "$guest/progs" -q)
# (grep -q ends early: a grep writing into it would die of SIGPIPE, failing under pipefail.)
under=$(grep -A1 ' hot_leaf+0x' <<<"$out" || true)
grep -Eq '^  workload\.c:[0-9]+$' <<<"$under" ||
  fail "--srcline: no workload.c line under hot_leaf:"$'\n'"$(head -n 6 <<<"$under")"
n=$(grep -c $'^\t' <<<"$out")
[ "$(grep -cE '^  [^ ]+:[0-9]+$' <<<"$out")" -ge $((n / 2)) ] ||
  fail "--srcline: under half of the $n frames have a source line"
ok "report --format perf-script --srcline: perf's source lines under the frames"
# 10. perf diff
"$hv" record -c 2000000 -q --guest demo --duration 1 -o base.fxt --console con2.txt \
  --cmdline 'progs=workload seconds=10'
hdr=$("$hv" report -i base.fxt --header-only -q)
grep -q '# sample rate    : 500 Hz' <<<"$hdr" || fail "-c 2000000 is not 500 Hz"
out=$("$hv" diff base.fxt perf.fxt --pid "${pids%%,*}" -q)
has "$out" '# hvprof diff: base base.fxt' "diff with --pid"
ok "record -c 2000000 (500 Hz); diff base.fxt perf.fxt --pid: the change table"

# The habits that tripped users: a name that matches nothing says what does.
err=$("$hv" report -i perf.fxt --comm workload 2>&1 >/dev/null)
has "$err" "the report is empty: --comm workload: no thread or process of the recording is named so; its names: workload.elf" "--comm workload"
globbed=$("$hv" report -i perf.fxt --comm 'work*' -q)
grep -q hot_leaf <<<"$globbed" || fail "--comm 'work*'"
ok "--comm workload names workload.elf; --comm 'work*' matches it"
err=$("$hv" report -i perf.fxt --time 100,200 2>&1 >/dev/null)
has "$err" "--time: the window holds no sample; the recording's samples span 0.0" "--time past the end"
ok "--time past the end says the recording's span"
err=$("$hv" report -i perf.fxt --exits 2>&1) && fail "--exits on a recording without exit events exits 0"
has "$err" 'was recorded without --events exits' "--exits"
ok "report --exits without exit events: an error"
head -c $(( $(stat -c %s perf.fxt) * 2 / 3 + 5 )) perf.fxt > cut.fxt
err=$("$hv" report cut.fxt 2>&1 >/dev/null) || fail "a cut recording does not report"
has "$err" 'was cut at byte' "cut recording"
[ "$(grep -c . <<<"$err")" = 1 ] || fail "a cut recording gives more than one warning: $err"
ok "a recording cut inside a record reports, with one warning"
# Before boot: what cannot mean the same, what needs another option, what the host lacks.
err=$("$hv" record -p 1 -o x.fxt 2>&1) && fail "record -p accepted"
has "$err" 'not a running process' "record -p"
err=$("$hv" record --guest demo --exit-stacks-every 2 -o x.fxt 2>&1) && fail "--exit-stacks-every alone"
has "$err" '--exit-stacks-every needs --events exits' "--exit-stacks-every"
err=$("$hv" record --guest demo --ring-keep 3 -o x.fxt 2>&1) && fail "--ring-keep alone"
has "$err" '--ring-keep needs --ring' "--ring-keep"
err=$("$hv" record --guest demo --mem 1T -o x.fxt 2>&1) && fail "--mem 1T accepted"
has "$err" "more than the host's" "--mem 1T"
[ ! -e x.fxt ] || fail "a refused record left a file"
ncpu=$(nproc)
err=$("$hv" record --guest demo --vcpus $((ncpu * 8)) --duration 1 -q -o v.fxt --console con3.txt 2>&1)
has "$err" "warning: --vcpus $((ncpu * 8)) on $ncpu host CPUs" "--vcpus far above the host's"
ok "before boot: -p, --exit-stacks-every, --ring-keep, --mem refused; --vcpus $((ncpu * 8)) warned"
