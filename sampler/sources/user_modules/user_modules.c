/* Module discovery for guest address spaces, on the drain thread: the OS layer finds the ELF
 * images of an address space (guestos/), and the result goes into the trace as module and
 * mapping records (module_registry.c), with the symbols each image carries in the guest's
 * memory (its dynamic symbol table), so `hvprof report` names shared-library functions without
 * any file and symbolizes the rest later from symbol files.
 *
 * A process is looked at when it is first seen, and again while it keeps running user code:
 * right after exec the loader has not mapped the libraries yet, pages of an image are mapped
 * only once touched, and dlopen() adds code later. The next look comes MOD_LOOK_MIN_NS after
 * one that found something new, doubling up to MOD_LOOK_MAX_NS while nothing changes; a
 * process not sampled in user mode since its last look is not looked at again.
 *
 * This reads guest memory while the guest runs: page tables may change under us, so everything
 * is bounded and validated (as on the exit path), and a process found mid-change simply yields
 * fewer modules until its next look. After each look, every source sees what it found
 * (rec_address_space: unwind tables, runtimes). The recorder source "user-modules". */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "guestos/guestos.h"
#include "sampler/exit/core.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/parts/module_files.h"
#include "sampler/parts/module_registry.h"
#include "sampler/parts/symbol_batch.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

#define MOD_MAX_PER_PROC    64            /* modules kept per address space */
#define MOD_LOOK_MIN_NS     100000000ull  /* 0.1 s */
#define MOD_LOOK_MAX_NS     2000000000ull /* 2 s */
#define MOD_LOOKS_PER_DRAIN 8 /* re-looks per drain pass (10 ms): bounds the drain's latency */
#define MOD_SYMBOL_LOOKS    4 /* looks for a module's symbols before giving up on them */
/* Looks taken early because samples ran code no look had found, in a row that found nothing:
 * past this (JIT code, a module without tables) the ordinary schedule applies again. */
#define MOD_UNKNOWN_LOOKS 8

struct proc_look {
    uint64_t at;        /* time the last look ended (0: none yet) */
    uint64_t wait;      /* until the next */
    unsigned fruitless; /* early looks for unknown code in a row that found nothing */
};

/* The looks at address spaces (the modules and mappings written are the core's registry,
 * sampler/parts/module_registry.h, which dedupes by build-id). */
struct user_modules {
    struct proc_look look[ID_MAX_PROCS];
    uint32_t cursor; /* where the last pass of re-looks stopped */
    uint64_t looks, relooks_found, symbols, symbol_modules, ns;
};

/* The symbols a module carries in the guest's memory, once per module (retried at a few looks:
 * its table's pages may not be mapped yet). */
static int record_symbols(struct user_modules *mods, const struct rec_env *env,
                          const struct guestos_as *as, const struct discover_module *m,
                          struct hv_err *err)
{
    struct discover_registry_module *r = discover_registry_find(env->modules, m);
    if (!r || r->symbols_recorded || r->symbol_looks >= MOD_SYMBOL_LOOKS)
        return 0;
    r->symbol_looks++;
    /* One module's table takes at most a quarter of the budget, so one forged image cannot
     * leave the others without names (a large real one, libLLVM's, needs ~8 MiB). */
    uint64_t left = meta_budget_table_left(env->meta, 4);
    if (left < META_SYMBOL_COST(0)) {
        r->symbols_recorded = true; /* no room: not looked for again */
        env->meta->cut_symbol_tables++;
        return 0;
    }
    struct symbol_batch b = {.max_bytes = left};
    /* Its file's .symtab (on a disk hvprof serves, or in the guest's page cache) has every
     * function, static ones too, once; else what the guest's memory shows (its .dynsym). What
     * was read stands in the batch (a table cut at its share is written as far as it got). */
    bool from_file = false;
    if (!r->file_symbols_tried) {
        r->file_symbols_tried = true;
        (void)module_note_of(env, m); /* every module gets its line, named or not */
        from_file = module_file_symbols(env, as, m, symbol_batch_add, &b);
    }
    if (!from_file && guestos_module_symbols(env->os, env->mem, as, m, symbol_batch_add, &b) > 0) {
        struct module_note *n = module_note_of(env, m);
        if (n && !n->syms_from)
            n->syms_from = FROM_MEMORY;
    }
    int rc = 0;
    if (b.n && !b.oom) {
        rc = symbol_batch_write(&b, env->w, r->id, 0, err);
        r->symbols_recorded = true;
        mods->symbols += b.n;
        mods->symbol_modules++;
        if (b.cut)
            env->meta->cut_symbol_tables++;
    }
    symbol_batch_free(&b);
    return rc;
}

/* Look at process `proc`'s address space; returns the records written (new modules and
 * mappings), or -1. */
