/* One --disk value into its parts (disk_spec.h). */
#include "cli/disk_spec.h"

#include <string.h>

/* The next comma-separated part of s from *at into out (",," is a comma); false at the end. */
static bool next_part(const char *s, size_t *at, char *out, size_t cap, bool *too_long)
{
    if (!s[*at])
        return false;
    size_t n = 0;
    const char *p = s + *at;
    while (*p) {
        if (*p == ',') {
            if (p[1] != ',')
                break;
            p++; /* ",," */
        }
        if (n + 1 < cap)
            out[n++] = *p;
        else
            *too_long = true;
        p++;
    }
    out[n] = 0;
    *at = (size_t)(p - s) + (*p == ',');
    return true;
}

int disk_spec_parse(const char *arg, struct disk_spec *d, struct hv_err *err)
{
    memset(d, 0, sizeof(*d));
    size_t at = 0;
    bool too_long = false;
    if (!next_part(arg, &at, d->path, sizeof(d->path), &too_long) || !d->path[0])
        return hv_errk(err, HV_ERR_USAGE,
                       "--disk: expected FILE[,format=raw|qcow2][,readonly], got '%.64s'", arg);
    if (too_long)
        return hv_errk(err, HV_ERR_USAGE, "--disk: the path is longer than %zu bytes",
                       sizeof(d->path) - 1);
    char part[PATH_MAX + 32];
    while (next_part(arg, &at, part, sizeof(part), &too_long)) {
        if (too_long)
            return hv_errk(err, HV_ERR_USAGE, "--disk: an option longer than %zu bytes",
                           sizeof(part) - 1);
        if (!strcmp(part, "readonly")) {
            d->readonly = true;
        } else if (!strncmp(part, "format=", 7)) {
            if (!image_format_parse(part + 7, &d->format))
                return hv_errk(err, HV_ERR_USAGE,
                               "--disk: format=%.32s: hvprof reads format=raw and format=qcow2",
                               part + 7);
        } else if (!strncmp(part, "backing-format=", 15)) {
            if (strcmp(part + 15, "qcow2") && strcmp(part + 15, "qcow"))
                return hv_errk(err, HV_ERR_USAGE,
                               "--disk: backing-format=%.32s: hvprof reads qcow2 backing files "
                               "only",
                               part + 15);
            strcpy(d->backing_format, part + 15);
        } else if (!strncmp(part, "backing-dir=", 12) && part[12]) {
            if (strlen(part + 12) >= sizeof(d->backing_dir))
                return hv_errk(err, HV_ERR_USAGE, "--disk: backing-dir is too long");
            strcpy(d->backing_dir, part + 12);
        } else {
            return hv_errk(err, HV_ERR_USAGE,
                           "--disk: unknown option '%.64s' (format=raw|qcow2, readonly, "
                           "backing-format=qcow2, backing-dir=DIR; a comma in the path is ',,')",
                           part);
        }
    }
    if (d->format == IMAGE_FORMAT_RAW && (d->backing_format[0] || d->backing_dir[0]))
        return hv_errk(err, HV_ERR_USAGE,
                       "--disk: backing-format and backing-dir are for qcow2 images, not "
                       "format=raw");
    return 0;
}
