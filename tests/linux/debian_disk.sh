#!/usr/bin/env bash
# A Debian system disk as a cloud image is (docs/disk-boot.md, docs/net.md): debootstrap's
# root of SUITE with Debian's own kernel (cloud), initramfs-tools and systemd, on an ext4
# partition of a GPT disk, with a grub.cfg entry as grub-mkconfig writes it, as a compressed
# qcow2: booted by `hvprof record --disk IMAGE` alone. In it: DHCP on eth0 (ifupdown), a web
# server on port 80 with a page and a CGI program that computes, a CGI that powers the system
# off, and a unit that says on the console when multi-user.target is reached ("HVTEST systemd
# multi-user ADDRESS web=SERVER").
# The web server (WEB): busybox (busybox httpd on port 80, a systemd unit), or nginx (Debian's
# nginx and its own unit on port 80, serving the pages and passing /cgi-bin/ to busybox httpd on
# 127.0.0.1:8081, as a reverse proxy in front of an application server does).
# Usage: debian_disk.sh SUITE MIRROR WORKDIR OUT.qcow2 [WEB]
#   (also writes OUT's entry beside it: NAME.cmdline, NAME.vmlinuz, NAME.initrd)
set -euo pipefail
suite=${1:?}
mirror=${2:?}
work=${3:?}
out=${4:?}
web=${5:-busybox}
root=$work/root
uuid=6b1e2c3d-4f50-4a61-8b72-9c8d0e1f2a3b
case $web in
  busybox) extra="" ;;
  nginx) extra=",nginx" ;;
  *) echo "debian_disk.sh: web server '$web': busybox or nginx" >&2; exit 2 ;;
esac
# The root is kept between runs (.done names its web server; an empty one is busybox's).
made=$(cat "$root/.done" 2>/dev/null || echo none)
[ -n "$made" ] || made=busybox
if [ "$made" != "$web" ]; then
  rm -rf "$root"
  debootstrap --variant=minbase \
    --include=systemd-sysv,udev,linux-image-cloud-amd64,initramfs-tools,kmod,iproute2,busybox,ifupdown,isc-dhcp-client$extra \
    "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  rm -f "$root"/var/cache/apt/archives/*.deb
  echo "$web" >"$root/.done"
fi
release=$(basename "$(ls "$root"/boot/vmlinuz-* | head -n 1)" | sed 's/^vmlinuz-//')
# The initramfs Debian's kernel package made finds the virtio-MMIO disk: virtio_mmio and
# virtio_blk are in it (initramfs-tools' MODULES=most).
echo "UUID=$uuid / ext4 errors=remount-ro 0 1" >"$root/etc/fstab"
echo "hvtest-$suite" >"$root/etc/hostname"
printf 'auto lo\niface lo inet loopback\nauto eth0\niface eth0 inet dhcp\n' >"$root/etc/network/interfaces"
mkdir -p "$root/srv/www/cgi-bin"
echo "HVTEST-PAGE" >"$root/srv/www/index.html"
cat >"$root/srv/www/cgi-bin/work" <<'CGI'
#!/bin/sh
i=0
while [ $i -lt 3000 ]; do i=$((i + 1)); done
printf 'Content-Type: text/plain\r\n\r\nHVTEST-CGI %s\n' "$i"
CGI
cat >"$root/srv/www/cgi-bin/stop" <<'CGI'
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\nstopping\n'
systemctl --no-block poweroff
CGI
chmod +x "$root/srv/www/cgi-bin/work" "$root/srv/www/cgi-bin/stop"
listen=80
if [ "$web" = nginx ]; then
  listen=127.0.0.1:8081
  cat >"$root/etc/nginx/sites-available/default" <<'NGINX'
server {
	listen 80 default_server;
	root /srv/www;
	index index.html;
	location /cgi-bin/ {
		proxy_pass http://127.0.0.1:8081;
	}
}
NGINX
fi
cat >"$root/etc/systemd/system/hvtest-web.service" <<UNIT
[Unit]
Description=hvprof test bed web server
After=network-online.target
[Service]
ExecStart=/bin/busybox httpd -f -p $listen -h /srv/www
[Install]
WantedBy=multi-user.target
UNIT
cat >"$root/etc/systemd/system/hvtest-up.service" <<UNIT
[Unit]
Description=hvprof test bed: multi-user.target reached
After=multi-user.target hvtest-web.service$([ "$web" = nginx ] && echo " nginx.service")
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "HVTEST systemd multi-user \$(ip -4 -o addr show eth0 | tr -s " " | cut -d" " -f4) web=$web" >/dev/console'
[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/hvtest-web.service "$root/etc/systemd/system/multi-user.target.wants/"
ln -sf /etc/systemd/system/hvtest-up.service "$root/etc/systemd/system/multi-user.target.wants/"
# The command line of its boot entry, and the kernel and initrd it names, also beside the image
# (OUT's name with .cmdline, .vmlinuz, .initrd): QEMU/KVM boots the same system with them, the
# reference the recorded boots are compared with (docs/disk-boot.md).
args="root=UUID=$uuid ro console=ttyS0 net.ifnames=0 reboot=k panic=-1"
echo "$args" >"${out%.qcow2}.cmdline"
cp "$root/boot/vmlinuz-$release" "${out%.qcow2}.vmlinuz"
cp "$root/boot/initrd.img-$release" "${out%.qcow2}.initrd"
mkdir -p "$root/boot/grub"
cat >"$root/boot/grub/grub.cfg" <<GRUB
if [ "\${next_entry}" ] ; then
   set default="\${next_entry}"
else
   set default="0"
fi
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class os \$menuentry_id_option 'gnulinux-simple-$uuid' {
	insmod part_gpt
	insmod ext2
	search --no-floppy --fs-uuid --set=root $uuid
	linux	/boot/vmlinuz-$release $args
	initrd	/boot/initrd.img-$release
}
GRUB
size_mb=$(($(du -sm "$root" | cut -f1) * 13 / 10 + 64))
rm -f "$work/p1.img" "$work/disk.img"
mkfs.ext4 -q -F -U "$uuid" -d "$root" "$work/p1.img" "${size_mb}M" >/dev/null
truncate -s $((size_mb + 4))M "$work/disk.img"
printf 'label: gpt\nstart=2048, size=%d, name=root\n' $((size_mb * 2048)) | sfdisk -q "$work/disk.img"
dd if="$work/p1.img" of="$work/disk.img" bs=1M seek=1 conv=notrunc status=none
qemu-img convert -q -c -f raw -O qcow2 "$work/disk.img" "$out"
rm -f "$work/p1.img" "$work/disk.img"
