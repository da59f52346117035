/* The guest kernel's loaded modules into the recording (drain thread): once the kernel is
 * described, the OS layer's module list (guestos kernel_modules: for Linux the `modules` list
 * read through the kernel's page tables) is polled, and each module not yet recorded becomes a
 * module "[name]" mapped at its code region in the kernel's address space, with the code
 * symbols of its own symbol table, as perf names modules. A module loaded later in the run is
 * found at the next poll; one unloaded keeps its record (its samples were taken while it was
 * there). docs/fxt-samples.md, docs/linux-introspection.md. The recorder source
 * "kernel-modules". */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/vector.h"
#include "guestos/guestos.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/parts/module_registry.h"
#include "sampler/parts/symbol_batch.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

/* Modules load during boot (udev) and whenever the workload asks; a poll reads a few words of
 * each listed module, ~1 ms for 100 modules on the nested test bed, so once a second costs
 * nothing worth measuring. */
#define KMOD_POLL_NS  1000000000ull
#define KMOD_LIST_MAX 1024 /* modules listed per poll */
/* Modules recorded in one session at most: a guest that keeps presenting new ones (a hostile
 * one, or one loading and unloading without end) cannot grow the recording without bound. */
#define KMOD_RECORDED_MAX 4096

/* Kernel modules recorded so far. */
struct kmod_seen {
    char name[GUESTOS_KMOD_NAME_LEN];
    uint64_t start, end;
};
struct kmods {
    VECTOR_FIELDS(struct kmod_seen);
    uint64_t polls, last_ns, poll_ns, symbols, over;
    uint64_t deferred; /* polls cut short by the drain pass's slice (continued at the next) */
    unsigned listed, unreadable, list_failures;
    bool failed;
    char message[HV_ERR_MSG_MAX];
};

static bool recorded(const struct kmods *km, const struct guestos_kmodule *m)
{
    for (size_t i = 0; i < km->n; i++)
        if (km->v[i].start == m->text_start && km->v[i].end == m->text_end &&
            !strcmp(km->v[i].name, m->name))
            return true;
    return false;
}

static int record_one(struct kmods *km, const struct rec_env *env,
                      const struct guestos_kmodule *m, uint64_t now, struct hv_err *err)
{
    if (!vec_reserve(km, 1))
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    /* One module's table takes at most a sixteenth of the metadata budget (4 MiB by default;
     * Debian's largest module, amdgpu, needs ~1 MiB); none is read once the budget is spent. */
    uint64_t left = meta_budget_table_left(env->meta, 16);
    struct symbol_batch c = {.base = m->text_start, .max_bytes = left};
    struct hv_err why = {0};
    long got = 0;
    if (left < META_SYMBOL_COST(0))
        env->meta->cut_symbol_tables++;
    else
        got = env->os->ops->kernel_module_symbols(env->os, env->mem, m, symbol_batch_add, &c, &why);
    if (got < 0 || c.oom) {
        km->unreadable++; /* recorded without symbols: its frames say [name]+offset */
        symbol_batch_free(&c);
    } else if (c.cut) {
        env->meta->cut_symbol_tables++;
    }
    uint64_t size = m->text_end - m->text_start;
    struct discover_module d = {
        .header_va = m->text_start,
        .bias = m->text_start,
        .start = m->text_start,
        .end = (m->text_end + 0xfff) & ~0xfffull,
        .e_type = ET_REL, /* a .ko: its symbols are offsets into the code region */
        .nseg = 1,
        .seg = {{.start = m->text_start, .size = (size + 0xfff) & ~0xfffull, .flags = PF_R | PF_X}},
    };
    snprintf(d.name, sizeof(d.name), "[%s]", m->name);
    int64_t id =
        discover_record_module(env->w, env->modules, hvfxt_koid_guest_process(0), &d, now, err);
    int rc = id == -1 ? -1 : 0;
    /* The end of the code region: no symbol runs past it. */
    if (id >= 0 && c.n) {
        rc = symbol_batch_write(&c, env->w, (uint64_t)id, size, err);
        km->symbols += c.n;
    }
    symbol_batch_free(&c);
    if (rc < 0)
        return -1;
    struct kmod_seen *e = &km->v[km->n++];
    snprintf(e->name, sizeof(e->name), "%s", m->name);
    e->start = m->text_start;
    e->end = m->text_end;
    return 0;
}

