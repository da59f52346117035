/* The drain thread's half of the stacks copied at exits (sampler/exit/stack_copy.h): walk each
 * copy once the process's tables cover it, or after COPY_WAIT_NS, and write the completion of
 * the continuation its sample carried (docs/cfi.md, "Code the tables do not cover yet").
 *
 * A copy is walked again at each new map the process gets until the walk meets no code outside
 * its tables; then, or once a look at its process began after the copy (that look found all the
 * code the copy can meet), or when the wait is over (or at the end of the recording), the
 * better of that walk and the one done at the exit is written. A process whose copies keep gaining
 * nothing (its code has no tables at all: JIT code, binaries without a build-id) gets no more
 * copies after COPY_FRUITLESS of them in a row. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/sampler_priv.h"

#define COPY_WAIT_NS   2000000000ull /* a look, then its tables compiled, even under emulation */
#define COPY_FRUITLESS 16            /* copies in a row that gained nothing: stop copying */

struct sampler_copies {
    struct sampler_walker dw;
    uint64_t frames[EXIT_MAX_FRAMES];
    uint8_t fruitless[ID_MAX_PROCS];
    uint64_t walked, gained, waited, looked, stopped_procs, ns;
};

int sampler_copies_init(struct sampler *s, struct hv_err *err)
{
    /* A flight recorder keeps the newest samples only: no copies (their completions would come
     * after records the ring may already have let go). */
    if (s->flight_on || s->cfg.mode == SAMPLER_MODE_EXITS)
        return 0;
    s->copies = calloc(1, sizeof(*s->copies));
    if (!s->copies)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    /* A power of two, so the queue's free-running indices wrap cleanly. */
    uint32_t n = EXIT_COPY_SLOTS;
    while (n > 16 && (uint64_t)n * s->cfg.nvcpus > EXIT_COPY_ALL_SLOTS)
        n /= 2;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        /* Large: calloc maps it, and the pages cost memory only once copies use them. */
        s->core.v[i].copies.slot = calloc(n, sizeof(struct exit_stack_copy));
        if (!s->core.v[i].copies.slot)
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        s->core.v[i].copies.nslots = n;
    }
    return 0;
}

void sampler_copies_free(struct sampler *s)
{
    for (unsigned i = 0; s->core.v && i < s->cfg.nvcpus; i++) {
        free(s->core.v[i].copies.slot);
        s->core.v[i].copies.slot = NULL;
    }
    if (s->copies)
        sampler_drain_walker_close(&s->copies->dw);
    free(s->copies);
    s->copies = NULL;
}

/* A walk's worth: reaching the outermost frame first, then its frames. */
static unsigned worth(bool end, unsigned frames)
{
    return (end ? 1u << 16 : 0) + frames;
}

/* The completion of copy c's continuation: the walk from the copy, or the exit's when that one
 * went further. */
static int complete(struct sampler *s, struct exit_stack_copy *c, const struct gw_stack *st,
                    struct hv_err *err)
{
    struct sampler_copies *k = s->copies;
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
        id_proc_stop_copies(s->core.ids, c->proc, EXIT_COPY_PER_PROC);
        k->stopped_procs++;
    }
    size_t n = hvfxt_sample_words(&smp);
    if (n > FXT_MAX_RECORD_WORDS)
        n = FXT_MAX_RECORD_WORDS;
    size_t words = hvfxt_enc_sample(s->w.scratch, n, &smp);
    s->meta.not_meta += words * 8;
    return fxt_writer_emit(&s->w, hvfxt_vcpu_provider(c->vcpu), s->w.scratch, words, err);
}

bool sampler_drain_walker(const struct sampler *s, struct sampler_walker *dw)
{
    if (dw->ok || dw->failed)
        return dw->ok;
    struct gw_config gc = {.max_depth = s->cfg.max_depth, .no_leaf_repair = s->cfg.no_leaf_repair};
    struct hv_err e = {0};
    dw->ok = s->mem && gw_walker_init(&dw->w, s->mem, &gc, &e) == 0;
    dw->failed = !dw->ok;
    return dw->ok;
}

void sampler_drain_walker_close(struct sampler_walker *dw)
{
    if (dw->ok)
        gw_walker_fini(&dw->w);
    dw->ok = false;
}

int sampler_copies_poll(struct sampler *s, uint64_t now, bool final, struct hv_err *err)
{
    struct sampler_copies *k = s->copies;
    if (!k)
        return 0;
    uint64_t t0 = hv_now_ns();
    const struct exit_cfi_maps *maps = sampler_cfi_maps(s->cfi);
    for (unsigned v = 0; v < s->cfg.nvcpus; v++) {
        struct exit_copy_queue *q = &s->core.v[v].copies;
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
            bool looked = sampler_modules_looked(s, c->proc) > c->ts;
            bool waited = final || looked || now - c->ts >= COPY_WAIT_NS;
            if (map == c->map && !waited)
                continue; /* no look has published anything new for it yet */
            struct gw_stack st = GW_STACK_INIT(k->frames, s->cfg.max_depth);
            if (sampler_drain_walker(s, &k->dw))
                exit_copy_walk(&k->dw.w, &s->os, c, map, &st);
            bool whole = st.count > 0 && !st.cfi_outside && map;
            if (!whole && !waited) {
                c->map = map; /* again at its next map */
                continue;
            }
            k->waited += !whole && !looked && !final;
            k->looked += !whole && looked;
            if (complete(s, c, &st, err) < 0)
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

void sampler_copies_summary(const struct sampler *s, FILE *out)
{
    uint64_t copied = 0, full = 0;
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        copied += s->core.v[i].st.copies;
        full += s->core.v[i].st.copies_full;
    }
    const struct sampler_copies *k = s->copies;
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
                s->core.v[0].copies.nslots);
    if (k->stopped_procs)
        fprintf(out, "; %" PRIu64 " processes no longer copied (%u copies gained nothing)",
                k->stopped_procs, COPY_FRUITLESS);
    fputc('\n', out);
}
