#include "report/report_stacks.h"

#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"
#include "report/report.h"

/* The stack's text: NUL-terminated, its length without the NUL in n. */
struct sbuf {
    VECTOR_FIELDS(char);
};

static int sbuf_add(struct sbuf *b, const char *s)
{
    size_t len = strlen(s);
    if (!vec_reserve(b, len + 1))
        return -1;
    memcpy(b->v + b->n, s, len + 1);
    b->n += len;
    return 0;
}

struct key {
    const struct report_stacks *st;
    const char *text;
};

static bool stack_eq(const void *ctx, uint32_t idx)
{
    const struct key *k = ctx;
    return !strcmp(k->st->v[idx].text, k->text);
}

/* Frame-wise order: ';' sorts below every character a name can hold, so all stacks under one
 * frame are adjacent (a plain strcmp would put "a;b!" between "a;b" and "a;b;c"). */
int report_stacks_cmp_text(const char *a, const char *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (;; x++, y++) {
        unsigned cx = *x == ';' ? 1 : *x, cy = *y == ';' ? 1 : *y;
        if (cx != cy)
            return cx < cy ? -1 : 1;
        if (!cx)
            return 0;
    }
}

static int cmp_stack(const void *a, const void *b)
{
    return report_stacks_cmp_text(((const struct report_stack *)a)->text,
                                  ((const struct report_stack *)b)->text);
}

void report_stacks_free(struct report_stacks *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].text);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* src made safe for a folded line (no ';', no control characters) into buf. */
static const char *folded_safe(const char *src, char *buf, size_t len)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++)
        buf[i] = (unsigned char)src[i] < 0x20 || src[i] == ';' ? '_' : src[i];
    buf[i] = 0;
    return buf;
}

/* A runtime frame's file's base name, made safe for a folded line. */
static const char *runtime_file(const struct profile *p, const struct prof_frame *fr, char *buf,
                                size_t len)
{
    const char *file = "?";
    if (fr->loc < p->locs.n) {
        const struct prof_func *fn = &p->funcs.v[p->locs.v[fr->loc].func];
        if (fn->module != PROF_NONE)
            file = profile_module_basename(p, fn->module);
    }
    return folded_safe(file, buf, len);
}

static uint32_t frame_func(const struct profile *p, const struct prof_frame *fr)
{
    return fr->loc < p->locs.n ? p->locs.v[fr->loc].func : PROF_NONE;
}

int report_stacks_build(const struct profile *p, const struct report_stacks_opts *o,
                        struct report_stacks *out, struct hv_err *err)
{
    static const struct report_stacks_opts plain = {0};
    if (!o)
        o = &plain;
    bool kernel_suffix = o->kernel_suffix;
    memset(out, 0, sizeof(*out));
    struct hashidx h;
    hashidx_init(&h);
    struct sbuf b = {0};
    char name[SYMTAB_MAX_NAME_LEN + 64];
    int rc = -1;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        b.n = 0;
        /* The process is the root frame, as stackcollapse-perf does with the command name; its
         * container's above it. */
        const struct prof_group *g = o->container_root ? profile_sample_group(p, s) : NULL;
        if (g && g->ct.id[0]) {
            char id[CONTAINER_ID_MAX + 1], frame[CONTAINER_ID_MAX + 32];
            snprintf(frame, sizeof(frame), "[%s %s]", container_engine_name(g->ct.engine),
                     profile_group_container(g, id, sizeof(id)));
            if (sbuf_add(&b, folded_safe(frame, name, sizeof(name))) < 0 || sbuf_add(&b, ";") < 0)
                goto oom;
        }
        if (sbuf_add(&b, folded_safe(profile_process_name(p, s->pid), name, sizeof(name))) < 0)
            goto oom;
        uint32_t kept = 0, last_func = PROF_NONE;
        for (uint32_t f = s->nframes; f-- > 0;) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            uint32_t fn = frame_func(p, fr);
            if (o->fold_recursion && fn != PROF_NONE && fn == last_func)
                continue; /* the function called itself: one frame */
            last_func = fn;
            if (o->max_depth && kept++ == o->max_depth)
                break; /* the rest of the stack's weight stays with the deepest frame kept */
            if (sbuf_add(&b, ";") < 0 ||
                sbuf_add(&b, report_frame_name(p, fr, name, sizeof(name))) < 0 ||
                (kernel_suffix && (fr->flags & PROF_FRAME_KERNEL) && sbuf_add(&b, "_[k]") < 0))
                goto oom;
            /* A runtime's function says its file, as py-spy's and Austin's stacks do. */
            if ((fr->flags & PROF_FRAME_RUNTIME) &&
                (sbuf_add(&b, " (") < 0 ||
                 sbuf_add(&b, runtime_file(p, fr, name, sizeof(name))) < 0 ||
                 sbuf_add(&b, ")") < 0))
                goto oom;
        }
        struct key key = {out, b.v};
        uint64_t hv = hashidx_bytes(HASHIDX_SEED, b.v, b.n);
        uint32_t idx = hashidx_find(&h, hv, stack_eq, &key);
        if (idx != HASHIDX_NONE) {
            out->v[idx].weight += s->weight;
            continue;
        }
        if (!vec_reserve(out, 1))
            goto oom;
        char *text = strdup(b.v);
        if (!text)
            goto oom;
        out->v[out->n] = (struct report_stack){text, s->weight};
        if (hashidx_insert(&h, hv, (uint32_t)out->n++) < 0)
            goto oom;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof(*out->v), cmp_stack);
    rc = 0;
    goto done;
oom:
    hv_errk(err, HV_ERR_NO_MEMORY, "stacks: out of memory");
    report_stacks_free(out);
done:
    vec_free(&b);
    hashidx_free(&h);
    return rc;
}
