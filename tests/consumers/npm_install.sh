#!/usr/bin/env bash
# The npm side of the consumer tests: speedscope and playwright-core at the versions
# package-lock.json pins, installed into OUT/node (never into the source tree).
# Usage: npm_install.sh OUT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: npm_install.sh OUT}/node
command -v npm >/dev/null || { echo "npm_install.sh: npm missing (Debian's npm; scripts/deps.sh installs it)" >&2; exit 1; }
mkdir -p "$out"
if ! cmp -s "$here/package-lock.json" "$out/package-lock.json" || [ ! -d "$out/node_modules/speedscope" ]; then
  cp "$here/package.json" "$here/package-lock.json" "$out/"
  (cd "$out" && npm ci --no-audit --no-fund --loglevel=error)
fi
