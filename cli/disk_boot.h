/* `--disk IMAGE` with no --kernel: boot the disk's own boot entry (docs/disk-boot.md). The
 * disks' file systems are read (diskfs), the boot menu found and its default entry (or
 * --boot-entry's) chosen, and its kernel and initrds read into memory; one note says what. */
#pragma once

#include "common/err.h"
#include "diskfs/boot.h"

struct run_opts;

struct disk_boot {
    struct diskfs_boot b;
    char desc[320]; /* "debian.qcow2: 'Debian GNU/Linux' (/boot/grub/grub.cfg on ...)" */
};

/* Fill o->disk_boot (and o->cmdline unless --cmdline was given) from o's disks. It lives as
 * long as the command (its description names the guest in the recording). */
int disk_boot_load(struct run_opts *o, struct hv_err *err);
