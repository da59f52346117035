/* Disks settled before boot: formats pinned, chains resolved, one note each (disk_notes.h). */
#include "cli/disk_notes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/run_opts.h"
#include "vmm/vm.h"
#include "vmm/qcow/qcow_chain.h"

static int keep_input(struct run_opts *o, const char *path, struct hv_err *err)
{
    if (o->ndisk_files == RUN_MAX_DISK_FILES)
        return 0; /* cannot happen: VM_MAX_DISKS chains of QCOW_MAX_CHAIN at most */
    char *p = strdup(path);
    if (!p)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    o->disk_files[o->ndisk_files++] = p;
    return 0;
}

int run_disks_prepare(struct run_opts *o, FILE *out, struct hv_err *err)
{
    const char *prog = o->prog ? o->prog : "hvprof";
    for (unsigned i = 0; i < o->ndisks; i++) {
        struct vm_disk *d = &o->disks[i];
        char name[8];
        snprintf(name, sizeof(name), "vd%c", 'a' + i);
        int fd = open(d->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
            return hv_errf_errno(err, "--disk %s", d->path);
        int rc = image_format_decide(fd, d->path, &d->image, err);
        close(fd);
        if (rc < 0)
            return hv_err_prefix(err, "--disk");
        if (keep_input(o, d->path, err) < 0)
            return -1;
        if (d->image.probed && out)
            fprintf(out,
                    "%s: disk %s %s: no format given, probed as %s%s (give ,format=%s to say "
                    "so)\n",
                    prog, name, d->path, image_format_name(d->image.format),
                    d->image.format == IMAGE_FORMAT_RAW
                        ? "; the guest may not write a first sector that would probe as "
                          "another format"
                        : "",
                    image_format_name(d->image.format));
        bool overlay = d->mode == VIRTIO_BLK_OVERLAY;
        if (d->image.format == IMAGE_FORMAT_QCOW2) {
            struct qcow_chain c;
            if (qcow_chain_resolve(&c, d->path, &d->image, err) < 0)
                return hv_err_prefix(err, "--disk");
            for (unsigned k = 1; k < c.n; k++)
                if (keep_input(o, c.f[k].path, err) < 0) {
                    qcow_chain_close(&c);
                    return -1;
                }
            if (c.n > 1 && out) {
                char chain[2048];
                qcow_chain_describe(&c, chain, sizeof(chain));
                fprintf(out, "%s: disk %s backing chain: %s\n", prog, name, chain);
            }
            qcow_chain_close(&c);
            overlay = d->mode != VIRTIO_BLK_RO; /* hvprof never writes a qcow2 image */
        }
        if (overlay && out)
            fprintf(out,
                    "%s: disk %s %s: %s; the guest's writes go to a private overlay and are "
                    "dropped when hvprof exits (its flushes make nothing durable)\n",
                    prog, name, d->path,
                    d->image.format == IMAGE_FORMAT_QCOW2 ? "a qcow2 image is never written"
                                                          : "readonly: the image is not written");
    }
    return 0;
}

void run_disks_warnings(const struct vm *vm, const struct run_opts *o, FILE *out)
{
    const char *prog = o->prog ? o->prog : "hvprof";
    for (unsigned i = 0; vm && i < vm->disks.n; i++) {
        const struct virtio_blk *b = &vm->disks.v[i].blk;
        if (b->sector0_refused)
            fprintf(out,
                    "%s: disk vd%c %s: the guest wrote a first sector that would make the image "
                    "probe as %s, %llu time(s): refused with an I/O error, the image unchanged "
                    "(its format was probed as raw; give ,format=raw if the guest may)\n",
                    prog, 'a' + i, o->disks[i].path, b->sector0_format,
                    (unsigned long long)b->sector0_refused);
    }
}
