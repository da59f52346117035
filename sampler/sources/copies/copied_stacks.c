/* The drain thread's half of the stacks copied at exits (sampler/exit/stack_copy.h): walk each
 * copy once the process's tables cover it, or after COPY_WAIT_NS, and write the completion of
 * the continuation its sample carried (docs/cfi.md, "Code the tables do not cover yet").
 *
 * A copy is walked again at each new map the process gets until the walk meets no code outside
 * its tables; then, or once a look at its process began after the copy (that look found all the
 * code the copy can meet), or when the wait is over (or at the end of the recording), the
 * better of that walk and the one done at the exit is written. A process whose copies keep gaining
 * nothing (its code has no tables at all: JIT code, binaries without a build-id) gets no more
 * copies after COPY_FRUITLESS of them in a row. The recorder source "copied-stacks": it gives
 * each vCPU of the exit core its queue at create. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "guestos/guestos.h"
#include "sampler/exit/core.h"
#include "sampler/exit/stack_copy.h"
#include "sampler/parts/drain_walker.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

#define COPY_WAIT_NS   2000000000ull /* a look, then its tables compiled, even under emulation */
#define COPY_FRUITLESS 16            /* copies in a row that gained nothing: stop copying */

struct copies {
    struct exit_core *core; /* whose vCPUs' queues it made */
    unsigned nvcpus;
    struct drain_walker dw;
    uint64_t frames[EXIT_MAX_FRAMES];
    uint8_t fruitless[ID_MAX_PROCS];
    uint64_t walked, gained, waited, looked, stopped_procs, ns;
};

/* A flight recorder keeps the newest samples only: no copies (their completions would come
 * after records the ring may already have let go). */
static bool copies_wanted(const struct sampler_config *cfg)
{
    return !cfg->ring_bytes && cfg->mode != SAMPLER_MODE_EXITS;
}

static void copies_destroy(void *st)
{
    struct copies *k = st;
    if (!k)
        return;
    for (unsigned i = 0; i < k->nvcpus; i++) {
        free(k->core->v[i].copies.slot);
        k->core->v[i].copies.slot = NULL;
        k->core->v[i].copies.nslots = 0;
    }
    drain_walker_close(&k->dw);
    free(k);
}

static int copies_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    struct copies *k = calloc(1, sizeof(*k));
    if (!k)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    k->core = env->core;
    k->nvcpus = env->cfg->nvcpus;
    *st = k;
    /* A power of two, so the queue's free-running indices wrap cleanly. */
    uint32_t n = EXIT_COPY_SLOTS;
    while (n > 16 && (uint64_t)n * k->nvcpus > EXIT_COPY_ALL_SLOTS)
        n /= 2;
    for (unsigned i = 0; i < k->nvcpus; i++) {
        /* Large: calloc maps it, and the pages cost memory only once copies use them. */
        env->core->v[i].copies.slot = calloc(n, sizeof(struct exit_stack_copy));
        if (!env->core->v[i].copies.slot)
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        env->core->v[i].copies.nslots = n;
    }
    return 0;
}

/* A walk's worth: reaching the outermost frame first, then its frames. */
static unsigned worth(bool end, unsigned frames)
{
    return (end ? 1u << 16 : 0) + frames;
}

/* The completion of copy c's continuation: the walk from the copy, or the exit's when that one
 * went further. */
static int complete(struct copies *k, const struct rec_env *env, struct exit_stack_copy *c,
                    const struct gw_stack *st, struct hv_err *err)
{
    bool exit_end = hvfxt_walk_user_stop(c->exit_walk) == HVFXT_STOP_END;
    bool later = worth(st->stop == GW_STOP_CHAIN_END, st->count) >= worth(exit_end, c->nexit);
    bool same = st->count == c->nexit && !memcmp(st->pc, c->exit_pc, c->nexit * sizeof(*st->pc));
    struct hvfxt_sample smp = {
        .fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_PID | HVFXT_SF_TID |
                  HVFXT_SF_BOOT_TS | HVFXT_SF_USER_STACK | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_WALK,
        .completion = c->id,
        .pid = c->pid,
        .tid = c->tid,
        .ts = c->ts,
        .vcpu = c->vcpu,
        .cpl = 3,
        .user_stack = later ? st->pc : c->exit_pc,
        .n_user = later ? st->count : c->nexit,
        .walk = later ? hvfxt_walk_word(HVFXT_STOP_NONE, exit_stop_code(st), 0, 0) |
                            hvfxt_walk_callers(0, st->leaf) | hvfxt_walk_user_cfi(st->cfi_frames)
                      : c->exit_walk,
    };
    k->walked++;
    if (later && !same) {
        k->gained++;
        k->fruitless[c->proc - 1] = 0;
    } else if (++k->fruitless[c->proc - 1] == COPY_FRUITLESS) {
        id_proc_stop_copies(env->core->ids, c->proc, EXIT_COPY_PER_PROC);
        k->stopped_procs++;
    }
    size_t n = hvfxt_sample_words(&smp);
    if (n > FXT_MAX_RECORD_WORDS)
        n = FXT_MAX_RECORD_WORDS;
    size_t words = hvfxt_enc_sample(env->w->scratch, n, &smp);
    env->meta->not_meta += words * 8;
    return fxt_writer_emit(env->w, hvfxt_vcpu_provider(c->vcpu), env->w->scratch, words, err);
}

