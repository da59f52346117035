#include "guestos/linux/orc_load.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/linux/kmodules.h"

void lx_orc_free(struct lx_orc *o)
{
    if (!o)
        return;
    lx_orc_table_free(&o->vmlinux);
    free(o); /* module tables and sets belong to their loader (guestos/linux/linux.c) */
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
        snprintf(how, how_len, "ORC tables at 0x%" PRIx64 " and 0x%" PRIx64 " cannot be read", ip0,
                 e0);
        goto fail;
    }
    char why[128];
    if (lx_orc_table_build(&o->vmlinux, ips, ip0, raw, n, &o->layout, k->text_lo, k->text_hi + 4096,
                           why, sizeof(why)) < 0) {
        snprintf(how, how_len, "ORC: %s", why);
        goto fail;
    }
    const struct lx_orc_table *t = &o->vmlinux;
    /* A kernel ends each stretch of code with a terminator: a minority of entries. A wrong
     * layout reads most CALL entries as undefined or as fields no kernel writes. The register
     * numbering is not in BTF: with 6.x's, 7.2's table names PREV_SP (its 8) as BP_INDIRECT
     * for the frame pointer, which no entry does; then 7.x's numbering is tried. */
    if (t->bad > t->n / 100) {
        struct lx_orc_layout seven = o->layout;
        seven.regs = LX_ORC_REGS_7;
        struct lx_orc_table t7;
        if (lx_orc_table_build(&t7, ips, ip0, raw, n, &seven, k->text_lo, k->text_hi + 4096, why,
                               sizeof(why)) == 0) {
            if (t7.bad < t->bad) {
                lx_orc_table_free(&o->vmlinux);
                o->vmlinux = t7;
                o->layout = seven;
                size_t len = strlen(o->layout.how);
                snprintf(o->layout.how + len, sizeof(o->layout.how) - len,
                         ", 7.x register numbers");
            } else {
                lx_orc_table_free(&t7);
            }
        }
    }
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

/* A module of ~20,000 entries (kvm) is 200 KiB of tables; a count past this is not a module's. */
#define LX_ORC_MODULE_MAX_ENTRIES (1u << 20)

int lx_orc_load_module(struct lx_kmods *r, const struct lx_kmod *m,
                       const struct lx_orc_layout *layout, struct lx_orc_table *t, char *why,
                       size_t why_len)
{
    const struct lx_kmod_layout *l = &r->lay;
    uint32_t n;
    uint64_t ips_va, raw_va;
    if (!l->orc_known) {
        snprintf(why, why_len, "BTF: no ORC tables in struct mod_arch_specific");
        return -1;
    }
    lx_kread_forget(&r->kr);
    if (!lx_kread(&r->kr, m->addr + l->orc_num, &n, 4) ||
        !lx_kread(&r->kr, m->addr + l->orc_ip, &ips_va, 8) ||
        !lx_kread(&r->kr, m->addr + l->orc, &raw_va, 8)) {
        snprintf(why, why_len, "%s: struct module cannot be read", m->name);
        return -1;
    }
    if (n == 0 || n > LX_ORC_MODULE_MAX_ENTRIES) {
        snprintf(why, why_len, "%s: %" PRIu32 " ORC entries", m->name, n);
        return -1;
    }
    int32_t *ips = malloc((size_t)n * 4);
    uint8_t *raw = malloc((size_t)n * LX_ORC_ENTRY_SIZE);
    int rc = -1;
    if (!ips || !raw)
        snprintf(why, why_len, "%s: out of memory for %" PRIu32 " ORC entries", m->name, n);
    else if (!lx_kread(&r->kr, ips_va, ips, (size_t)n * 4) ||
             !lx_kread(&r->kr, raw_va, raw, (size_t)n * LX_ORC_ENTRY_SIZE))
        snprintf(why, why_len, "%s: its ORC tables cannot be read", m->name);
    else
        rc = lx_orc_table_build(t, ips, ips_va, raw, n, layout, m->text, m->text + m->text_size,
                                why, why_len);
    free(ips);
    free(raw);
    return rc;
}
