#!/usr/bin/env bash
# Linux smoke test (docs/linux.md): boot Debian 12's cloud kernel with a busybox initramfs under
# `hvprof run` and pass as soon as the kernel prints "Linux version" on the serial console.
#
# Usage: linux_smoke.sh HVPROF_BINARY CACHE_DIR
# Env:   HVPROF_SMOKE_TIMEOUT  seconds to wait for the banner (default 900)
#        HVPROF_SMOKE_MARKER   what counts as success (default "Linux version")
#        HVPROF_SMOKE_MEM      guest RAM (default 512M)
# Needs root (apt-get download, mknod) on a Debian 12 machine with network access the first
# time; kernel and initramfs are cached in CACHE_DIR afterwards.
set -euo pipefail

hvprof=${1:?usage: linux_smoke.sh HVPROF_BINARY CACHE_DIR}
cache=${2:?usage: linux_smoke.sh HVPROF_BINARY CACHE_DIR}
timeout=${HVPROF_SMOKE_TIMEOUT:-900}
marker=${HVPROF_SMOKE_MARKER:-Linux version}
mem=${HVPROF_SMOKE_MEM:-512M}
cmdline="console=ttyS0 earlyprintk=serial reboot=k panic=-1 pci=off nokaslr"
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

log() { echo "linux-smoke: $*" >&2; }

# The current cloud kernel: linux-image-cloud-amd64 is a metapackage depending on the versioned
# linux-image-<abi>-cloud-amd64 package that holds /boot/vmlinuz-*.
fetch_kernel() {
  [ -s "$cache/vmlinuz" ] && return 0
  local pkg work
  pkg=$(apt-cache depends linux-image-cloud-amd64 |
        awk '/Depends: linux-image-[0-9].*-cloud-amd64/ {print $2; exit}')
  [ -n "$pkg" ] || { log "cannot resolve linux-image-cloud-amd64 (apt-get update?)"; return 1; }
  log "downloading $pkg"
  work=$(mktemp -d)
  chmod 755 "$work" # apt-get download drops to user _apt
  (cd "$work" && apt-get download -qq "$pkg" && dpkg-deb -x ./*.deb root)
  cp "$work"/root/boot/vmlinuz-* "$cache/vmlinuz.tmp"
  echo "$pkg" >"$cache/vmlinuz.package"
  mv "$cache/vmlinuz.tmp" "$cache/vmlinuz"
  rm -rf "$work"
}

# A newc cpio initramfs: busybox-static, and an /init that prints a marker and reboots (with
# reboot=k the VM then exits through the i8042 reset or a triple fault).
build_initramfs() {
  [ -s "$cache/initramfs.cpio.gz" ] && return 0
  local work root
  work=$(mktemp -d)
  chmod 755 "$work" # apt-get download drops to user _apt
  log "building initramfs (busybox-static)"
  (cd "$work" && apt-get download -qq busybox-static && dpkg-deb -x ./*.deb bb)
  root=$work/root
  mkdir -p "$root"/{bin,dev,proc,sys}
  cp "$work/bb/bin/busybox" "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  mknod -m 600 "$root/dev/console" c 5 1
  mknod -m 666 "$root/dev/null" c 1 3
  cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
echo "HVPROF-SMOKE: userspace reached, $(/bin/busybox uname -r)"
/bin/busybox reboot -f
INIT
  chmod 755 "$root/init"
  (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -9 >"$cache/initramfs.tmp"
  mv "$cache/initramfs.tmp" "$cache/initramfs.cpio.gz"
  rm -rf "$work"
}

fetch_kernel
build_initramfs

console=$cache/console.log
: >"$console"
log "booting $(cat "$cache/vmlinuz.package" 2>/dev/null || echo vmlinuz), waiting up to ${timeout}s for \"$marker\""
start=$(date +%s)
"$hvprof" run --kernel "$cache/vmlinuz" --initrd "$cache/initramfs.cpio.gz" \
  --cmdline "$cmdline" --vcpus 1 --mem "$mem" --timeout "$((timeout + 30))" \
  --console "$console" >"$cache/hvprof.out" 2>&1 &
pid=$!

result=1
while :; do
  now=$(date +%s)
  if grep -q -- "$marker" "$console" 2>/dev/null; then
    log "PASS: \"$marker\" after $((now - start))s"
    grep -m1 -- "$marker" "$console" >&2
    result=0
    break
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" && rc=0 || rc=$?
    log "FAIL: hvprof run exited (status $rc) after $((now - start))s without \"$marker\""
    tail -n 20 "$cache/hvprof.out" >&2 || true
    break
  fi
  if [ $((now - start)) -ge "$timeout" ]; then
    log "FAIL: no \"$marker\" within ${timeout}s"
    break
  fi
  sleep 2
done
if kill -0 "$pid" 2>/dev/null; then
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
fi
log "console: $(wc -c <"$console") bytes in $console"
tail -n 5 "$console" >&2 || true
exit $result
