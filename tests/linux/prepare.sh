#!/usr/bin/env bash
# Prepare the Linux test bed (docs/linux.md "Test bed") in CACHE, from Debian packages only:
#   kernel-generic/, kernel-cloud/   vmlinuz, config and release of linux-image-amd64 and
#                                    linux-image-cloud-amd64 (the guests hvprof boots, L2)
#   l1-modules/                      KVM (kvm-amd) and virtio-blk modules of the generic kernel,
#                                    for the outer VM (L1) that QEMU runs under TCG
#   l1.cpio.gz                       the outer VM's initramfs (busybox, modules, l1_init.sh)
#   l2.cpio.gz                       the guests' initramfs (busybox, the workloads in
#                                    workloads/ built by Debian's gcc, l2_init.sh)
#   l2-big.cpio.gz                   the same plus 32 MiB of incompressible padding
#   kernel-{bullseye,trixie,sid}[-cloud]/   the kernel matrix: the generic and cloud kernels of
#                                    each suite, from the same archive (suite_kernel)
#   l0-trixie/                       a Debian trixie root with its QEMU, which run.sh runs L1 in
#                                    (the default L0; qemu_chroot.sh)
#   root.ext4.gz, root.qcow2         the guests' root file system, raw, and as a GPT qcow2 disk
#                                    that boots its own grub.cfg (docs/disk-boot.md)
#   debian12/, debian12.qcow2        a Debian 12 system (debootstrap, systemd) and its disk
#                                    (debian_disk.sh; docs/net.md)
#   debian13/, debian13.qcow2        the same of Debian 13, serving through nginx
#   debian1N.{vmlinuz,initrd,cmdline}  each disk's boot entry, for QEMU/KVM's reference boot
# Downloads are kept; the two initramfs images are rebuilt every time (a few seconds), so a
# change to the workloads or the init scripts is always picked up. Needs root (apt-get, mknod).
#
# Usage: prepare.sh [--l1-only] CACHE
#   --l1-only: only what nested.sh needs (the generic kernel, l1.cpio.gz, the trixie root): a
#              command run where there is a /dev/kvm, on a host that has none
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
l1_only=0
if [ "${1:-}" = --l1-only ]; then
  l1_only=1
  shift
fi
cache=${1:?usage: prepare.sh [--l1-only] CACHE}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
log() { echo "linux-testbed: $*" >&2; }

need() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}
# libc6-dbg: glibc's full symbol table (start_thread, clone3, __libc_start_call_main and its
# internals), for the tests to name the frames the CFI unwinder walks through in libc.so.6.
need qemu-system-x86 qemu-utils cpio gcc libc6-dev libc6-dbg

