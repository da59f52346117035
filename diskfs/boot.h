/* Boot a disk the way its firmware and boot loader would, without either (docs/disk-boot.md):
 * the disk's partitions and file systems (diskfs.h), its boot menu (GRUB's grub.cfg, or Boot
 * Loader Specification entries: boot_menu.h) from the ext2/3/4 file system that holds it, the
 * default entry (or the one asked for), and that entry's kernel, initrds and command line read
 * from the file system its paths are on. Everything read is bounded (DISKFS_BOOT_MAX_*). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "diskfs/boot_menu.h"
#include "diskfs/diskfs.h"

#define DISKFS_BOOT_MAX_KERNEL (256u << 20)
#define DISKFS_BOOT_MAX_INITRD (1u << 30)  /* all of an entry's initrds together */
#define DISKFS_BOOT_MAX_CONFIG (4u << 20)  /* grub.cfg */
#define DISKFS_BOOT_MAX_ENTRY  (64u << 10) /* a BLS entry, grubenv */

struct diskfs_boot {
    char title[128];
    char menu[200]; /* where the menu was: "/boot/grub/grub.cfg on disk 0 partition 1" */
    char kernel_path[BOOT_MENU_PATH];
    char where[48]; /* the volume the kernel and initrds came from */
    uint8_t *kernel;
    size_t kernel_size;
    uint8_t *initrd; /* the entry's initrds one after the other, each padded to 4 bytes
                      * as GRUB's loader does; NULL when it has none */
    size_t initrd_size;
    unsigned ninitrd;
    char cmdline[BOOT_MENU_OPTIONS + BOOT_MENU_PATH + 16];
    char entries[2048]; /* the menu, "  0  Debian GNU/Linux" lines, for messages */
};

/* Find the boot menu on d's volumes (the first disk's first, in order), choose `want` or its
 * default, and read the entry's files. -1 with err saying what was looked for and where. */
int diskfs_boot_find(struct diskfs *d, const char *want, struct diskfs_boot *out,
                     struct hv_err *err);
void diskfs_boot_free(struct diskfs_boot *b);