static int look(struct user_modules *mods, const struct rec_env *env, uint32_t proc,
                const struct id_proc *p, uint64_t ts, struct hv_err *err)
{
    const struct id_proc_info *info = &p->info;
    struct id_label_value v;
    int32_t pid = id_label_get(&p->label, &v) && v.guest_id > 0 ? v.guest_id : -1;
    struct discover_module *found = malloc(MOD_MAX_PER_PROC * sizeof(*found));
    if (!found)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    uint64_t t0 = hv_now_ns();
    struct guestos_as as = {info->cr0, info->cr3, info->cr4, info->efer, pid};
    size_t n = guestos_discover_modules(env->os, env->mem, &as, found, MOD_MAX_PER_PROC);
    int written = discover_record(env->w, env->modules,
                                  hvfxt_koid_guest_process(id_proc_number(env->core->ids, proc)),
                                  found, n, ts, err);
    for (size_t i = 0; i < n && written >= 0; i++)
        if (record_symbols(mods, env, &as, &found[i], err) < 0)
            written = -1;
    if (written >= 0)
        rec_address_space(env, proc, &as, found, n, t0);
    free(found);
    mods->looks++;
    mods->ns += hv_now_ns() - t0;
    return written;
}

static int modules_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    (void)env;
    *st = calloc(1, sizeof(struct user_modules));
    return *st ? 0 : hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
}

static void modules_destroy(void *st)
{
    free(st);
}

/* The first look at a new process's modules, while this pass's slice lasts (a guest showing a
 * thousand new address spaces at once is looked at over many passes). A kernel thread has no
 * user address space to look into. */
static int modules_process_named(void *st, const struct rec_env *env, uint32_t proc,
                                 const struct id_proc *p, struct hv_err *err)
{
    struct user_modules *mods = st;
    if (!p->info.cr3)
        return 1;
    if (!rec_may_work(env))
        return 0;
    if (look(mods, env, proc, p, p->info.first_ts, err) < 0)
        return -1;
    mods->look[proc - 1] = (struct proc_look){hv_now_ns(), MOD_LOOK_MIN_NS, 0};
    return 1;
}

/* Its process ended: no more looks, its mappings forgotten. */
static void modules_process_ended(void *st, const struct rec_env *env, uint32_t proc)
{
    struct user_modules *mods = st;
    if (!mods || !proc || proc > ID_MAX_PROCS)
        return;
    mods->look[proc - 1] = (struct proc_look){0};
    discover_registry_forget(env->modules,
                             hvfxt_koid_guest_process(id_proc_number(env->core->ids, proc)));
}

static int modules_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                        bool final, struct hv_err *err)
{
    (void)stage;
    (void) final;
    struct user_modules *mods = st;
    if (!env->mem)
        return 0;
    unsigned done = 0;
    for (uint32_t k = 0; k < ID_MAX_PROCS && done < MOD_LOOKS_PER_DRAIN && rec_may_work(env); k++) {
        uint32_t id = (mods->cursor + k) % ID_MAX_PROCS + 1;
        struct proc_look *l = &mods->look[id - 1];
        const struct id_proc *p = id_proc_at(env->core->ids, id);
        if (!l->at || !p || !p->info.cr3)
            continue;
        /* Samples in code no look had found (an executable whose code starts after a long
         * loader phase, whose looks doubled their wait): look again soon, not at the doubled
         * wait; unless such looks keep finding nothing. */
        uint64_t unknown = atomic_load_explicit(&p->unknown_code_ts, memory_order_relaxed);
        bool early =
            unknown > l->at && l->fruitless < MOD_UNKNOWN_LOOKS && now >= l->at + MOD_LOOK_MIN_NS;
        if (!early && now < l->at + l->wait)
            continue;
        uint64_t seen = atomic_load_explicit(&p->last_user_ts, memory_order_relaxed);
        if (seen < l->at)
            continue; /* no user code run since: nothing new to find */
        int written = look(mods, env, id, p, now, err);
        if (written < 0)
            return -1;
        if (written > 0)
            mods->relooks_found++;
        l->at = hv_now_ns();
        l->wait = written > 0 ? MOD_LOOK_MIN_NS
                              : (l->wait * 2 > MOD_LOOK_MAX_NS ? MOD_LOOK_MAX_NS : l->wait * 2);
        l->fruitless = written > 0 ? 0 : l->fruitless + 1;
        mods->cursor = id % ID_MAX_PROCS;
        done++;
    }
    return 0;
}

static void modules_summary(const void *st, const struct rec_env *env, FILE *out)
{
    const struct user_modules *m = st;
    const struct discover_registry *reg = env->modules;
    if (!m->looks)
        return;
    fprintf(out,
            "  user modules: %zu recorded (%zu mappings), %" PRIu64 " with %" PRIu64
            " symbols from their dynamic symbol tables; %" PRIu64 " looks at address spaces "
            "(%" PRIu64 " found more than the look before), %.1f ms in all\n",
            reg->mods.n, reg->maps.n, m->symbol_modules, m->symbols, m->looks, m->relooks_found,
            (double)m->ns / 1e6);
}

const struct rec_source_ops rec_source_user_modules = {
    .name = "user-modules",
    .create = modules_create,
    .stages = REC_STAGE_BIT(REC_STAGE_GUEST),
    .poll = modules_poll,
    .process_named = modules_process_named,
    .process_ended = modules_process_ended,
    .summary = modules_summary,
    .destroy = modules_destroy,
};