# trixie's QEMU as L0 (docs/linux.md, "The emulator under the test bed"), which the kernel
# matrix needs (bookworm's cannot run 5.10 or 7.x): bookworm cannot install it, so it lives in a
# minimal trixie root, made once (~2 min, ~90 MB of downloads) from the mirror this host's apt
# uses.
if [ ! -f "$cache/l0-trixie/.done" ]; then
  need debootstrap
  mirror=$(awk '$1 == "URIs:" {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  log "making a trixie root with its QEMU in $cache/l0-trixie (from $mirror)"
  rm -rf "$cache/l0-trixie"
  debootstrap --variant=minbase --include=qemu-system-x86,qemu-system-data,seabios,ipxe-qemu \
    trixie "$cache/l0-trixie" "$mirror" >"$cache/l0-trixie.log" 2>&1 ||
    { log "debootstrap failed (see $cache/l0-trixie.log)"; exit 1; }
  rm -rf "$cache/l0-trixie/var/cache/apt/archives"/*.deb
  touch "$cache/l0-trixie/.done"
fi

# The versioned package a metapackage points at ("linux-image-6.1.0-56-cloud-amd64").
resolve() {
  local meta=$1 pat=$2 pkg
  pkg=$(apt-cache depends "$meta" 2>/dev/null | awk -v p="$pat" '$1 == "Depends:" && $2 ~ p {print $2; exit}')
  if [ -z "$pkg" ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    pkg=$(apt-cache depends "$meta" | awk -v p="$pat" '$1 == "Depends:" && $2 ~ p {print $2; exit}')
  fi
  [ -n "$pkg" ] || { log "cannot resolve $meta"; exit 1; }
  echo "$pkg"
}

# Download and unpack a package once into $cache/pkg/<name>/.
unpack() {
  local pkg=$1 dir=$cache/pkg/$1
  [ -f "$dir/.done" ] && return 0
  log "downloading $pkg"
  rm -rf "$dir"
  mkdir -p "$dir"
  local dl
  dl=$(mktemp -d)
  chmod 755 "$dl" # apt-get download drops to user _apt
  (cd "$dl" && apt-get download -qq "$pkg" >/dev/null 2>&1) || { log "apt-get download $pkg failed"; exit 1; }
  dpkg-deb -x "$dl"/*.deb "$dir"
  rm -rf "$dl"
  touch "$dir/.done"
}

kernel() { # kernel NAME METAPACKAGE PATTERN
  local name=$1 pkg
  pkg=$(resolve "$2" "$3")
  unpack "$pkg"
  local root=$cache/pkg/$pkg out=$cache/kernel-$name
  mkdir -p "$out"
  cp "$root"/boot/vmlinuz-* "$out/vmlinuz"
  cp "$root"/boot/config-* "$out/config"
  basename "$root"/boot/vmlinuz-* | sed 's/^vmlinuz-//' >"$out/release"
  echo "$pkg" >"$out/package"
  log "kernel-$name: $pkg ($(cat "$out/release"))"
}
kernel generic linux-image-amd64 '^linux-image-[0-9].*-amd64$'
echo "$cache/pkg/$(cat "$cache/kernel-generic/package")/lib/modules" >"$cache/kernel-generic/modules"
if [ "$l1_only" = 0 ]; then
  kernel cloud linux-image-cloud-amd64 '^linux-image-[0-9].*-cloud-amd64$'
  echo "$cache/pkg/$(cat "$cache/kernel-cloud/package")/lib/modules" >"$cache/kernel-cloud/modules"
fi

# The kernel matrix (docs/linux.md, "The kernel matrix"): the generic kernel of other Debian
# releases, from the same archive by suite, through an apt configuration of our own (this
# host's sources and package lists are not touched). From 7.x the image package is split: the
# kernel in linux-binary-<version>, the modules in linux-modules-<version>.
mirror=$(awk '$1 == "URIs:" {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
suite_apt() { # suite_apt SUITE apt-get|apt-cache ARGS...
  local suite=$1 tool=$2 d=$cache/apt/$1
  shift 2
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  echo "deb $mirror $suite main" >"$d/sources.list"
  "$tool" -o Dir::Etc::sourcelist="$d/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" "$@"
}
# suite_download SUITE DIR PKG...: the packages' .debs into DIR. A mirror caught mid-sync can
# list a package it cannot serve yet ("E: No packages found" after a fresh update): one more
# update and try, a few seconds later, before the test bed gives up.
suite_download() {
  local suite=$1 dir=$2 try
  shift 2
  for try in 1 2 3; do
    (cd "$dir" && suite_apt "$suite" apt-get download -qq "$@" >"$dir/.download.log" 2>&1) &&
      { rm -f "$dir/.download.log"; return 0; }
    log "downloading $* from $suite failed (try $try): $(tail -n 1 "$dir/.download.log")"
    sleep $((try * 5))
    suite_apt "$suite" apt-get update -qq || true
  done
  return 1
}
suite_kernel() { # suite_kernel SUITE [cloud]
  local suite=$1 flavour=${2:-} name=$1${2:+-$2} pkg p dir dl meta=linux-image-amd64
  local out=$cache/kernel-$name
  if [ -f "$out/.done" ]; then return 0; fi
  [ -z "$flavour" ] || meta=linux-image-$flavour-amd64
  log "kernel-$name: the newest ${flavour:-generic} kernel of Debian $suite"
  suite_apt "$suite" apt-get update -qq || { log "apt-get update for $suite failed"; exit 1; }
  pkg=$(suite_apt "$suite" apt-cache depends "$meta" |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ {print $2; exit}')
  [ -n "$pkg" ] || { log "no $meta in $suite"; exit 1; }
  local pkgs=("$pkg")
  for p in $(suite_apt "$suite" apt-cache depends "$pkg" |
    awk '$1 == "Depends:" && $2 ~ /^linux-(binary|modules)-[0-9]/ {print $2}'); do
    pkgs+=("$p")
  done
  dir=$cache/pkg/$pkg
  rm -rf "$dir" "$out"
  mkdir -p "$dir" "$out"
  dl=$(mktemp -d)
  chmod 755 "$dl" # apt-get download drops to user _apt
  suite_download "$suite" "$dl" "${pkgs[@]}" ||
    { log "downloading ${pkgs[*]} from $suite failed"; exit 1; }
  for p in "$dl"/*.deb; do dpkg-deb -x "$p" "$dir"; done
  rm -rf "$dl"
  local vmlinuz="" config="" mods="" m
  for m in "$dir/lib/modules" "$dir/usr/lib/modules"; do [ -d "$m" ] && mods=$m; done
  [ -n "$mods" ] || { log "no modules directory in ${pkgs[*]}"; exit 1; }
  vmlinuz=$(ls "$dir"/boot/vmlinuz-* "$mods"/*/vmlinuz 2>/dev/null | head -n 1 || true)
  [ -n "$vmlinuz" ] || { log "no vmlinuz in ${pkgs[*]}"; exit 1; }
  cp "$vmlinuz" "$out/vmlinuz"
  config=$(ls "$dir"/boot/config-* "$mods"/*/config 2>/dev/null | head -n 1 || true)
  [ -z "$config" ] || cp "$config" "$out/config"
  basename "$(ls -d "$mods"/*/ | head -n 1)" >"$out/release"
  echo "$pkg" >"$out/package"
  echo "$mods" >"$out/modules"
  touch "$out/.done"
  log "kernel-$name: $pkg ($(cat "$out/release"))"
}
# The kernel matrix's suites: a Debian suite joins the test bed here and with one TB_KERNEL line
# per kernel in matrix.c (docs/linux.md, "The kernel matrix").
matrix_suites="bullseye trixie sid"
matrix_kernels=""
[ "$l1_only" = 0 ] || matrix_suites=""
for suite in $matrix_suites; do
  suite_kernel "$suite"
  suite_kernel "$suite" cloud
  matrix_kernels="$matrix_kernels $suite $suite-cloud"
