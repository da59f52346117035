/* Python's record half (runtime/runtime.h): CPython interpreters in guest processes, on the
 * drain thread (docs/python.md).
 *
 * Finding them: after each look at a process's address space (rec_address_space), a module
 * whose name says Python (python3.x, libpython3.x.so) and whose dynamic symbol table exports
 * the objects _PyRuntime and Py_Version is an interpreter; python/py_frames.h opens it (the
 * version picks the layout: a table, or 3.13's own _Py_DebugOffsets). Its description is
 * published to the exit half (python/exit/), which then reads each sample's Python frames as
 * addresses. A process whose interpreter cannot be read yet (its data pages not
 * touched this early) is tried again, at every look and a few times a second, a bounded number
 * of times.
 *
 * Naming them: the drain thread looks at each sample record it moves to the file
 * (fxt_writer_drain_ring_visit); a code object it has not named yet is read from the process's
 * memory (qualified name, file, first line, location table) into a runtime code record, once
 * per process and code object, within the recording's metadata budget. A code object that
 * cannot be read is tried again at a later sample, PY_CODE_TRIES times in all. Not with
 * `record --no-python`. */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/generic/generic.h"
#include "guestos/generic/user_modules.h"
#include "python/py_code.h"
#include "sampler/parts/module_files.h"
#include "common/clock.h"
#include "sampler/exit/core.h"
#include "sampler/parts/meta_budget.h"
#include "runtime/runtime.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

#define PY_OPEN_TRIES    50           /* opens of one process's interpreter */
#define PY_OPEN_EVERY_NS 100000000ull /* 100 ms between them */
#define PY_MAX_CODES     (1u << 16)   /* code objects named per recording (a power of 2) */
#define PY_CODE_GONE     1ull /* a code slot given back (code objects are aligned: no code's) */
#define PY_CODE_TRIES    3    /* reads of a code object that does not read */
#define PY_CODE_COST(n)  (64u + (uint64_t)(n)) /* bytes of a code record with n bytes of text */
/* A code object named is looked at again (its fingerprint, three reads) when a sample shows it
 * this long after the last look: a freed one's address is reused by the next, which then gets
 * a record of its own (the reader binds each sample to the record before it). */
#define PY_RECHECK_NS 50000000ull

enum py_proc_state { PY_NONE, PY_CANDIDATE, PY_PUBLISHED, PY_REFUSED };

struct py_proc {
    uint8_t state, tries;
    uint64_t runtime, version;   /* run-time addresses of _PyRuntime and Py_Version */
    uint64_t next_ns;            /* a candidate's next open */
    struct discover_module *mod; /* a candidate's interpreter module, freed once opened */
    struct py_runtime *rt;       /* published to the exit half, retired when the process ends */
};

struct py_code_slot {
    uint64_t code; /* 0: empty; PY_CODE_GONE: an ended process's, probes go on past it */
    uint32_t proc;
    uint8_t tries; /* failed reads */
    bool named;
    uint64_t fp[3];     /* py_code_fingerprint when named */
    uint64_t looked_ns; /* when it was named or its fingerprint last read */
};

struct python {
    const struct rec_env *env;
    struct py_proc proc[ID_MAX_PROCS];
    struct py_code_slot *codes; /* PY_MAX_CODES, open addressing */
    uint32_t ncodes;
    bool any; /* an interpreter was published */
    /* For the summary. */
    uint64_t interpreters, refused, named, unreadable, no_room, table_full, bytes;
    uint64_t renamed;     /* addresses a new code object took, named again */
    unsigned versions[8]; /* interpreters by minor version 10..17 */
    char refused_why[160];
};

static bool python_wanted(const struct sampler_config *cfg)
{
    return !cfg->no_python;
}

static void python_destroy(void *st)
{
    struct python *p = st;
    if (!p)
        return;
    for (uint32_t i = 0; i < ID_MAX_PROCS; i++) {
        free(p->proc[i].rt);
        free(p->proc[i].mod);
    }
    free(p->codes);
    free(p);
}

static int python_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    struct python *p = calloc(1, sizeof(*p));
    if (!p || !(p->codes = calloc(PY_MAX_CODES, sizeof(*p->codes)))) {
        free(p);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    p->env = env;
    *st = p;
    return 0;
}

