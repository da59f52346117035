#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "symbolize/demangle.h"

typedef int (*report_writer)(const struct profile *p, const struct report_opts *o, FILE *out,
                             struct hv_err *err);

/* Every output format in one place: its --format name, its file in `--format all -o DIR`,
 * whether it is binary (never to a terminal), whether it needs every sample with its own time
 * (else the profile may keep one entry per distinct stack: profile.aggregate) and its writer. */
static const struct {
    const char *name, *file;
    bool binary, each_sample;
    report_writer write;
} formats[REPORT_NFORMATS] = {
    [REPORT_TOP] = {"top", "top.txt", false, false, report_write_top},
    [REPORT_FOLDED] = {"folded", "stacks.folded", false, false, report_write_folded},
    [REPORT_PPROF] = {"pprof", "profile.pb.gz", true, false, report_write_pprof},
    [REPORT_PERF_SCRIPT] = {"perf-script", "perf-script.txt", false, true,
                            report_write_perf_script},
    [REPORT_SVG] = {"svg", "flamegraph.svg", false, false, report_write_svg},
    [REPORT_TIMELINE] = {"timeline", "timeline.fxt", true, true, report_write_timeline},
    [REPORT_TREE] = {"tree", "tree.txt", false, false, report_write_tree},
    [REPORT_JSON] = {"json", "profile.json", false, false, report_write_json},
};

bool report_format_needs_each_sample(enum report_format f)
{
    return f >= 0 && f < REPORT_NFORMATS && formats[f].each_sample;
}

int report_format_parse(const char *name)
{
    for (int i = 0; i < REPORT_NFORMATS; i++) {
        if (!strcmp(name, formats[i].name))
            return i;
    }
    return -1;
}

const char *report_format_list(void)
{
    static char list[256];
    if (!list[0]) {
        size_t n = 0;
        for (int i = 0; i < REPORT_NFORMATS && n < sizeof(list); i++)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
                                  formats[i].name);
    }
    return list;
}

const char *report_format_name(enum report_format f)
{
    return (unsigned)f < REPORT_NFORMATS ? formats[f].name : "?";
}

const char *report_format_filename(enum report_format f)
{
    return (unsigned)f < REPORT_NFORMATS ? formats[f].file : "out";
}

bool report_format_is_binary(enum report_format f)
{
    return (unsigned)f < REPORT_NFORMATS && formats[f].binary;
}

int report_write(enum report_format f, const struct profile *p, const struct report_opts *o,
                 FILE *out, struct hv_err *err)
{
    static const struct report_opts defaults = {0};
    if (!o)
        o = &defaults;
    if ((unsigned)f >= REPORT_NFORMATS)
        return hv_errf(err, "unknown report format %d", (int)f);
    int rc = formats[f].write(p, o, out, err);
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        return hv_errf_errno(err, "writing %s output", report_format_name(f));
    return rc;
}

const char *report_frame_name(const struct profile *p, const struct prof_frame *fr, char *buf,
                              size_t len)
{
    const char *name = "?";
    if (fr->loc < p->locs.n)
        name = p->funcs.v[p->locs.v[fr->loc].func].name;
    /* A demangled name without its parameter list, as flame graphs show them. */
    size_t n = hv_demangled_short_len(name);
    size_t i = 0;
    for (; i < n && i + 1 < len; i++) {
        char c = name[i];
        buf[i] = (unsigned char)c < 0x20 || c == 0x7f ? '?' : c == ';' ? ':' : c;
    }
    buf[i] = 0;
    return buf;
}

static int cmp_group(const void *a, const void *b)
{
    const struct report_group *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static int by_key(const void *a, const void *b)
{
    const struct report_group *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Sum weights per key: one entry per sample, sorted, merged: O(samples log samples) whatever
 * the number of processes (a scan per sample was quadratic with 10^5 of them). */
int report_group_by(const struct profile *p, bool by_vcpu, struct report_group **out, size_t *nout)
{
    size_t n = p->samples.n;
    struct report_group *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        bool k = s->cpl == PROF_CPL_KERNEL;
        uint64_t key = by_vcpu ? s->vcpu : profile_process_row(p, s->pid);
        v[i] = (struct report_group){key, s->weight, k ? s->weight : 0};
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), by_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && v[m - 1].key == v[i].key) {
            v[m - 1].weight += v[i].weight;
            v[m - 1].kernel += v[i].kernel;
        } else {
            v[m++] = v[i];
        }
    }
    if (m > 1)
        qsort(v, m, sizeof(*v), cmp_group);
    *out = v;
    *nout = m;
    return 0;
}

const char *report_func_dso(const struct profile *p, uint32_t func)
{
    const struct prof_func *fn = &p->funcs.v[func];
    return fn->module == PROF_NONE ? "[unknown]" : profile_module_basename(p, fn->module);
}

struct report_func_weight *report_func_weights(const struct profile *p)
{
    size_t nf = p->funcs.n ? p->funcs.n : 1;
    struct report_func_weight *w = calloc(nf, sizeof(*w));
    size_t *seen = malloc(nf * sizeof(*seen)); /* the last sample that counted the function */
    if (!w || !seen) {
        free(w);
        free(seen);
        return NULL;
    }
    for (size_t i = 0; i < nf; i++)
        seen[i] = SIZE_MAX;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        for (uint32_t f = 0; f < s->nframes; f++) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            if (fr->loc >= p->locs.n)
                continue;
            uint32_t fn = p->locs.v[fr->loc].func;
            if (f == 0)
                w[fn].self += s->weight;
            if (seen[fn] != i) { /* recursion counts once per sample */
                seen[fn] = i;
                w[fn].total += s->weight;
                w[fn].kernel = (fr->flags & PROF_FRAME_KERNEL) != 0;
            }
        }
    }
    free(seen);
    return w;
}