done
unpack busybox-static
busybox=$cache/pkg/busybox-static/bin/busybox

# L1 modules: KVM for AMD (QEMU's TCG emulates SVM), virtio-blk for the two data disks and 9p
# for the host's file system (nested.sh), with their dependencies in load order (from each
# module's own "depends=" in .modinfo).
gen=$cache/pkg/$(cat "$cache/kernel-generic/package")
moddir=$(ls -d "$gen"/lib/modules/*/kernel)
find_mod() { find "$moddir" -name "$1.ko" -o -name "$1.ko.xz" | head -n 1; }
declare -A seen=()
order=()
add_mod() {
  local m=${1//-/_} f deps d
  [ -n "${seen[$m]:-}" ] && return 0
  seen[$m]=1
  f=$(find_mod "$1")
  [ -n "$f" ] || f=$(find_mod "$m")
  [ -n "$f" ] || f=$(find_mod "${m//_/-}")
  [ -n "$f" ] || { log "module $1 not in $(basename "$gen")"; exit 1; }
  case $f in *.xz) xz -dc "$f" >"$cache/l1-modules/$m.ko" ;; *) cp "$f" "$cache/l1-modules/$m.ko" ;; esac
  deps=$(grep -a -o 'depends=[a-z0-9_,-]*' "$cache/l1-modules/$m.ko" | head -n 1 | cut -d= -f2)
  for d in ${deps//,/ }; do add_mod "$d"; done
  order+=("$m")
}
rm -rf "$cache/l1-modules"
mkdir -p "$cache/l1-modules"
for m in kvm-amd virtio_pci virtio_blk 9pnet_virtio 9p; do add_mod "$m"; done
printf '%s\n' "${order[@]}" >"$cache/l1-modules/modules.order"

mkcpio() { # mkcpio DIR OUT
  (cd "$1" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$2.tmp"
  mv "$2.tmp" "$2"
}

# L1 initramfs.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
r=$work/l1
mkdir -p "$r"/{bin,dev,proc,sys,tmp,modules}
cp "$busybox" "$r/bin/busybox"
ln -s busybox "$r/bin/sh"
cp "$cache"/l1-modules/*.ko "$r/modules/"
cp "$cache/l1-modules/modules.order" "$r/modules.order"
cp "$here/l1_init.sh" "$r/init"
mkcpio "$r" "$cache/l1.cpio.gz"
if [ "$l1_only" = 1 ]; then
  log "L1 ready in $cache (--l1-only: no guests for the Linux test bed)"
  exit 0
fi

# Workloads, built by Debian's gcc as a distribution would build them (docs/linux.md lists the
# flags). -fno-omit-frame-pointer: frame-pointer walks see every frame of our own code.
w=$work/bin
mkdir -p "$w"
src=$here/workloads
cc() { gcc -O1 -g -fno-omit-frame-pointer -I"$src" "$@"; }
# Four kinds of executable: static, dynamic PIE (threads), dynamic non-PIE, static PIE. The two
# non-PIE ones are linked at addresses of their own (busybox, static non-PIE too, has the
# default 0x400000), so that the guest's own account of which addresses are whose (HVTEST map
# lines) tells their samples apart.
cc -static -no-pie -Wl,-Ttext-segment=0x20000000 -o "$w/hv_busy" "$src/busy.c"
cc -static -no-pie -Wl,-Ttext-segment=0x30000000 -o "$w/hv_blip" "$src/blip.c"
cc -pie -fPIE -pthread -o "$w/hv_threads" "$src/threads.c"
cc -pie -fPIE -pthread -o "$w/hv_offcpu" "$src/offcpu.c"
cc -no-pie -Wl,-Ttext-segment=0x10000000 -o "$w/hv_libcall" "$src/libcall.c"
cc -static-pie -fPIE -o "$w/hv_syscalls" "$src/syscalls.c"
# A container's program (hvtest.plan=containers): static, so that its container's root file
# system is that one file.
cc -static -no-pie -Wl,-Ttext-segment=0x38000000 -o "$w/hv_ctwork" "$src/ctwork.c"
# At -O2, a library loaded with dlopen() while the program runs, and the program loading it.
cc2() { gcc -O2 -g -fno-omit-frame-pointer -I"$src" "$@"; }
cc2 -shared -fPIC -o "$w/libhvplug.so" "$src/plug.c"
cc2 -pie -fPIE -o "$w/hv_dlopen" "$src/dlopen.c" -ldl
# Without frame pointers, as Debian builds most programs (and its glibc): -O2's default
# -fomit-frame-pointer, unwind tables (GCC's default on x86-64). docs/cfi.md.
gcc -O2 -g -fomit-frame-pointer -I"$src" -pie -fPIE -pthread -o "$w/hv_nofp" "$src/nofp.c"
rm -rf "$cache/workloads"
cp -r "$w" "$cache/workloads" # with debug info, for --symbols in the tests

# L2 initramfs: the shared libraries the dynamic workloads need come from this (Debian) host.
r=$work/l2
mkdir -p "$r"/{bin,dev,proc,sys,tmp}
cp "$busybox" "$r/bin/busybox"
ln -s busybox "$r/bin/sh"
cp "$w"/hv_* "$r/bin/"
mkdir -p "$r/lib/hvtest"
cp "$w/libhvplug.so" "$r/lib/hvtest/"
for b in "$w"/*; do
  for l in $(ldd "$b" 2>/dev/null | grep -o '/[^ ]*' || true); do
    mkdir -p "$r$(dirname "$l")"
    cp -L "$l" "$r$l"
  done
done
# The guest's binaries as its user would have them on the host (`record --symbols`, for unwind
# tables on pages the guest never touched, docs/cfi.md): the workloads and their libraries.
rm -rf "$cache/guest-files"
mkdir -p "$cache/guest-files"
cp "$w"/hv_* "$w/libhvplug.so" "$cache/guest-files/"
find "$r/lib" "$r/lib64" "$r/usr" -type f -name '*.so*' -exec cp {} "$cache/guest-files/" \; 2>/dev/null || true
mknod -m 600 "$r/dev/console" c 5 1
mknod -m 666 "$r/dev/null" c 1 3
# brd.ko of each guest kernel (no dependencies), loaded by l2_init.sh for `uname -r`.
for k in generic cloud $matrix_kernels; do
  kmods=$(cat "$cache/kernel-$k/modules")
  rel=$(cat "$cache/kernel-$k/release")
  f=$(find "$kmods" -name brd.ko -o -name brd.ko.xz | head -n 1)
  [ -n "$f" ] || { log "brd module not in $kmods"; exit 1; }
  mkdir -p "$r/modules/$rel"
  case $f in *.xz) xz -dc "$f" >"$r/modules/$rel/brd.ko" ;; *) cp "$f" "$r/modules/$rel/brd.ko" ;; esac
  # The virtio disk's drivers (docs/virtio.md), in their load order, for hvtest.plan=disk.
  for m in virtio_ring virtio virtio_mmio virtio_blk; do
    f=$(find "$kmods" -name "$m.ko" -o -name "$m.ko.xz" | head -n 1)
    if [ -z "$f" ]; then
      # The disk scenarios boot generic and cloud; other kernels may have it built in.
      case $k in generic | cloud) log "$m module not in $kmods"; exit 1 ;; *) continue ;; esac
    fi
    case $f in *.xz) xz -dc "$f" >"$r/modules/$rel/$m.ko" ;; *) cp "$f" "$r/modules/$rel/$m.ko" ;; esac
  done
  # The virtio network card's driver and what it needs, in load order, for hvtest.plan=net
  # (docs/net.md; built in where missing).
  for m in failover net_failover virtio_net; do
    f=$(find "$kmods" -name "$m.ko" -o -name "$m.ko.xz" | head -n 1)
    [ -n "$f" ] || continue
    case $f in *.xz) xz -dc "$f" >"$r/modules/$rel/$m.ko" ;; *) cp "$f" "$r/modules/$rel/$m.ko" ;; esac
  done
  # ext4 and what it needs, in load order, for hvtest.plan=root (modules in the generic kernel,
  # built in the cloud kernel: those missing here are built in).
  for m in crc32c_generic crc16 mbcache jbd2 ext4; do
    f=$(find "$kmods" -name "$m.ko" -o -name "$m.ko.xz" | head -n 1)
    [ -n "$f" ] || continue
    case $f in *.xz) xz -dc "$f" >"$r/modules/$rel/$m.ko" ;; *) cp "$f" "$r/modules/$rel/$m.ko" ;; esac
  done
done
cp "$here/l2_init.sh" "$r/init"
mkcpio "$r" "$cache/l2.cpio.gz"
# The root file system of hvtest.plan=root (docs/virtio.md): the same tree on an ext4 image,
# marked so that its /init knows it runs from the disk, with a /data directory the guest
# writes into while it is profiled.
rm -rf "$cache/rootfs"
cp -a "$r" "$cache/rootfs"
touch "$cache/rootfs/hvtest-on-disk"
mkdir -p "$cache/rootfs/data"
# Debian's own programs as its packages ship them (this host's python3.11-minimal, xz-utils and
# sqlite3: stripped, built without frame pointers, their libraries too), for hvtest.debian=1: the
# profile of a distribution's user space with no files given to hvprof (docs/page-cache.md).
# Python finds its prefix by the landmark os.py and decodes with the encodings package.
for b in /usr/bin/python3.11 /usr/bin/xz /usr/bin/sqlite3; do
  [ -x "$b" ] || { log "$b missing (scripts/deps.sh installs it)"; exit 1; }
  cp "$b" "$cache/rootfs/bin/"
  for l in $(ldd "$b" | grep -o '/[^ ]*'); do
    mkdir -p "$cache/rootfs$(dirname "$l")"
    cp -L "$l" "$cache/rootfs$l"
  done
done
# libc6-dbg installed in the guest as dpkg installs it (its detached debug files in
# /usr/lib/debug/.build-id, of this host's glibc: the libc these programs run with): hvprof
# names libc's internal functions from the disk, with no files given (docs/user-modules.md).
dpkg-query -L libc6-dbg | while read -r f; do
  case $f in /usr/lib/debug/*) [ -f "$f" ] && install -D -m644 "$f" "$cache/rootfs$f" ;; esac
done
[ -n "$(find "$cache/rootfs/usr/lib/debug" -name '*.debug' -print -quit 2>/dev/null)" ] ||
  { log "libc6-dbg's debug files are missing (/usr/lib/debug)"; exit 1; }
mkdir -p "$cache/rootfs/usr/lib/python3.11"
cp /usr/lib/python3.11/os.py "$cache/rootfs/usr/lib/python3.11/"
cp -r /usr/lib/python3.11/encodings "$cache/rootfs/usr/lib/python3.11/"
# hvtest.plan=python (docs/python.md): Python programs of known call chains, run by this
# python3.11 and by Debian 13's python3.13 as trixie's packages ship it, with trixie's own libc,
# in a chroot at /trixie (its python3.13 needs glibc 2.38).
mkdir -p "$cache/rootfs/py"
cp "$here/workloads/chains.py" "$cache/rootfs/py/"
py313=$cache/py313
if [ ! -f "$py313/.done" ]; then
  log "python3.13: Debian 13's python3.13-minimal and its libraries"
  rm -rf "$py313"
  mkdir -p "$py313/root"
  suite_apt trixie apt-get update -qq || { log "apt-get update for trixie failed"; exit 1; }
  dl=$(mktemp -d)
  chmod 755 "$dl" # apt-get download drops to user _apt
  suite_download trixie "$dl" python3.13-minimal libpython3.13-minimal libc6 zlib1g libexpat1 ||
    { log "downloading python3.13 from trixie failed"; exit 1; }
  for p in "$dl"/*.deb; do dpkg-deb -x "$p" "$py313/root"; done
  rm -rf "$dl"
  touch "$py313/.done"
fi
t=$cache/rootfs/trixie
mkdir -p "$t/usr/bin" "$t/usr/lib/x86_64-linux-gnu" "$t/usr/lib64" "$t/py" \
  "$t/usr/lib/python3.13/lib-dynload"
ln -s usr/lib "$t/lib"
ln -s usr/lib64 "$t/lib64"
cp "$py313/root/usr/bin/python3.13" "$t/usr/bin/"
cp -L "$py313/root/usr/lib64/ld-linux-x86-64.so.2" "$t/usr/lib64/"
for l in libc.so.6 libm.so.6 libz.so.1 libexpat.so.1; do
  cp -L "$py313/root/usr/lib/x86_64-linux-gnu/$l" "$t/usr/lib/x86_64-linux-gnu/"
done
cp "$py313/root/usr/lib/python3.13/os.py" "$t/usr/lib/python3.13/"
cp -r "$py313/root/usr/lib/python3.13/encodings" "$t/usr/lib/python3.13/"
cp "$here/workloads/chains.py" "$t/py/"
# hvtest.plan=containers (docs/containers.md): Debian's runc, as this host's suite ships it
# (downloaded once), and two bundles of hv_ctwork laid out as Docker's cgroupfs driver has runc
# run containers: cgroup /docker/<64 hex>, the hostname the id's first 12 digits, a read-only
# root holding the one static program, /flags bind-mounted from /ct/flags-<name> of the root.
# The third id is the cgroup the guest moves the first container's process to.
runc_dir=$cache/runc
if [ ! -f "$runc_dir/.done" ]; then
  log "runc: Debian's runc"
  rm -rf "$runc_dir"
  mkdir -p "$runc_dir/root"
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  suite_apt "$suite" apt-get update -qq || { log "apt-get update for $suite failed"; exit 1; }
  dl=$(mktemp -d)
  chmod 755 "$dl" # apt-get download drops to user _apt
  suite_download "$suite" "$dl" runc || { log "downloading runc from $suite failed"; exit 1; }
  dpkg-deb -x "$dl"/runc_*.deb "$runc_dir/root"
  rm -rf "$dl"
  touch "$runc_dir/.done"
fi
runc=$runc_dir/root/usr/sbin/runc
cp "$runc" "$cache/rootfs/bin/runc"
for l in $(ldd "$runc" | grep -o '/[^ ]*'); do
  mkdir -p "$cache/rootfs$(dirname "$l")"
  cp -L "$l" "$cache/rootfs$l"
done
ct=$cache/rootfs/ct
mkdir -p "$ct/rootfs/bin" "$ct/rootfs/proc" "$ct/rootfs/dev" "$ct/rootfs/sys" "$ct/rootfs/flags"
cp "$w/hv_ctwork" "$ct/rootfs/bin/"
for c in a b; do
  mkdir -p "$ct/$c" "$ct/flags-$c"
  printf 'hvtest-%s' "$c" | sha256sum | cut -c1-64 >"$ct/$c/id"
  "$runc" spec --bundle "$ct/$c"
  python3 - "$ct/$c" "$c" <<'PY'
import json, sys
bundle, name = sys.argv[1:3]
cid = open(bundle + "/id").read().strip()
path = bundle + "/config.json"
spec = json.load(open(path))
spec["process"]["terminal"] = False
spec["process"]["args"] = ["/bin/hv_ctwork", "HVMS", name, "/flags/moved"]
spec["root"] = {"path": "/ct/rootfs", "readonly": True}
spec["hostname"] = cid[:12]
spec["mounts"].append({"destination": "/flags", "type": "bind",
                       "source": "/ct/flags-" + name, "options": ["rbind", "rw"]})
spec["linux"]["cgroupsPath"] = "/docker/" + cid
json.dump(spec, open(path, "w"), indent=1)
PY
done
printf 'hvtest-c' | sha256sum | cut -c1-64 >"$ct/c.id"
rm -f "$cache/root.ext4" "$cache/root.ext4.gz"
mkfs.ext4 -q -F -I 256 -L hvtest-root -d "$cache/rootfs" "$cache/root.ext4" 96M
# The same root as a cloud image is: a GPT disk whose ext4 partition also holds the generic
# kernel and the initramfs under /boot and a grub.cfg as grub-mkconfig writes it (a default of
# 0, `search --fs-uuid`, a submenu), as qcow2 with compressed clusters: booted by `--disk`
# alone (docs/disk-boot.md). The entry's command line is generic-root-qcow2's in matrix.c.
rm -f "$cache/root.qcow2"
boot_uuid=5e1f0c2a-7b3d-4e8f-9a61-0c2d4b6e8f10
release=$(cat "$cache/kernel-generic/release")
mkdir -p "$cache/rootfs/boot/grub"
cp "$cache/kernel-generic/vmlinuz" "$cache/rootfs/boot/vmlinuz-$release"
cp "$cache/l2.cpio.gz" "$cache/rootfs/boot/initrd.img-$release"
ln -sf "boot/vmlinuz-$release" "$cache/rootfs/vmlinuz"
cat >"$cache/rootfs/boot/grub/grub.cfg" <<GRUB
### BEGIN /etc/grub.d/00_header ###
if [ -s \$prefix/grubenv ]; then
  set have_grubenv=true
  load_env
fi
if [ "\${next_entry}" ] ; then
   set default="\${next_entry}"
   set next_entry=
   save_env next_entry
else
   set default="0"
fi
if [ x"\${feature_menuentry_id}" = xy ]; then
  menuentry_id_option="--id"
else
  menuentry_id_option=""
fi
function load_video {
  insmod all_video
}
set timeout=5
### END /etc/grub.d/00_header ###
### BEGIN /etc/grub.d/10_linux ###
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class os \$menuentry_id_option 'gnulinux-simple-$boot_uuid' {
	load_video
	insmod part_gpt
	insmod ext2
	search --no-floppy --fs-uuid --set=root $boot_uuid
	echo	'Loading Linux $release ...'
	linux	/boot/vmlinuz-$release console=ttyS0 reboot=k panic=-1 pci=off hvtest.plan=root hvtest.ms=1500 hvtest.root=/dev/vda1
	echo	'Loading initial ramdisk ...'
	initrd	/boot/initrd.img-$release
}
submenu 'Advanced options for Debian GNU/Linux' \$menuentry_id_option 'gnulinux-advanced-$boot_uuid' {
	menuentry 'Debian GNU/Linux, with Linux $release (recovery mode)' --class debian \$menuentry_id_option 'gnulinux-$release-recovery-$boot_uuid' {
		search --no-floppy --fs-uuid --set=root $boot_uuid
		linux	/boot/vmlinuz-$release console=ttyS0 single
		initrd	/boot/initrd.img-$release
	}
}
### END /etc/grub.d/10_linux ###
GRUB
rm -f "$cache/boot-p1.img" "$cache/boot-disk.img"
mkfs.ext4 -q -F -I 256 -U "$boot_uuid" -L hvtest-root -d "$cache/rootfs" "$cache/boot-p1.img" 160M
truncate -s 164M "$cache/boot-disk.img"
printf 'label: gpt\nstart=2048, size=327680, name=root\n' | sfdisk -q "$cache/boot-disk.img"
dd if="$cache/boot-p1.img" of="$cache/boot-disk.img" bs=512 seek=2048 conv=notrunc status=none
qemu-img convert -q -c -f raw -O qcow2 "$cache/boot-disk.img" "$cache/root.qcow2"
rm -f "$cache/boot-p1.img" "$cache/boot-disk.img"
gzip -f -1 "$cache/root.ext4" # mostly zeros: L1 unpacks it for each run
# A Debian 12 system as it is installed (debootstrap: Debian's cloud kernel, initramfs-tools,
# systemd, ifupdown with DHCP) with a web server, on a GPT qcow2 disk that boots its own
# grub.cfg entry (debian_disk.sh; docs/disk-boot.md, docs/net.md). The root is kept between
# runs of prepare.sh; the image is made again (~20 s).
mkdir -p "$cache/debian12"
log "debian12.qcow2: a Debian 12 system (debootstrap from $mirror, kept in $cache/debian12)"
bash "$here/debian_disk.sh" bookworm "$mirror" "$cache/debian12" "$cache/debian12.qcow2"
# And a Debian 13 system the same way (its 6.12 kernel, systemd 257), its web server Debian's
# nginx in front of the CGI programs (~2 min of debootstrap once).
mkdir -p "$cache/debian13"
log "debian13.qcow2: a Debian 13 system with nginx (debootstrap from $mirror, kept in $cache/debian13)"
bash "$here/debian_disk.sh" trixie "$mirror" "$cache/debian13" "$cache/debian13.qcow2" nginx
rm -rf "$cache/rootfs"
# The same with 32 MiB of incompressible padding: a large initramfs, as distributions ship.
head -c 32M /dev/urandom >"$r/padding"
mkcpio "$r" "$cache/l2-big.cpio.gz"
log "ready in $cache ($(du -sh "$cache/l1.cpio.gz" | cut -f1) L1 initramfs, $(du -sh "$cache/l2.cpio.gz" | cut -f1) guest initramfs)"