struct proc_mem {
    const struct rec_env *env;
    struct guestos_as as;
    /* Opening an interpreter: its module, whose read-only pages the process never touched
     * come from its file (a disk hvprof serves, or the guest's page cache: module_files.h). */
    const struct discover_module *mod;
    struct module_file f;
    int file; /* 0 not looked for, 1 open, -1 none */
};

/* len bytes at va of mod's read-only segments from its file. */
static bool read_file(struct proc_mem *pm, uint64_t va, void *dst, size_t len)
{
    const struct discover_module *m = pm->mod;
    if (!m || !m->file_offsets || len > 4096)
        return false;
    for (unsigned i = 0; i < m->nseg; i++) {
        const struct discover_seg *sg = &m->seg[i];
        if ((sg->flags & PF_W) || va < sg->start || va + len > sg->start + sg->size)
            continue;
        if (!pm->file)
            pm->file = module_file_find(pm->env, &pm->as, m, false, &pm->f) &&
                               module_file_same(&pm->f, &pm->as)
                           ? 1
                           : -1;
        if (pm->file < 0)
            return false;
        uint64_t off = sg->file_offset + (va - sg->start);
        uint8_t page[2][4096];
        uint64_t first = off / 4096, last = (off + len - 1) / 4096;
        if (!module_file_page(&pm->f, first, page[0]) ||
            (last != first && !module_file_page(&pm->f, last, page[1])))
            return false;
        memcpy(dst, &page[0][0] + off % 4096, len);
        return true;
    }
    return false;
}

static bool read_proc(void *ctx, uint64_t va, void *dst, size_t len)
{
    struct proc_mem *pm = ctx;
    return guestos_read_user(pm->env->os, pm->env->mem, &pm->as, va, dst, len) ||
           read_file(pm, va, dst, len);
}

static struct proc_mem proc_mem_of(const struct rec_env *env, const struct id_proc *ip)
{
    const struct id_proc_info *i = &ip->info;
    return (struct proc_mem){.env = env, .as = {i->cr0, i->cr3, i->cr4, i->efer, -1}};
}

/* A module whose file name says it is CPython: python3.x, libpython3.x.so... */
static bool python_named(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return !strncmp(base, "python3", 7) || !strncmp(base, "libpython3", 10);
}

static void try_open(struct python *p, uint32_t proc, struct py_proc *pp,
                     const struct runtime_publisher *pub)
{
    const struct id_proc *ip = id_proc_at(p->env->core->ids, proc);
    if (!ip)
        return;
    struct proc_mem pm = proc_mem_of(p->env, ip);
    pm.mod = pp->mod;
    struct rt_mem m = {read_proc, &pm};
    struct py_runtime rt;
    char why[128];
    pp->tries++;
    pp->next_ns = hv_now_ns() + PY_OPEN_EVERY_NS;
    int rc = py_runtime_open(&rt, &m, pp->runtime, pp->version, why, sizeof(why));
    if (rc < 0) {
        /* A version without a layout stays one; an unreadable page may be read later. */
        bool final = rc != PY_OPEN_UNREADABLE || pp->tries >= PY_OPEN_TRIES;
        if (final) {
            pp->state = PY_REFUSED;
            free(pp->mod);
            pp->mod = NULL;
            p->refused++;
            snprintf(p->refused_why, sizeof(p->refused_why), "%s", why);
        }
        return;
    }
    struct py_runtime *own = malloc(sizeof(*own));
    if (!own)
        return;
    *own = rt;
    if (own->l == &rt.own) /* 3.13+: the layout read from the interpreter lives in it */
        own->l = &own->own;
    pp->rt = own;
    pp->state = PY_PUBLISHED;
    free(pp->mod);
    pp->mod = NULL;
    p->any = true;
    p->interpreters++;
    unsigned minor = (unsigned)(own->version >> 16) & 0xff;
    if (minor >= 10 && minor < 18)
        p->versions[minor - 10]++;
    pub->publish(pub->ctx, proc, &runtime_python_exit, own);
}

