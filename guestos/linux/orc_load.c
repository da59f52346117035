#include "guestos/linux/orc_load.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

void lx_orc_free(struct lx_orc *o)
{
    if (!o)
        return;
    lx_orc_table_free(&o->vmlinux);
    free(o);
}

static bool choose_layout(const struct lx_kernel *k, struct lx_orc_layout *l, char *why,
                          size_t why_len)
{
    char btf_why[128] = "no BTF";
    if (k->btf_types && lx_orc_layout_from_btf(&k->btf, l, btf_why, sizeof(btf_why)))
        return true;
    char rel_why[128];
    if (lx_orc_layout_from_release(k->vmci.osrelease, l, rel_why, sizeof(rel_why)))
        return true;
    snprintf(why, why_len, "ORC layout unknown: %s; %s", btf_why, rel_why);
    return false;
}

struct lx_orc *lx_orc_load(const struct lx_kernel *k, char *how, size_t how_len)
{
    uint64_t ip0 = k->sym.start_orc_ip, ip1 = k->sym.stop_orc_ip, e0 = k->sym.start_orc;
    if (!ip0 || !e0 || ip1 <= ip0 || (ip1 - ip0) % 4) {
        snprintf(how, how_len,
                 "no ORC tables in kallsyms (a kernel without CONFIG_UNWINDER_ORC or "
                 "CONFIG_KALLSYMS_ALL): frame pointers");
        return NULL;
    }
    size_t n = (size_t)((ip1 - ip0) / 4);
    if (n > LX_ORC_MAX_ENTRIES) {
        snprintf(how, how_len, "ORC: %zu entries, more than %u", n, LX_ORC_MAX_ENTRIES);
        return NULL;
    }
    struct lx_orc *o = calloc(1, sizeof(*o));
    if (!o) {
        snprintf(how, how_len, "ORC: out of memory");
        return NULL;
    }
    if (!choose_layout(k, &o->layout, how, how_len))
        goto fail;
    /* The image is physically contiguous: both arrays are read in place, then copied by the
     * build (the guest may write them; the copy is what the exit path uses). */
    const int32_t *ips = lx_kimage_ptr(&k->img, ip0, n * 4);
    const uint8_t *raw = lx_kimage_ptr(&k->img, e0, n * LX_ORC_ENTRY_SIZE);
    if (!ips || !raw) {
        snprintf(how, how_len, "ORC tables at 0x%" PRIx64 " and 0x%" PRIx64 " cannot be read",
                 ip0, e0);
        goto fail;
    }
    char why[128];
    if (lx_orc_table_build(&o->vmlinux, ips, ip0, raw, n, &o->layout, k->text_lo,
                           k->text_hi + 4096, why, sizeof(why)) < 0) {
        snprintf(how, how_len, "ORC: %s", why);
        goto fail;
    }
    const struct lx_orc_table *t = &o->vmlinux;
    /* A kernel ends each stretch of code with a terminator: a minority of entries. A wrong
     * layout reads most CALL entries as undefined or as fields no kernel writes. */
    if (t->undefined > t->n / 2 || t->bad > t->n / 100) {
        snprintf(how, how_len,
                 "ORC: %zu entries do not decode with %s (%zu undefined, %zu impossible)", t->n,
                 o->layout.how, t->undefined, t->bad);
        goto fail;
    }
    snprintf(how, how_len, "ORC: %zu entries for 0x%" PRIx64 "-0x%" PRIx64 " (%s)", t->n, t->lo,
             t->hi, o->layout.how);
    return o;
fail:
    lx_orc_free(o);
    return NULL;
}
