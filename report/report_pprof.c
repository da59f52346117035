/* pprof: a perftools.profiles.Profile (report/profile.proto, field numbers from
 * google/pprof proto/profile.proto) encoded by protobuf-c and gzip-compressed with zlib ("On-disk,
 * the serialized proto must be gzip-compressed"). One Mapping per module mapping (with its
 * build-id), one Location per (address space, address), one Function per (module, name); samples
 * carry labels vcpu, pid, tid and cpl as numbers with units (pprof drops a numeric label whose
 * value and unit are both 0) and process and thread as strings; and where the recording has
 * them (docs/containers.md), cgroup, container_id, pod_uid and hostname as strings and ns_pid
 * and ns_tid (the ids a container's processes see) as numbers. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/vector.h"
#include "common/hashidx.h"
#include "report/profile.pb-c.h"
#include "report/report.h"

struct strtab {
    VECTOR_FIELDS(char *);
    struct hashidx h;
    bool failed; /* out of memory at some point: checked once before packing */
};

static bool str_eq(const void *ctx, uint32_t idx)
{
    const void *const *c = ctx;
    const struct strtab *t = c[0];
    return !strcmp(t->v[idx], c[1]);
}

/* Index of `s` in the string table, adding it; 0 and t->failed when out of memory. */
static int64_t str_id(struct strtab *t, const char *s)
{
    uint64_t h = hashidx_bytes(HASHIDX_SEED, s, strlen(s));
    const void *ctx[2] = {t, s};
    uint32_t i = hashidx_find(&t->h, h, str_eq, ctx);
    if (i != HASHIDX_NONE)
        return i;
    if (!vec_reserve(t, 1)) {
        t->failed = true;
        return 0;
    }
    char *copy = strdup(s);
    if (!copy || hashidx_insert(&t->h, h, (uint32_t)t->n) < 0) {
        free(copy);
        t->failed = true;
        return 0;
    }
    t->v[t->n] = copy;
    return (int64_t)t->n++;
}

static void strtab_free(struct strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    hashidx_free(&t->h);
}

static int gzip_write(const uint8_t *data, size_t len, FILE *out, struct hv_err *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    /* windowBits 15 + 16 selects the gzip wrapper (zlib.h, deflateInit2). */
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return hv_errf(err, "pprof: deflateInit2 failed");
    uint8_t buf[1 << 16];
    zs.next_in = (Bytef *)data;
    int rc = 0;
    for (;;) {
        size_t chunk = len > (1u << 30) ? (1u << 30) : len;
        zs.avail_in = (uInt)chunk;
        len -= chunk;
        int flush = len == 0 ? Z_FINISH : Z_NO_FLUSH;
        int z;
        do {
            zs.next_out = buf;
            zs.avail_out = sizeof(buf);
            z = deflate(&zs, flush);
            size_t have = sizeof(buf) - zs.avail_out;
            if (have && fwrite(buf, 1, have, out) != have) {
                rc = hv_errf_errno(err, "pprof: write");
                goto out;
            }
        } while (zs.avail_out == 0);
        if (flush == Z_FINISH) {
            if (z != Z_STREAM_END)
                rc = hv_errf(err, "pprof: deflate did not finish (%d)", z);
            break;
        }
    }
out:
    deflateEnd(&zs);
    return rc;
}

enum { L_VCPU, L_PID, L_TID, L_PROCESS, L_THREAD, L_CPL, NLABELS };
/* The labels a sample may have besides: its cgroup, container, pod, namespace pids. */
enum { LX_CGROUP, LX_CONTAINER, LX_POD, LX_NS_PID, LX_NS_TID, LX_HOSTNAME, NXLABELS };
#define LABELS_MAX (NLABELS + NXLABELS)

/* A function's name and its binary's, from the profile written or from the one it is compared
 * with. */
struct named {
    const char *name, *module;
    int32_t own; /* index into the written profile's functions, -1 for the other's */
};

