#include "cli/disk_boot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/run_opts.h"
#include "diskfs/diskfs.h"

/* Whether the command line already sends the console to the first serial port. */
static bool has_serial_console(const char *cmdline)
{
    for (const char *p = cmdline; (p = strstr(p, "console=ttyS0")); p++)
        if ((p == cmdline || p[-1] == ' ') && (p[13] == 0 || p[13] == ' ' || p[13] == ','))
            return true;
    return false;
}

int disk_boot_load(struct run_opts *o, struct hv_err *err)
{
    struct disk_boot *d = calloc(1, sizeof(*d));
    if (!d)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    const char *images[VM_MAX_DISKS];
    struct image_opts how[VM_MAX_DISKS];
    for (unsigned i = 0; i < o->ndisks; i++) {
        images[i] = o->disks[i].path;
        how[i] = o->disks[i].image;
    }
    struct diskfs fs;
    if (diskfs_open(&fs, images, how, o->ndisks, err) < 0) {
        free(d);
        return hv_err_prefix(err, "--disk");
    }
    int rc = diskfs_boot_find(&fs, o->boot_entry, &d->b, err);
    diskfs_close(&fs);
    if (rc < 0) {
        free(d);
        return hv_err_prefix(err, "--disk %s with no --kernel: its boot entry", images[0]);
    }
    snprintf(d->desc, sizeof(d->desc), "%s: '%s'", images[0], d->b.title);
    /* hvprof's console is the serial port: without console=ttyS0 the guest's kernel would
     * print nowhere hvprof shows (QEMU users add it to a cloud image's command line too). */
    bool serial = has_serial_console(d->b.cmdline);
    if (!serial) {
        size_t n = strlen(d->b.cmdline);
        snprintf(d->b.cmdline + n, sizeof(d->b.cmdline) - n, " console=ttyS0");
    }
    if (!o->cmdline)
        o->cmdline = d->b.cmdline;
    fprintf(stderr,
            "%s: booting '%s' from %s: %s (%zu KiB), %u initrd(s) (%zu KiB), command line%s: %s\n",
            o->prog, d->b.title, d->b.menu, d->b.kernel_path, d->b.kernel_size >> 10, d->b.ninitrd,
            d->b.initrd_size >> 10,
            o->cmdline != d->b.cmdline ? " (--cmdline's)"
            : serial                   ? ""
                                       : " (console=ttyS0 added)",
            o->cmdline);
    o->disk_boot = d;
    return 0;
}
