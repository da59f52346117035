#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then used as an installed tool: hvprof runs from bin/
# (its version, its help), each man page renders with man -l and has its sections, the bash
# completion loads and completes commands, options and --format values, the zsh one parses
# where zsh is, the docs are there, and the installed program finds its demo guest.
# usage: test_install.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: test_install.sh BUILD_DIR}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$prefix" >/dev/null
hv=$prefix/bin/hvprof
[ -x "$hv" ] || fail "no bin/hvprof"
"$hv" --version | grep -Eq '^hvprof [0-9]+\.[0-9]+\.[0-9]+ \(.+\)$' || fail "--version: $("$hv" --version)"
"$hv" --version | grep -q 'libraries: elfutils' || fail "--version lacks the libraries"
"$hv" help report | grep -q '^examples:' || fail "help report lacks examples"
for c in "" -run -record -top -report -diff -dump; do
  page=$prefix/share/man/man1/hvprof$c.1
  [ -s "$page" ] || fail "no $page"
  # Plain text whatever man-db decides about its output (overstrike bold stripped).
  text=$(MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$page" 2>&1 | sed 's/.\x08//g') ||
    fail "man -l $page: $text"
  for sec in NAME SYNOPSIS DESCRIPTION; do
    grep -q "^$sec" <<<"$text" || fail "$page renders without $sec:"$'\n'"$text"
  done
done
report_page=$(MANWIDTH=80 man -l "$prefix/share/man/man1/hvprof-report.1" | sed 's/.\x08//g')
grep -q -- '--percent-limit' <<<"$report_page" || fail "hvprof-report(1) lacks --percent-limit"
record_page=$(MANWIDTH=80 man -l "$prefix/share/man/man1/hvprof-record.1" | sed 's/.\x08//g')
grep -q '^EXAMPLES' <<<"$record_page" || fail "hvprof-record(1) lacks EXAMPLES"
comp=$prefix/share/bash-completion/completions/hvprof
[ -s "$comp" ] || fail "no bash completion"
got=$(bash -c 'source "$1"; complete -p hvprof
  COMP_WORDS=(hvprof rep); COMP_CWORD=1; _hvprof; echo "cmd: ${COMPREPLY[*]}"
  COMP_WORDS=(hvprof report --percent); COMP_CWORD=2; _hvprof; echo "opt: ${COMPREPLY[*]}"
  COMP_WORDS=(hvprof report --format p); COMP_CWORD=3; _hvprof; echo "fmt: ${COMPREPLY[*]}"
  COMP_WORDS=(hvprof record --mode ""); COMP_CWORD=3; _hvprof; echo "mode: ${COMPREPLY[*]}"' \
  sh "$comp")
grep -q '^complete -o filenames -F _hvprof hvprof$' <<<"$got" || fail "completion not loaded: $got"
grep -q '^cmd: report$' <<<"$got" || fail "command completion: $got"
grep -q '^opt: --percent-limit$' <<<"$got" || fail "option completion: $got"
grep -q '^fmt: pprof perf-script$' <<<"$got" || fail "--format completion: $got"
grep -q '^mode: cpu wall exits$' <<<"$got" || fail "--mode completion: $got"
zcomp=$prefix/share/zsh/site-functions/_hvprof
[ -s "$zcomp" ] || fail "no zsh completion"
if command -v zsh >/dev/null; then zsh -n "$zcomp" || fail "zsh completion does not parse"; fi
[ -s "$prefix/share/doc/hvprof/report.md" ] && [ -s "$prefix/share/doc/hvprof/README.md" ] ||
  fail "docs not installed"
if [ -s "$build/tests/guest/hvprof-guest.elf" ]; then
  [ -s "$prefix/share/hvprof/guest/hvprof-guest.elf" ] && [ -s "$prefix/share/hvprof/guest/progs/workload.elf" ] ||
    fail "the demo guest is not installed"
fi
echo "ok: installed into $prefix: bin/hvprof, 7 man pages, bash and zsh completion, docs"