static int by_name(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static size_t add_named(struct named *v, size_t n, const struct profile *p, bool own)
{
    for (size_t i = 0; i < p->funcs.n; i++) {
        const struct prof_func *f = &p->funcs.v[i];
        v[n++] =
            (struct named){f->name, f->module == PROF_NONE ? NULL : p->modules.v[f->module].name,
                           own ? (int32_t)i : -1};
    }
    return n;
}

/* Which functions share their name with a function of another binary. pprof's views aggregate
 * by name alone (its default granularity clears Function.filename, internal/driver
 * aggregate()), so `_start` of three programs would show as one function holding all three
 * shares; those get the binary's base name appended ("_start (workload.elf)"). With `other`
 * (hvprof diff), names are compared over both profiles, so that the same function is named the
 * same in both files and `pprof -diff_base` subtracts it. NULL when out of memory; all false
 * when no name is shared. */
/* A pprof sample's identity: its labels' sources (pid, tid, vCPU, ring) and its locations. */
struct sample_key {
    const struct profile *p;
    const struct prof_sample *s;
    const uint64_t *loc_ids;    /* per frame, filled for s and every sample before it */
    const uint32_t *sample_rep; /* each output sample's first profile sample */
};

static uint64_t sample_hash(const struct sample_key *k)
{
    const struct prof_sample *s = k->s;
    uint64_t h = hashidx_u64(HASHIDX_SEED, s->pid);
    h = hashidx_u64(h, s->tid);
    h = hashidx_u64(h, ((uint64_t)s->vcpu << 8) | s->cpl);
    h = hashidx_u64(h, s->group);
    return hashidx_bytes(h, &k->loc_ids[s->first], s->nframes * sizeof(*k->loc_ids));
}

static bool sample_eq(const void *ctx, uint32_t out)
{
    const struct sample_key *k = ctx;
    const struct prof_sample *a = k->s, *b = &k->p->samples.v[k->sample_rep[out]];
    return a->pid == b->pid && a->tid == b->tid && a->vcpu == b->vcpu && a->cpl == b->cpl &&
           a->group == b->group && a->nframes == b->nframes &&
           !memcmp(&k->loc_ids[a->first], &k->loc_ids[b->first], a->nframes * sizeof(*k->loc_ids));
}

static bool *shared_names(const struct profile *p, const struct profile *other)
{
    size_t n = p->funcs.n + (other ? other->funcs.n : 0);
    struct named *v = malloc((n ? n : 1) * sizeof(*v));
    bool *shared = calloc(p->funcs.n ? p->funcs.n : 1, sizeof(*shared));
    if (!v || !shared) {
        free(v);
        free(shared);
        return NULL;
    }
    size_t m = add_named(v, 0, p, true);
    if (other)
        m = add_named(v, m, other, false);
    qsort(v, m, sizeof(*v), by_name);
    for (size_t i = 0; i < m;) {
        size_t j = i + 1;
        bool other_binary = false;
        while (j < m && !strcmp(v[j].name, v[i].name)) {
            const char *a = v[j].module, *b = v[i].module;
            other_binary |= a != b && (!a || !b || strcmp(a, b));
            j++;
        }
        for (size_t k = i; other_binary && k < j; k++)
            if (v[k].own >= 0)
                shared[v[k].own] = v[k].module != NULL;
        i = j;
    }
    free(v);
    return shared;
}

/* Mapping.file_offset as pprof reads it (internal/elfexec GetBase): a user-space mapping
 * carries the file offset of its start, the ELF segment's own; a kernel image mapped in the
 * upper half carries 0 (perf's convention for the kernel map: pprof then takes the base from the
 * segment holding .text, or from _stext for a vmlinux, with any KASLR slide), and so does a
 * kernel module (ET_REL: pprof refuses any other offset). The segment offset of a kernel image
 * made `pprof -disasm` fail ("could not identify base"). */
static uint64_t pprof_file_offset(const struct prof_mapping *m, const struct prof_module *mod)
{
    if (mod->kernel && m->start >= (1ull << 63))
        return 0;
    return m->file_offset;
}

int report_write_pprof(const struct profile *p, const struct report_opts *o, FILE *out,
                       struct hv_err *err)
{
    struct strtab st = {0};
    hashidx_init(&st.h);
    Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
    Perftools__Profiles__ValueType vt[2] = {PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
                                            PERFTOOLS__PROFILES__VALUE_TYPE__INIT};
    Perftools__Profiles__ValueType *vtp[2] = {&vt[0], &vt[1]};
    Perftools__Profiles__ValueType period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    size_t nm = p->mappings.n, nl = p->locs.n, nfn = p->funcs.n, ns = p->samples.n;
    Perftools__Profiles__Mapping *maps = calloc(nm + 1, sizeof(*maps));
    Perftools__Profiles__Mapping **mapp = calloc(nm + 1, sizeof(*mapp));
    Perftools__Profiles__Location *locs = calloc(nl + 1, sizeof(*locs));
    Perftools__Profiles__Location **locp = calloc(nl + 1, sizeof(*locp));
    /* A line per location, and one per function inlined at it (profile.inl). */
    size_t nlines = nl + p->inl.n;
    Perftools__Profiles__Line *lines = calloc(nlines + 1, sizeof(*lines));
    Perftools__Profiles__Line **linep = calloc(nlines + 1, sizeof(*linep));
    Perftools__Profiles__Function *fns = calloc(nfn + 1, sizeof(*fns));
    Perftools__Profiles__Function **fnp = calloc(nfn + 1, sizeof(*fnp));
    Perftools__Profiles__Sample *smp = calloc(ns + 1, sizeof(*smp));
    Perftools__Profiles__Sample **smpp = calloc(ns + 1, sizeof(*smpp));
    Perftools__Profiles__Label *labels = calloc(ns * LABELS_MAX + 1, sizeof(*labels));
    Perftools__Profiles__Label **labelp = calloc(ns * LABELS_MAX + 1, sizeof(*labelp));
    uint64_t *loc_ids = calloc(p->frames.n + 1, sizeof(*loc_ids));
    int64_t *values = calloc(ns * 2 + 1, sizeof(*values));
    uint32_t *sample_rep = calloc(ns + 1, sizeof(*sample_rep)); /* each output's first sample */
    bool *shared = shared_names(p, o->names_with);
    int64_t comment_id = 0;
    uint8_t *packed = NULL;
    int rc = -1;
    if (!maps || !mapp || !locs || !locp || !lines || !linep || !fns || !fnp || !smp || !smpp ||
        !labels || !labelp || !loc_ids || !values || !shared || !sample_rep)
        goto oom;
    str_id(&st, ""); /* string_table[0] must be "" */

    /* Off-CPU and wall-clock profiles: one value, the time in microseconds. */
    bool timed = p->period_ns != 0 && !p->weight_us;
    vt[0].type = str_id(&st, p->weight_us ? (p->off_cpu ? "off_cpu" : "wall") : "samples");
    vt[0].unit = str_id(&st, p->weight_us ? "microseconds" : "count");
    vt[1].type = str_id(&st, "cpu");
    vt[1].unit = str_id(&st, "nanoseconds");
    period_type = vt[1];
    prof.n_sample_type = timed ? 2 : 1;
    prof.sample_type = vtp;
    if (timed) {
        prof.period_type = &period_type;
        prof.period = (int64_t)p->period_ns;
    }
    comment_id = str_id(&st, o->title ? o->title : "hvprof guest profile");
    prof.n_comment = 1;
    prof.comment = &comment_id;

    for (size_t i = 0; i < nm; i++) {
        const struct prof_mapping *m = &p->mappings.v[i];
        const struct prof_module *mod = &p->modules.v[m->module];
        Perftools__Profiles__Mapping *pm = &maps[i];
        perftools__profiles__mapping__init(pm);
        char hex[2 * ELF_BUILD_ID_MAX + 1];
        elf_build_id_hex(mod->build_id, mod->build_id_len, hex);
        pm->id = i + 1;
        pm->memory_start = m->start;
        pm->memory_limit = m->size > UINT64_MAX - m->start ? UINT64_MAX : m->start + m->size;
        pm->file_offset = pprof_file_offset(m, mod);
        pm->filename = str_id(&st, mod->name);
        pm->build_id = str_id(&st, hex);
        pm->has_functions = mod->has_functions;
        mapp[i] = pm;
    }
    for (size_t i = 0; i < nfn; i++) {
        Perftools__Profiles__Function *f = &fns[i];
        perftools__profiles__function__init(f);
        f->id = i + 1;
        const struct prof_func *pf = &p->funcs.v[i];
        f->name = f->system_name = str_id(&st, pf->name);
        if (pf->module == PROF_NONE) {
            fnp[i] = f;
            continue;
        }
        /* The function's source file where the binary's DWARF says (pprof's -list reads it),
         * else the binary; the binary also goes into the name where another binary has a
         * function of the same name. */
        const char *bin = p->modules.v[pf->module].name;
        f->filename = str_id(&st, pf->file ? pf->file : bin);
        f->start_line = pf->start_line;
        if (shared[i]) {
            const char *base = strrchr(bin, '/') ? strrchr(bin, '/') + 1 : bin;
            size_t len = strlen(pf->name) + strlen(base) + 4;
            char *qualified = malloc(len);
            if (!qualified) {
                st.failed = true;
            } else {
                snprintf(qualified, len, "%s (%s)", pf->name, base);
                f->name = str_id(&st, qualified);
                free(qualified);
            }
        }
        fnp[i] = f;
    }
    /* profile.proto Location.line: "Multiple line indicates this location has inlined
     * functions, where the last entry represents the caller into which the preceding entries
     * were inlined": the inlined frames innermost first, then the function's own line. */
    for (size_t i = 0, li = 0; i < nl; i++) {
        const struct prof_loc *l = &p->locs.v[i];
        perftools__profiles__location__init(&locs[i]);
        size_t first = li;
        for (uint32_t k = 0; k < l->ninl; k++, li++) {
            const struct prof_inline *in = &p->inl.v[l->inl_first + k];
            perftools__profiles__line__init(&lines[li]);
            lines[li].function_id = in->func + 1;
            lines[li].line = in->line;
            linep[li] = &lines[li];
        }
        perftools__profiles__line__init(&lines[li]);
        lines[li].function_id = l->func + 1;
        lines[li].line = l->line;
        linep[li] = &lines[li];
        li++;
        if (l->line && l->mapping != PROF_NONE)
            maps[l->mapping].has_line_numbers = maps[l->mapping].has_filenames = true;
        if (l->ninl && l->mapping != PROF_NONE)
            maps[l->mapping].has_inline_frames = true;
        locs[i].id = i + 1;
        locs[i].mapping_id = l->mapping == PROF_NONE ? 0 : l->mapping + 1;
        locs[i].address = profile_loc_address(p, l);
        locs[i].n_line = li - first;
        locs[i].line = &linep[first];
        locp[i] = &locs[i];
    }
    int64_t keys[NLABELS] = {str_id(&st, "vcpu"),    str_id(&st, "pid"),    str_id(&st, "tid"),
                             str_id(&st, "process"), str_id(&st, "thread"), str_id(&st, "cpl")};
    /* profile.proto Label.num_unit: "an arbitrary string (for example, "requests") as a custom
     * count unit"; none for the string labels. */
    int64_t units[NLABELS] = {str_id(&st, "index"), str_id(&st, "id"), str_id(&st, "id"), 0, 0,
                              str_id(&st, "ring")};
    int64_t xkeys[NXLABELS] = {str_id(&st, "cgroup"),  str_id(&st, "container_id"),
                               str_id(&st, "pod_uid"), str_id(&st, "ns_pid"),
                               str_id(&st, "ns_tid"),  str_id(&st, "hostname")};
    int64_t id_unit = str_id(&st, "id");
    /* One pprof sample per distinct (labels, locations), in order of first appearance, its
     * values the sum of theirs: the same file whether the profile kept every sample or one
     * entry per distinct stack (profile.aggregate). */
    struct hashidx groups;
    hashidx_init(&groups);
    size_t nout = 0;
    for (size_t i = 0; i < ns; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        for (uint32_t f = 0; f < s->nframes; f++)
            loc_ids[s->first + f] = (uint64_t)p->frames.v[s->first + f].loc + 1;
        struct sample_key key = {p, s, loc_ids, sample_rep};
        uint64_t h = sample_hash(&key);
        uint32_t g = hashidx_find(&groups, h, sample_eq, &key);
        if (g != HASHIDX_NONE) {
            values[2 * g] += (int64_t)s->weight;
            values[2 * g + 1] += (int64_t)(s->weight * p->period_ns);
            continue;
        }
        if (hashidx_insert(&groups, h, (uint32_t)nout) < 0) {
            hashidx_free(&groups);
            goto oom;
        }
        sample_rep[nout] = (uint32_t)i;
        size_t j = nout++;
        Perftools__Profiles__Sample *ps = &smp[j];
        perftools__profiles__sample__init(ps);
        ps->n_location_id = s->nframes;
        ps->location_id = &loc_ids[s->first];
        values[2 * j] = (int64_t)s->weight;
        values[2 * j + 1] = (int64_t)(s->weight * p->period_ns);
        ps->n_value = timed ? 2 : 1;
        ps->value = &values[2 * j];
        Perftools__Profiles__Label *lb = &labels[j * LABELS_MAX];
        for (int k = 0; k < LABELS_MAX; k++) {
            perftools__profiles__label__init(&lb[k]);
            lb[k].key = k < NLABELS ? keys[k] : 0;
            labelp[j * LABELS_MAX + k] = &lb[k];
        }
        /* Numbers with a unit: pprof's decoder drops a numeric label whose value and unit are
         * both 0 (profile/encode.go), and vcpu 0, cpl 0 and the guest's pid 0 (its idle tasks)
         * are common values; a value such as `-tagfocus=vcpu=0` is matched against numeric
         * labels only (internal/driver compileTagFilter), never against strings. */
        lb[L_VCPU].num = (int64_t)s->vcpu;
        lb[L_PID].num = (int64_t)profile_shown_pid(p, s->pid);
        lb[L_TID].num = (int64_t)profile_shown_tid(p, s->pid, s->tid);
        lb[L_CPL].num = (int64_t)s->cpl;
        for (int k = 0; k < NLABELS; k++)
            lb[k].num_unit = units[k];
        lb[L_PROCESS].str = str_id(&st, profile_process_name(p, s->pid));
        lb[L_THREAD].str = str_id(&st, profile_thread_name(p, s->pid, s->tid));
        size_t nlab = NLABELS;
        const struct prof_group *grp = profile_sample_group(p, s);
        if (grp) {
            lb[nlab].key = xkeys[LX_CGROUP];
            lb[nlab++].str = str_id(&st, grp->path);
        }
        if (grp && grp->ct.id[0]) {
            lb[nlab].key = xkeys[LX_CONTAINER];
            lb[nlab++].str = str_id(&st, grp->ct.id);
        }
        if (grp && grp->ct.pod_uid[0]) {
            lb[nlab].key = xkeys[LX_POD];
            lb[nlab++].str = str_id(&st, grp->ct.pod_uid);
        }
        const struct prof_name *pn = profile_name_of(p, s->pid, 0),
                               *tn = profile_name_of(p, s->pid, s->tid);
        if (pn && pn->ns_id >= 0) {
            lb[nlab].key = xkeys[LX_NS_PID];
            lb[nlab].num = pn->ns_id;
            lb[nlab++].num_unit = id_unit;
        }
        if (tn && tn->ns_id >= 0) {
            lb[nlab].key = xkeys[LX_NS_TID];
            lb[nlab].num = tn->ns_id;
            lb[nlab++].num_unit = id_unit;
        }
        if (tn && tn->hostname) {
            lb[nlab].key = xkeys[LX_HOSTNAME];
            lb[nlab++].str = str_id(&st, tn->hostname);
        }
        ps->n_label = nlab;
        ps->label = &labelp[j * LABELS_MAX];
        smpp[j] = ps;
    }
    hashidx_free(&groups);
    if (st.failed)
        goto oom;
    if (ns) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < ns; i++) {
            lo = p->samples.v[i].ts < lo ? p->samples.v[i].ts : lo;
            hi = p->samples.v[i].ts_last > hi ? p->samples.v[i].ts_last : hi;
        }
        double ns_per_tick = 1e9 / (double)(p->ticks_per_sec ? p->ticks_per_sec : 1000000000ull);
        prof.duration_nanos = (int64_t)((double)(hi - lo) * ns_per_tick) + (int64_t)p->period_ns;
    }
    prof.n_mapping = nm;
    prof.mapping = mapp;
    prof.n_location = nl;
    prof.location = locp;
    prof.n_function = nfn;
    prof.function = fnp;
    prof.n_sample = nout;
    prof.sample = smpp;
    prof.n_string_table = st.n;
    prof.string_table = st.v;

    size_t len = perftools__profiles__profile__get_packed_size(&prof);
    packed = malloc(len ? len : 1);
    if (!packed)
        goto oom;
    perftools__profiles__profile__pack(&prof, packed);
    rc = gzip_write(packed, len, out, err);
    goto done;
oom:
    hv_errk(err, HV_ERR_NO_MEMORY, "pprof: out of memory");
done:
    free(packed);
    free(maps);
    free(mapp);
    free(locs);
    free(locp);
    free(lines);
    free(linep);
    free(fns);
    free(fnp);
    free(shared);
    free(smp);
    free(smpp);
    free(labels);
    free(labelp);
    free(loc_ids);
    free(values);
    free(sample_rep);
    strtab_free(&st);
    return rc;
}