static void python_address_space(void *st, const struct rec_env *env, uint32_t proc,
                                 const struct guestos_as *as, const struct discover_module *found,
                                 size_t n, const struct runtime_publisher *pub)
{
    (void)env;
    struct python *p = st;
    if (!proc || proc > ID_MAX_PROCS)
        return;
    struct py_proc *pp = &p->proc[proc - 1];
    if (pp->state == PY_PUBLISHED || pp->state == PY_REFUSED)
        return;
    if (pp->state == PY_NONE) {
        struct pt_mmu mmu;
        if (!guestos_generic_user_mmu(p->env->mem, as, &mmu))
            return;
        static const char *const names[] = {"_PyRuntime", "Py_Version"};
        for (size_t i = 0; i < n; i++) {
            uint64_t at[2];
            if (!python_named(found[i].name) ||
                discover_guest_objects(p->env->mem, &mmu, &found[i], names, 2, at) != 2)
                continue;
            pp->runtime = found[i].bias + at[0];
            pp->version = found[i].bias + at[1];
            pp->state = PY_CANDIDATE;
            pp->mod = malloc(sizeof(*pp->mod));
            if (pp->mod)
                *pp->mod = found[i];
            break;
        }
    }
    if (pp->state == PY_CANDIDATE)
        try_open(p, proc, pp, pub);
}

/* Candidates whose interpreter could not be read yet, tried again. */
static void python_poll(void *st, const struct rec_env *env, uint64_t now,
                        const struct runtime_publisher *pub)
{
    struct python *p = st;
    for (uint32_t id = 1; id <= ID_MAX_PROCS && rec_may_work(env); id++) {
        struct py_proc *pp = &p->proc[id - 1];
        if (pp->state == PY_CANDIDATE && now >= pp->next_ns)
            try_open(p, id, pp, pub);
    }
}

static struct py_code_slot *code_slot(struct python *p, uint32_t proc, uint64_t code)
{
    uint64_t h = (code >> 4) * 0x9e3779b97f4a7c15ull ^ (uint64_t)proc * 0xc2b2ae3d27d4eb4full;
    struct py_code_slot *gone = NULL;
    for (uint32_t k = 0; k < PY_MAX_CODES; k++) {
        struct py_code_slot *e = &p->codes[(h + k) & (PY_MAX_CODES - 1)];
        if (e->code == code && e->proc == proc)
            return e;
        if (e->code == PY_CODE_GONE && !gone)
            gone = e;
        if (!e->code) {
            /* Keep a quarter free: probes stay short. A given-back slot is taken first. */
            if (!gone && p->ncodes >= PY_MAX_CODES / 4 * 3)
                return NULL;
            if (!gone)
                p->ncodes++;
            e = gone ? gone : e;
            *e = (struct py_code_slot){.code = code, .proc = proc};
            return e;
        }
    }
    return NULL;
}

/* Its process ended: its interpreter's description retired, its code objects' slots given
 * back (only a Python process has any). */
static void python_process_ended(void *st, const struct rec_env *env, uint32_t proc)
{
    struct python *p = st;
    if (!p || !proc || proc > ID_MAX_PROCS)
        return;
    struct py_proc *pp = &p->proc[proc - 1];
    if (pp->state == PY_NONE)
        return;
    if (pp->rt)
        rec_retire(env, pp->rt, free);
    free(pp->mod);
    *pp = (struct py_proc){0};
    for (uint32_t k = 0; k < PY_MAX_CODES; k++)
        if (p->codes[k].proc == proc && p->codes[k].code > PY_CODE_GONE)
            p->codes[k] = (struct py_code_slot){.code = PY_CODE_GONE};
}

