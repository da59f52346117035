#!/usr/bin/env bash
# Debug files by build-id from a real debuginfod server (Debian's `debuginfod`, elfutils), as a
# report asks for them (symbolize/debuginfod.c): a recording whose program the report has no
# file for is named once the server serves it, through $DEBUGINFOD_URLS or --debuginfod=URLS;
# with the server stopped the same report completes with offsets and one line saying why;
# --no-debuginfod asks nothing; --debuginfod with no URL is a usage error.
# usage: test_debuginfod.sh HVPROF MKRECORDING GUEST_BUILD_DIR
set -euo pipefail
hv=${1:?usage: test_debuginfod.sh HVPROF MKRECORDING GUEST_BUILD_DIR}
mkrec=${2:?}
guest=${3:?}
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }
command -v debuginfod >/dev/null || fail "debuginfod is not installed (scripts/deps.sh installs it)"
dir=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$dir"' EXIT
mkdir -p "$dir/files" "$dir/cache"
cp "$guest/progs/workload.elf" "$dir/files/"
"$mkrec" -o "$dir/rec.fxt" -n 5000 --workload "$guest/progs/workload.elf" \
  --kernel "$guest/hvprof-guest.elf" --vcpus 1 >/dev/null
id=$(readelf -n "$guest/progs/workload.elf" | awk '/Build ID/ {print $3}')
export DEBUGINFOD_CACHE_PATH=$dir/cache
unset DEBUGINFOD_URLS
# Without a server: offsets, and the warning says what is missing.
err=$("$hv" report "$dir/rec.fxt" --format folded -o "$dir/none.folded" 2>&1)
grep -q "no symbols for \[elf@0x400000\] build-id $id" <<<"$err" || fail "no warning: $err"
grep -q 'hot_leaf' "$dir/none.folded" && fail "named without a server"
tree=$("$hv" report "$dir/rec.fxt" -g -v --limit 200 -q)
grep -q 'names from none$' <<<"$tree" ||
  fail "report -g -v: the program's frames are not said to have no names: $tree"
ok "no server: the program's frames stay offsets, said"
# The server, on a free port of 127.0.0.1, scanning the directory.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F "$dir/files" -p "$port" -d "$dir/db.sqlite" >"$dir/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$id/executable" && break
  sleep 0.2
done
curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$id/executable" ||
  fail "the server never served $id: $(cat "$dir/server.log")"
url=http://127.0.0.1:$port
err=$(DEBUGINFOD_URLS=$url "$hv" report "$dir/rec.fxt" --format folded -o "$dir/env.folded" 2>&1)
grep -q "debuginfod: 1 of 1 modules' debug files found ($url)" <<<"$err" || fail "summary: $err"
total=$(awk '{s += $NF} END {print s}' "$dir/env.folded")
offsets=$(awk '/\[elf@0x400000\]\+0x/ {s += $NF} END {print s + 0}' "$dir/env.folded")
[ "$offsets" -eq 0 ] || fail "$offsets of $total samples still have an offset frame of the program"
grep -q ';hot_leaf ' "$dir/env.folded" || fail "hot_leaf not named"
ok "DEBUGINFOD_URLS: fetched, every one of the $total samples' program frames named"
# report -v says where the names came from: the program's from debuginfod (the cache file's
# .symtab), with the function's source line from its DWARF.
tree=$(DEBUGINFOD_URLS=$url "$hv" report "$dir/rec.fxt" -g -v --limit 200 -q)
# (grep -q ends early: a grep writing into it could die of SIGPIPE under pipefail.)
entry=$(grep -A1 '\] hot_leaf (' <<<"$tree" || true)
grep -q 'names from debuginfod (.symtab)' <<<"$entry" ||
  fail "report -g -v: hot_leaf's names not from debuginfod: $entry"
grep -Eq 'source [^ ]*workload\.c:[0-9]+;' <<<"$entry" ||
  fail "report -g -v: hot_leaf has no source line: $entry"
ok "report -g -v: hot_leaf's source line, and its names from debuginfod"
# The program found stripped on the symbol path (its .dynsym alone, as a guest's binaries
# are): its debug file from the server names the rest.
mkdir -p "$dir/stripped"
strip --strip-all -o "$dir/stripped/workload.elf" "$guest/progs/workload.elf"
tree=$(DEBUGINFOD_URLS=$url "$hv" report "$dir/rec.fxt" --symbols "$dir/stripped" -g -v \
  --limit 200 -q)
entry=$(grep -A1 '%  \[.\] hot_leaf (' <<<"$tree" || true)
grep -q 'names from debuginfod (.symtab)' <<<"$entry" ||
  fail "a stripped file on the symbol path: hot_leaf not named from debuginfod: $entry"
ok "a stripped file on --symbols: its debug file from the server names hot_leaf"
rm -rf "$dir/cache"/*
"$hv" report "$dir/rec.fxt" --debuginfod="$url" --format folded -q -o "$dir/opt.folded"
cmp -s "$dir/env.folded" "$dir/opt.folded" || fail "--debuginfod=URLS differs from DEBUGINFOD_URLS"
ok "--debuginfod=URLS: the same output"
# The cache: asked again with the server gone, the file is there.
kill "$server"; wait "$server" 2>/dev/null || true; server=
DEBUGINFOD_URLS=$url "$hv" report "$dir/rec.fxt" --format folded -q -o "$dir/cached.folded"
cmp -s "$dir/env.folded" "$dir/cached.folded" || fail "the client's cache was not used"
ok "server stopped, file in the client's cache: the same output"
rm -rf "$dir/cache"/*
err=$(DEBUGINFOD_URLS=$url "$hv" report "$dir/rec.fxt" --format folded -o "$dir/down.folded" 2>&1) ||
  fail "a server that is down failed the report: $err"
grep -q 'the server could not be reached' <<<"$err" || fail "no word of the server: $err"
[ "$(grep -c 'debuginfod: [0-9]* of' <<<"$err")" = 1 ] || fail "not one summary line: $err"
cmp -s "$dir/none.folded" "$dir/down.folded" || fail "server down: not the offsets of no server"
ok "server down, empty cache: the report completes with offsets and one line"
err=$(DEBUGINFOD_URLS=$url "$hv" report "$dir/rec.fxt" --no-debuginfod -o "$dir/x.txt" 2>&1)
grep -q 'debuginfod' <<<"$err" && fail "--no-debuginfod asked: $err"
err=$("$hv" report "$dir/rec.fxt" --debuginfod 2>&1) && fail "--debuginfod without a URL accepted"
grep -q -- '--debuginfod: no server to ask' <<<"$err" || fail "--debuginfod message: $err"
ok "--no-debuginfod asks nothing; --debuginfod with no URL is refused"
