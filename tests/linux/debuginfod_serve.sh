#!/usr/bin/env bash
# Serve Debian's debug packages the way a distribution publishes them (test_linux_debuginfod):
# libc6-dbg of the glibc the guests run (this host's, prepare.sh copies it into them), fetched
# from the archive now with apt-get download, under Debian's own `debuginfod` server (elfutils),
# which indexes the .deb (-U) and serves its debug files by build-id on 127.0.0.1.
# Prints "PID URL" once the server answers for libc.so.6's build-id; the caller kills PID.
# usage: debuginfod_serve.sh DIR
set -euo pipefail
dir=${1:?usage: debuginfod_serve.sh DIR}
log() { echo "debuginfod_serve: $*" >&2; }
command -v debuginfod >/dev/null || { log "debuginfod is not installed (scripts/deps.sh)"; exit 1; }
# debuginfod unpacks a .deb's data.tar with bsdtar (libarchive-tools).
command -v bsdtar >/dev/null || { log "bsdtar is not installed (libarchive-tools; scripts/deps.sh)"; exit 1; }
mkdir -p "$dir/debs"
chmod 755 "$dir" "$dir/debs" # apt-get download drops to user _apt
ver=$(dpkg-query -W -f='${Version}' libc6)
if ! ls "$dir/debs"/libc6-dbg_*.deb >/dev/null 2>&1; then
  (cd "$dir/debs" && apt-get download -qq "libc6-dbg=$ver" 2>/dev/null) ||
    { log "apt-get download libc6-dbg=$ver failed"; exit 1; }
fi
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
id=$(readelf -n "$libc" | awk '/Build ID/ {print $3; exit}')
[ -n "$id" ] || { log "$libc has no build-id"; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -f "$dir/db.sqlite"*
# -U: Debian archives (.deb/.ddeb), scanned at start.
debuginfod -U "$dir/debs" -p "$port" -d "$dir/db.sqlite" >"$dir/server.log" 2>&1 &
pid=$!
url=http://127.0.0.1:$port
for _ in $(seq 1 300); do
  if curl -sf -o /dev/null "$url/buildid/$id/debuginfo"; then
    echo "$pid $url"
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
kill "$pid" 2>/dev/null || true
log "the server never served libc's debug file ($id): $(tail -n 5 "$dir/server.log")"
exit 1
