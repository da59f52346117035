/* QEMU's own consistency check of one image of the chain (`qemu-img check`, a process of its
 * own) before libqcow reads it: libqcow trusts the header and tables more than a hostile image
 * deserves (qcow_image_fuzz found a heap overflow in its reads of an image whose header claims
 * an impossible size, which QEMU refuses to open). Each image alone (its backing file not
 * opened: the chain is walked by qcow_image.c, with its loops refused first, as a check of a
 * looping chain would not end), within QCOW_CHECK_SECONDS. Exit status 0 (clean) or 3 (leaked
 * clusters: space lost, data intact) passes; 1 (not checked) and 2 (corrupt) refuse, with
 * QEMU's words (its standard error). Its report (`--output=json`, standard output) also says
 * how many clusters are compressed, which decides whether decompressed clusters are kept
 * (cluster_cache.h). */
#include "vmm/qcow/qemu_check.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "vmm/qcow/qemu_img.h"

/* QEMU's JSON report's "compressed-clusters" (qapi/block-core.json, ImageCheck). */
static uint64_t compressed_clusters(const char *json)
{
    const char *k = strstr(json, "\"compressed-clusters\"");
    if (!k)
        return 0;
    k = strchr(k, ':');
    return k ? strtoull(k + 1, NULL, 10) : 0;
}

/* QEMU's reason: the first line of its standard error ("qemu-img: Could not open
 * 'json:{...}': Image is too big": what follows the name), else of its report. */
static int refused(const char *path, int status, char *out, struct hv_err *err)
{
    out[strcspn(out, "\n")] = 0;
    const char *why = strstr(out, "}': ")              ? strstr(out, "}': ") + 4
                      : strncmp(out, "qemu-img: ", 10) ? out
                                                       : out + 10;
    return hv_errk(err, HV_ERR_CORRUPT, "%s: QEMU finds the image %s%s%.200s", path,
                   WIFEXITED(status) && WEXITSTATUS(status) == 2 ? "corrupt" : "unreadable",
                   why[0] ? ": " : "", why);
}

int qemu_check(const char *path, uint64_t *compressed, struct hv_err *err)
{
    *compressed = 0;
    /* The image alone, its backing set to null. */
    char spec[2 * PATH_MAX + 128];
    if (qemu_img_spec(path, false, spec, sizeof(spec), err) < 0)
        return -1;
    /* -U: the image's locks are judged by the block device (image_lock.h), not here. */
    char *argv[] = {"qemu-img", "check", "--output=json", "-U", spec, NULL};
    struct qemu_img_out r;
    if (qemu_img_run(argv, path, QCOW_CHECK_SECONDS, 65536, &r, err) < 0)
        return -1;
    int rc = 0;
    if (WIFEXITED(r.status) && (WEXITSTATUS(r.status) == 0 || WEXITSTATUS(r.status) == 3))
        *compressed = compressed_clusters(r.out);
    else
        rc = refused(path, r.status, r.errtext[0] ? r.errtext : r.out, err);
    qemu_img_out_free(&r);
    return rc;
}
