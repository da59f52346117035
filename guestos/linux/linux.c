#include "guestos/linux/linux.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/generic/generic.h"
#include "guestos/linux/kernel.h"
#include "guestos/linux/kmodules.h"
#include "guestos/linux/task.h"

enum lx_state { LX_SEARCHING, LX_FOUND, LX_FAILED };

/* A look can catch the kernel half-way through writing VMCOREINFO (crash_save_vmcoreinfo_init
 * appends line by line, then copies the note), and the guest runs while the tables are read:
 * a failure is final only when it repeats. */
#define LX_MAX_FAILED_LOOKS 3

struct lx_layer {
    enum lx_state state;
    struct lx_kernel *k;
    struct guestos_kernel desc;
    struct guestos_symbol *syms;
    struct hv_err failure;
    unsigned failed_looks;
    /* Kernel modules (drain thread): the reader once the kernel is described, or why not. */
    struct lx_kmods kmods;
    bool kmods_ok;
    char kmods_why[160];
    /* Published once by the drain thread (release), read at every exit (acquire). */
    _Atomic(struct lx_task_reader *) tasks;
};

struct lx_layer *lx_layer_new(void)
{
    struct lx_layer *l = calloc(1, sizeof(*l));
    if (l && !(l->k = lx_kernel_new())) {
        free(l);
        l = NULL;
    }
    return l;
}

static void linux_close(struct guestos *os)
{
    struct lx_layer *l = os->priv;
    if (!l)
        return;
    lx_kernel_free(l->k);
    free(atomic_load(&l->tasks));
    free(l->syms);
    free(l);
    os->priv = NULL;
}

static int describe(struct lx_layer *l, struct hv_err *err)
{
    const struct lx_kernel *k = l->k;
    l->syms = calloc(k->nsyms, sizeof(*l->syms));
    if (!l->syms)
        return hv_errf(err, "linux: out of memory for %zu kernel symbols", k->nsyms);
    for (size_t i = 0; i < k->nsyms; i++)
        l->syms[i] = (struct guestos_symbol){.addr = k->syms[i].addr,
                                             .name = lx_ksym_name(k, &k->syms[i]),
                                             .name_len = k->syms[i].name_len,
                                             .type = k->syms[i].type};
    struct guestos_kernel *d = &l->desc;
    snprintf(d->release, sizeof(d->release), "%s", k->vmci.osrelease);
    if (k->vmci.has_build_id) {
        memcpy(d->build_id, k->vmci.build_id, sizeof(k->vmci.build_id));
        d->build_id_len = sizeof(k->vmci.build_id);
    }
    d->kaslr_offset = k->kaslr_offset;
    d->text_start = k->text_lo;
    d->text_end = k->text_hi;
    d->syms = l->syms;
    d->nsyms = k->nsyms;
    snprintf(d->how, sizeof(d->how),
             "VMCOREINFO at guest-physical 0x%" PRIx64 " (%u copies), kallsyms: %" PRIu32
             " symbols, %s; %s",
             k->vmci.gpa, k->vmci.copies, k->ks.nsyms, lx_kallsyms_mode_name(k->ks.mode),
             k->btf_note);
    l->kmods_ok = lx_kmods_init(&l->kmods, k, k->img.mem, l->kmods_why, sizeof(l->kmods_why)) == 0;
    struct lx_task_reader *r = lx_task_reader_build(k, d->tasks, sizeof(d->tasks));
    if (r)
        atomic_store_explicit(&l->tasks, r, memory_order_release);
    d->tasks_known = r != NULL;
    return 0;
}

