#!/usr/bin/env bash
# Google's pprof for the consumer tests, built from the Go sources Debian ships
# (golang-github-google-pprof-dev; GOPATH mode, every dependency a Debian package under
# /usr/share/gocode) into OUT/pprof-bin/pprof. Usage: build_pprof.sh OUT
set -euo pipefail
out=${1:?usage: build_pprof.sh OUT}/pprof-bin
src=/usr/share/gocode/src/github.com/google/pprof
[ -d "$src" ] || { echo "build_pprof.sh: $src missing: install golang-github-google-pprof-dev (scripts/deps.sh does)" >&2; exit 1; }
command -v go >/dev/null || { echo "build_pprof.sh: go missing: install golang-go (scripts/deps.sh does)" >&2; exit 1; }
mkdir -p "$out"
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$out/cache" GOFLAGS= \
  go build -o "$out/pprof" github.com/google/pprof
"$out/pprof" -h 2>&1 | head -n 1