static int kmods_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    (void)env;
    *st = calloc(1, sizeof(struct kmods));
    return *st ? 0 : hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
}

static void kmods_destroy(void *st)
{
    struct kmods *km = st;
    if (km)
        vec_free(km);
    free(km);
}

static int kmods_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                      bool final, struct hv_err *err)
{
    (void)stage;
    struct kmods *km = st;
    if (!env->mem || env->kernel->state != REC_KERNEL_FOUND || !env->os->ops->kernel_modules ||
        km->failed)
        return 0;
    if (!final && km->polls && now - km->last_ns < KMOD_POLL_NS)
        return 0;
    km->last_ns = now;
    km->polls++;
    struct guestos_kmodule *list = calloc(KMOD_LIST_MAX, sizeof(*list));
    if (!list)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    struct hv_err why = {0};
    uint64_t t0 = hv_now_ns();
    int n = env->os->ops->kernel_modules(env->os, env->mem, list, KMOD_LIST_MAX, &why);
    int rc = 0;
    if (n < 0) {
        /* The list head itself unreadable or broken: said in the summary. A guest that loses
         * its list for a moment (being changed) gets a few more looks. */
        snprintf(km->message, sizeof(km->message), "%s", why.msg);
        if (++km->list_failures >= 3)
            km->failed = true;
    } else {
        km->list_failures = 0;
        km->listed = (unsigned)n;
        for (int i = 0; i < n && rc == 0; i++) {
            if (recorded(km, &list[i]))
                continue;
            if (km->n >= KMOD_RECORDED_MAX) {
                km->over++;
            } else if (!rec_may_work(env)) {
                /* This pass's slice is spent: the rest at the next pass, not a second later. */
                km->last_ns = now - KMOD_POLL_NS;
                km->deferred++;
                break;
            } else {
                rc = record_one(km, env, &list[i], now, err);
            }
        }
    }
    km->poll_ns += hv_now_ns() - t0;
    free(list);
    return rc;
}

static void kmods_summary(const void *st, const struct rec_env *env, FILE *out)
{
    const struct kmods *km = st;
    if (env->kernel->state != REC_KERNEL_FOUND || !env->os->ops->kernel_modules)
        return;
    if (km->failed || (km->list_failures && !km->n)) {
        /* Failed for good, or at every look the recording had time for. */
        fprintf(out, "  guest kernel modules: not read: %s (%" PRIu64 " look%s)\n", km->message,
                km->polls, km->polls == 1 ? "" : "s");
        return;
    }
    fprintf(out,
            "  guest kernel modules: %zu recorded with %" PRIu64 " code symbols (%u loaded at the "
            "last of %" PRIu64 " looks, %.1f ms in all)",
            km->n, km->symbols, km->listed, km->polls, (double)km->poll_ns / 1e6);
    if (km->unreadable)
        fprintf(out, "; %u without symbols (their tables could not be read)", km->unreadable);
    if (km->deferred)
        fprintf(out, "; %" PRIu64 " looks went on at a later drain pass (each takes 20 ms at most)",
                km->deferred);
    if (km->over)
        fprintf(out, "; %" PRIu64 " more not recorded (over %u modules in one session)", km->over,
                KMOD_RECORDED_MAX);
    fputc('\n', out);
}

const struct rec_source_ops rec_source_kernel_modules = {
    .name = "kernel-modules",
    .create = kmods_create,
    .stages = REC_STAGE_BIT(REC_STAGE_GUEST),
    .poll = kmods_poll,
    .summary = kmods_summary,
    .destroy = kmods_destroy,
};