static int linux_discover_kernel(struct guestos *os, const struct gmem *mem,
                                 const struct guestos_kernel **out, struct hv_err *err)
{
    struct lx_layer *l = os->priv;
    if (l->state == LX_FOUND)
        return 0;
    if (l->state == LX_FAILED) {
        if (err)
            *err = l->failure;
        return -1;
    }
    int rc = lx_kernel_discover(l->k, mem, &l->failure);
    if (rc == 1)
        rc = describe(l, &l->failure) < 0 ? -1 : 1;
    if (rc < 0 && ++l->failed_looks < LX_MAX_FAILED_LOOKS)
        return 0; /* look again later */
    if (rc < 0) {
        l->state = LX_FAILED;
        if (err)
            *err = l->failure;
        return -1;
    }
    if (rc == 1) {
        l->state = LX_FOUND;
        *out = &l->desc;
    }
    return rc;
}

/* Until the kernel is described, and where its task cannot be read, the generic identity
 * stands. */
static void linux_identify_task(const struct guestos *os, struct guestos_vcpu *vc,
                                struct gw_walker *w, struct guestos_ident *out)
{
    const struct lx_layer *l = os->priv;
    const struct lx_task_reader *r = atomic_load_explicit(&l->tasks, memory_order_acquire);
    if (r)
        lx_task_read(r, vc, w, out);
    else if (w->snap.cpl == 0 && w->snap.gs_base)
        vc->kernel_gs_seen = w->snap.gs_base; /* for the first user-mode stop after discovery */
}

static int linux_kernel_modules(struct guestos *os, const struct gmem *mem,
                                struct guestos_kmodule *out, size_t max, struct hv_err *err)
{
    struct lx_layer *l = os->priv;
    if (l->state != LX_FOUND)
        return hv_errf(err, "the kernel is not described yet");
    if (!l->kmods_ok)
        return hv_errf(err, "%s", l->kmods_why);
    l->kmods.kr.mem = mem;
    enum { BATCH = 64 };
    struct lx_kmod batch[BATCH];
    struct lx_kmod *m = max <= BATCH ? batch : calloc(max, sizeof(*m));
    if (!m)
        return hv_errf(err, "out of memory");
    int n = lx_kmods_list(&l->kmods, m, max, err);
    for (int i = 0; i < n; i++) {
        out[i] = (struct guestos_kmodule){.text_start = m[i].text,
                                          .text_end = m[i].text + m[i].text_size,
                                          .handle = {m[i].addr, m[i].kallsyms}};
        snprintf(out[i].name, sizeof(out[i].name), "%s", m[i].name);
    }
    if (m != batch)
        free(m);
    return n;
}

struct sym_relay {
    guestos_symbol_fn fn;
    void *ctx;
};

static int relay_symbol(void *ctx, uint64_t addr, char type, const char *name, size_t len)
{
    const struct sym_relay *r = ctx;
    struct guestos_symbol s = {.addr = addr, .name = name, .name_len = (uint16_t)len, .type = type};
    return r->fn(r->ctx, &s);
}

static long linux_kernel_module_symbols(struct guestos *os, const struct gmem *mem,
                                        const struct guestos_kmodule *gm, guestos_symbol_fn fn,
                                        void *ctx, struct hv_err *err)
{
    struct lx_layer *l = os->priv;
    if (!l->kmods_ok)
        return hv_errf(err, "%s", l->kmods_why);
    l->kmods.kr.mem = mem;
    struct lx_kmod m = {.addr = gm->handle[0],
                        .text = gm->text_start,
                        .text_size = gm->text_end - gm->text_start,
                        .kallsyms = gm->handle[1]};
    snprintf(m.name, sizeof(m.name), "%.*s", LX_KMOD_NAME_LEN, gm->name);
    struct sym_relay r = {fn, ctx};
    return lx_kmods_symbols(&l->kmods, &m, relay_symbol, &r, err);
}

const struct guestos_ops guestos_linux_ops = {
    .name = "linux",
    .identify = guestos_generic_identify,
    .identify_task = linux_identify_task,
    .discover_kernel = linux_discover_kernel,
    .kernel_modules = linux_kernel_modules,
    .kernel_module_symbols = linux_kernel_module_symbols,
    .discover_modules = guestos_generic_discover_modules,
    .module_symbols = guestos_generic_module_symbols,
    .close = linux_close,
};