static int python_name_code(void *st, const struct rec_env *env, uint32_t proc, uint64_t pid,
                            uint64_t code, uint64_t now, struct hv_err *err)
{
    (void)env;
    struct python *p = st;
    struct py_code_slot *e = code_slot(p, proc, code);
    if (!e) {
        p->table_full++;
        return 0;
    }
    if (e->tries >= PY_CODE_TRIES || (e->named && now < e->looked_ns + PY_RECHECK_NS))
        return 0;
    const struct py_runtime *rt = p->proc[proc - 1].rt;
    const struct id_proc *ip = id_proc_at(p->env->core->ids, proc);
    if (!rt || !ip)
        return 0;
    struct proc_mem pm = proc_mem_of(p->env, ip);
    struct rt_mem m = {read_proc, &pm};
    uint64_t fp[3];
    bool have_fp = py_code_fingerprint(rt, &m, code, fp);
    if (e->named) {
        /* Still the object it named (or unreadable now: kept)? */
        if (!have_fp || !memcmp(fp, e->fp, sizeof(fp))) {
            e->looked_ns = now;
            return 0;
        }
        p->renamed++;
    }
    struct py_code_info ci;
    if (!have_fp || !py_code_read(rt, &m, code, &ci)) {
        if (!e->named && ++e->tries == PY_CODE_TRIES)
            p->unreadable++;
        return 0;
    }
    memcpy(e->fp, fp, sizeof(fp));
    e->looked_ns = now;
    size_t tl = 0;
    uint8_t *table = py_code_linetable(rt, &m, code, HVFXT_CODE_TABLE_MAX, &tl);
    size_t ql = strlen(ci.qualname), fl = strlen(ci.filename);
    uint64_t cost = PY_CODE_COST(ql + fl + tl);
    e->named = true;
    if (meta_budget_symbols_left(p->env->meta) < cost) {
        p->no_room++;
        free(table);
        return 0;
    }
    struct hvfxt_code c = {
        .runtime = HVFXT_RUNTIME_PYTHON,
        .pid = pid,
        .code = code,
        .base = py_code_bytecode(rt, code),
        .firstlineno = ci.firstlineno,
        .name = ci.qualname,
        .name_len = (uint16_t)ql,
        .filename = ci.filename,
        .filename_len = (uint16_t)fl,
        .table = table,
        .table_len = table ? (uint32_t)tl : 0,
    };
    int rc = hvfxt_write_code(p->env->w, &c, err);
    free(table);
    if (rc == 0) {
        p->named++;
        p->bytes += cost;
    }
    return rc;
}

static void python_summary(const void *st, const struct rec_env *env, FILE *out)
{
    const struct python *p = st;
    uint64_t samples = 0, frames = 0, reads = 0, ns = 0;
    for (unsigned i = 0; i < env->cfg->nvcpus; i++) {
        samples += env->core->v[i].st.rt_samples;
        frames += env->core->v[i].st.rt_frames;
        reads += env->core->v[i].st.rt_reads;
        ns += env->core->v[i].st.t_rt;
    }
    if (!p || (!p->interpreters && !p->refused))
        return;
    fprintf(out, "  python: %" PRIu64 " interpreter%s (", p->interpreters,
            p->interpreters == 1 ? "" : "s");
    bool first = true;
    for (unsigned i = 0; i < 8; i++)
        if (p->versions[i]) {
            fprintf(out, "%s3.%u: %u", first ? "" : ", ", 10 + i, p->versions[i]);
            first = false;
        }
    fprintf(out,
            "%s); %" PRIu64 " samples with Python frames (%.1f frames each, %.2f us a read at "
            "the exit); %" PRIu64 " code objects named (%.1f KiB)",
            first ? "none" : "", samples, samples ? (double)frames / (double)samples : 0.0,
            reads ? (double)ns / 1e3 / (double)reads : 0.0, p->named, (double)p->bytes / 1024.0);
    if (p->renamed)
        fprintf(out, ", %" PRIu64 " of them at the address of an earlier one", p->renamed);
    if (p->unreadable)
        fprintf(out, ", %" PRIu64 " unreadable", p->unreadable);
    if (p->no_room)
        fprintf(out, ", %" PRIu64 " not named (the metadata budget)", p->no_room);
    if (p->table_full)
        fprintf(out, ", %" PRIu64 " frames of code objects past the table's %u", p->table_full,
                PY_MAX_CODES / 4 * 3);
    fputc('\n', out);
    if (p->refused)
        fprintf(out, "  python: %" PRIu64 " interpreter%s not read: %s\n", p->refused,
                p->refused == 1 ? "" : "s", p->refused_why);
}

const struct runtime_record_ops runtime_python_record = {
    .id = HVFXT_RUNTIME_PYTHON,
    .name = "python",
    .wanted = python_wanted,
    .create = python_create,
    .address_space = python_address_space,
    .poll = python_poll,
    .name_code = python_name_code,
    .process_ended = python_process_ended,
    .summary = python_summary,
    .destroy = python_destroy,
};
