#include "guestos/tests/capture_load.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int capture_load(const char *path, struct captured *c, struct hv_err *err)
{
    memset(c, 0, sizeof(*c));
    gmem_init(&c->mem);
    gzFile f = gzopen(path, "rb");
    if (!f)
        return hv_errf(err, "%s: cannot open", path);
    char magic[8];
    uint32_t nslots, npages;
    int rc = -1;
    if (gzread(f, magic, 8) != 8 || memcmp(magic, LX_CAPTURE_MAGIC, 8) ||
        gzread(f, &nslots, 4) != 4 || gzread(f, &npages, 4) != 4 || nslots == 0 ||
        nslots > GMEM_MAX_SLOTS) {
        hv_errf(err, "%s: not a capture", path);
        goto out;
    }
    for (uint32_t i = 0; i < nslots; i++) {
        uint64_t range[2];
        if (gzread(f, range, 16) != 16 || range[1] == 0 || range[1] > (4ull << 30)) {
            hv_errf(err, "%s: bad RAM slot %" PRIu32, path, i);
            goto out;
        }
        /* calloc of this size maps fresh zero pages: the pages not captured stay untouched
         * (and the VMCOREINFO scan skips them, as it skips RAM a guest never wrote). */
        c->ram[i] = calloc(1, range[1]);
        c->size[i] = range[1];
        if (!c->ram[i]) {
            hv_errf(err, "%s: out of memory", path);
            goto out;
        }
        if (gmem_add(&c->mem, range[0], range[1], c->ram[i], err) < 0)
            goto out;
    }
    for (uint32_t p = 0; p < npages; p++) {
        uint64_t gpa;
        uint8_t *host = gzread(f, &gpa, 8) == 8 ? gmem_ptr(&c->mem, gpa, 4096) : NULL;
        if (!host || gzread(f, host, 4096) != 4096) {
            hv_errf(err, "%s: page %" PRIu32 " missing or outside RAM", path, p);
            goto out;
        }
    }
    c->npages = npages;
    rc = 0;
out:
    gzclose(f);
    if (rc < 0)
        capture_free(c);
    return rc;
}

void capture_free(struct captured *c)
{
    for (unsigned i = 0; i < GMEM_MAX_SLOTS; i++) {
        free(c->ram[i]);
        c->ram[i] = NULL;
    }
}