static int copies_poll(void *st_, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                       bool final, struct hv_err *err)
{
    (void)stage;
    struct copies *k = st_;
    uint64_t t0 = hv_now_ns();
    const struct exit_cfi_maps *maps = env->core->cfi;
    for (unsigned v = 0; v < k->nvcpus; v++) {
        struct exit_copy_queue *q = &env->core->v[v].copies;
        uint32_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
        uint32_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
        for (uint32_t i = head; i != tail; i++) {
            struct exit_stack_copy *c = &q->slot[i % q->nslots];
            if (c->done)
                continue;
            const struct gw_cfi_map *map = exit_cfi_current(maps, c->proc);
            /* A look that began after the copy found every module mapped at its exit and
             * compiled their tables: what this walk lacks now, a later one would too (but for
             * pages of a table not present yet, which is not worth the queue's slot). */
            bool looked = rec_looked(env, c->proc) > c->ts;
            bool waited = final || looked || now - c->ts >= COPY_WAIT_NS;
            if (map == c->map && !waited)
                continue; /* no look has published anything new for it yet */
            struct gw_stack st = GW_STACK_INIT(k->frames, env->cfg->max_depth);
            if (drain_walker_open(&k->dw, env->mem, env->cfg))
                exit_copy_walk(&k->dw.w, env->os, c, map, &st);
            bool whole = st.count > 0 && !st.cfi_outside && map;
            if (!whole && !waited) {
                c->map = map; /* again at its next map */
                continue;
            }
            k->waited += !whole && !looked && !final;
            k->looked += !whole && looked;
            if (complete(k, env, c, &st, err) < 0)
                return -1;
            c->done = true;
        }
        while (head != tail && q->slot[head % q->nslots].done)
            head++;
        atomic_store_explicit(&q->head, head, memory_order_release);
    }
    k->ns += hv_now_ns() - t0;
    return 0;
}

static void copies_summary(const void *st, const struct rec_env *env, FILE *out)
{
    uint64_t copied = 0, full = 0;
    for (unsigned i = 0; i < env->cfg->nvcpus; i++) {
        copied += env->core->v[i].st.copies;
        full += env->core->v[i].st.copies_full;
    }
    const struct copies *k = st;
    if (!k || (!copied && !full))
        return;
    fprintf(out,
            "  stacks copied at the exit for code without unwind tables yet: %" PRIu64
            ", walked later %" PRIu64 " (%" PRIu64 " with more frames than at the exit; %" PRIu64
            " still short after a look at their process, %" PRIu64 " after the %.0f s wait), "
            "%.1f ms on the drain thread",
            copied, k->walked, k->gained, k->looked, k->waited, COPY_WAIT_NS / 1e9, k->ns / 1e6);
    if (full)
        fprintf(out, "; %" PRIu64 " not copied (%u copies per vCPU waiting)", full,
                env->core->v[0].copies.nslots);
    if (k->stopped_procs)
        fprintf(out, "; %" PRIu64 " processes no longer copied (%u copies gained nothing)",
                k->stopped_procs, COPY_FRUITLESS);
    fputc('\n', out);
}

const struct rec_source_ops rec_source_copied_stacks = {
    .name = "copied-stacks",
    .wanted = copies_wanted,
    .create = copies_create,
    .stages = REC_STAGE_BIT(REC_STAGE_DRAINED),
    .poll = copies_poll,
    .summary = copies_summary,
    .destroy = copies_destroy,
};
