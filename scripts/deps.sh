#!/usr/bin/env bash
# Install the Debian packages hvprof needs, only those that are missing. Idempotent; needs root
# (or sudo) only when something is missing.
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev linux-libc-dev libelf-dev
      libdw-dev libcapstone-dev libcmocka-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
      python3 python3-protobuf protobuf-compiler cpio valgrind nodejs
      golang-go golang-github-google-pprof-dev binutils chromium acpica-tools
      libvirt-dev libxml2-dev e2fsprogs libext2fs-dev comerr-dev libblkid-dev fdisk qemu-utils tmux
      xz-utils sqlite3 python3.11-minimal libqcow-dev libjson-c-dev libnbd-dev libslirp-dev liblzma-dev
      libdebuginfod-dev debuginfod libarchive-tools curl
      libglib2.0-dev libseccomp-dev libcap-ng-dev libiberty-dev python3-jsonschema man-db zsh
      bash-completion openjdk-17-jdk-headless)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The consumer tests' npm (tests/consumers): Debian's, unless a Node.js package brought its own.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "hvprof: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
