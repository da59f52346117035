/* Python's report half (runtime/runtime.h, docs/python.md): the recording's Python code
 * records, and each sample's recorded Python frames merged into its native stack as py-spy's
 * --native does, after native symbolization. The
 * interpreter runs a chain of Python frames per native _PyEval_EvalFrameDefault frame; the
 * recorder marks the frame each such call was entered with (HVFXT_RT_ENTRY). So, leaf first,
 * each _PyEval_EvalFrameDefault gives way to the Python frames up to the next entry mark:
 *
 *   native  memcpy  json_encode  _PyEval_EvalFrameDefault  PyObject_Call  _PyEval_Eval...  main
 *   python                       dumps* serve               ·              main.py:main*
 *   merged  memcpy  json_encode  dumps serve  PyObject_Call  main.py:main  main
 *
 * Python frames left over (a native walk cut short, or none: a kernel sample whose user stack
 * never came) go at the root end, in their order. Each Python frame is a location of its own
 * (code object, code unit), its function the code object's qualified name in a module named by
 * its .py file, its line from the code object's location table. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashidx.h"
#include "python/py_code.h"
#include "report/profile.h"
#include "report/profile_priv.h"
#include "runtime/runtime.h"
#include "schema/decode.h"
#include "schema/encode.h"

#define PY_EVAL_FUNCTION "_PyEval_EvalFrameDefault" /* CPython 3.11 and 3.13's evaluation loop */

struct pycode {
    uint64_t pid, code, bytecode;
    int32_t firstlineno;
    char *qualname, *filename;
    uint8_t *linetable;
    size_t linetable_len;
    uint32_t module; /* its file's module, PROF_NONE until a frame needs it */
};

/* An address of a process, and the latest record of a code object there. */
struct pykey {
    uint64_t pid, code;
    uint32_t latest;
};

struct prof_python {
    VECTOR(struct pycode) codes; /* every record, in file order */
    VECTOR(struct pykey) keys;
    struct hashidx by_code; /* keys by (pid, code) */
};

struct code_key {
    const struct prof_python *py;
    uint64_t pid, code;
};

static bool code_eq(const void *ctx, uint32_t idx)
{
    const struct code_key *k = ctx;
    const struct pykey *c = &k->py->keys.v[idx];
    return c->pid == k->pid && c->code == k->code;
}

static uint64_t code_hash(uint64_t pid, uint64_t code)
{
    return hashidx_u64(hashidx_u64(HASHIDX_SEED, pid), code);
}

static struct prof_python *python_of(const struct profile *p)
{
    return p->runtime[HVFXT_RUNTIME_PYTHON].data;
}

static struct pykey *find_key(const struct profile *p, uint64_t pid, uint64_t code)
{
    const struct prof_python *py = python_of(p);
    if (!py)
        return NULL;
    struct code_key k = {py, pid, code};
    uint32_t i = hashidx_find(&py->by_code, code_hash(pid, code), code_eq, &k);
    return i == HASHIDX_NONE ? NULL : &py->keys.v[i];
}

static uint64_t python_loc_address(const struct profile *p, const struct prof_loc *l)
{
    const struct prof_python *py = python_of(p);
    if (!(l->flags & PROF_FRAME_RT_CODE))
        return l->addr;
    return py && l->addr < py->codes.n ? py->codes.v[l->addr].code : 0;
}

static int64_t python_code_latest(const struct profile *p, uint64_t pid, uint64_t code)
{
    const struct pykey *k = find_key(p, pid, code);
    return k ? (int64_t)k->latest : -1;
}

static void python_free(void *data)
{
    struct prof_python *py = data;
    if (!py)
        return;
    for (size_t i = 0; i < py->codes.n; i++) {
        free(py->codes.v[i].qualname);
        free(py->codes.v[i].filename);
        free(py->codes.v[i].linetable);
    }
    vec_free(&py->codes);
    vec_free(&py->keys);
    hashidx_free(&py->by_code);
    free(py);
}

static char *dup_name(const char *s, size_t len)
{
    char *raw = malloc(len + 1);
    if (!raw)
        return NULL;
    memcpy(raw, s, len);
    raw[len] = 0;
    char *out = prof_dup_printable(raw);
    free(raw);
    return out;
}

static int python_add_code(struct profile *p, const struct hvfxt_code_view *c, struct hv_err *err)
{
    if (!python_of(p)) {
        struct prof_python *py = calloc(1, sizeof(*py));
        if (!py)
            return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
        hashidx_init(&py->by_code);
        p->runtime[HVFXT_RUNTIME_PYTHON].data = py;
        p->runtime[HVFXT_RUNTIME_PYTHON].free = python_free;
    }
    struct prof_python *py = python_of(p);
    if (PROF_VEC_RESERVE(py->codes, err) < 0 || PROF_VEC_RESERVE(py->keys, err) < 0)
        return -1;
    struct pycode *e = &py->codes.v[py->codes.n];
    *e = (struct pycode){.pid = c->pid,
                         .code = c->code,
                         .bytecode = c->base,
                         .firstlineno = c->firstlineno,
                         .module = PROF_NONE};
    e->qualname = dup_name(c->name.ptr, c->name.len);
    e->filename = dup_name(c->filename.ptr, c->filename.len);
    if (c->table_len && (e->linetable = malloc(c->table_len)) != NULL) {
        memcpy(e->linetable, c->table, c->table_len);
        e->linetable_len = c->table_len;
    }
    if (!e->qualname || !e->filename || (c->table_len && !e->linetable)) {
        free(e->qualname);
        free(e->filename);
        free(e->linetable);
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    }
    uint32_t idx = (uint32_t)py->codes.n++;
    struct pykey *k = find_key(p, c->pid, c->code);
    if (k) {
        k->latest = idx; /* another code object at that address, from here on */
        return 0;
    }
    py->keys.v[py->keys.n] = (struct pykey){c->pid, c->code, idx};
    if (hashidx_insert(&py->by_code, code_hash(c->pid, c->code), (uint32_t)py->keys.n) < 0)
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    py->keys.n++;
    return 0;
}

static int python_resolve(struct profile *p, struct prof_loc *l, struct hv_err *err)
{
    l->mapping = PROF_NONE;
    l->func_off = 0;
    l->line = 0;
    const struct prof_python *py = python_of(p);
    struct pycode *c = (l->flags & PROF_FRAME_RT_CODE) && py && l->addr < py->codes.n
                           ? &py->codes.v[l->addr]
                           : NULL;
    int f;
    if (!c) {
        /* No record names it (its object could not be read, or the budget ran out). */
        char buf[64];
        int m = profile_add_module(p, "[python]", NULL, 0, false, err);
        if (m < 0)
            return -1;
        p->modules.v[m].runtime = HVFXT_RUNTIME_PYTHON;
        snprintf(buf, sizeof(buf), "[python code 0x%" PRIx64 "]", l->addr);
        f = prof_intern_func(p, buf, (uint32_t)m, err);
        l->resolved = false;
    } else {
        if (c->module == PROF_NONE) {
            int m = profile_add_module(p, c->filename[0] ? c->filename : "[python]", NULL, 0, false,
                                       err);
            if (m < 0)
                return -1;
            p->modules.v[m].runtime = HVFXT_RUNTIME_PYTHON;
            c->module = (uint32_t)m;
        }
        f = prof_intern_func(p, c->qualname[0] ? c->qualname : "?", c->module, err);
        l->resolved = true;
        uint32_t index = PROF_FRAME_RT_INDEX(l->flags);
        if (f >= 0 && index != PROF_RT_INDEX_NONE) {
            int32_t line =
                py_line_of(c->linetable, c->linetable_len, c->firstlineno, (uint64_t)index);
            l->line = line > 0 ? (uint32_t)line : 0;
        }
    }
    if (f < 0)
        return -1;
    struct prof_func *fn = &p->funcs.v[f];
    if (!fn->runtime) {
        fn->runtime = HVFXT_RUNTIME_PYTHON;
        if (c && c->filename[0] && !fn->file) {
            fn->file = strdup(c->filename);
            fn->start_line = c->firstlineno > 0 ? (uint32_t)c->firstlineno : 0;
        }
    }
    l->func = (uint32_t)f;
    return 0;
}

/* A recorded Python frame (its two entries: the code word, or its record's index with
 * PROF_FRAME_RT_CODE as the loader bound it, and the instruction pointer) as a frame of the
 * profile. */
#define PY_FRAME (PROF_FRAME_RUNTIME | PROF_FRAME_RT_ID_OF(HVFXT_RUNTIME_PYTHON))
static struct prof_frame python_frame(const struct profile *p, const struct prof_frame *e)
{
    const struct prof_python *py = python_of(p);
    uint64_t instr = e[1].addr;
    uint32_t index = PROF_RT_INDEX_NONE;
    if (!(e->flags & PROF_FRAME_RT_CODE) || !py || e->addr >= py->codes.n)
        return (struct prof_frame){.addr = e->addr & HVFXT_RT_CODE_MASK,
                                   .loc = PROF_NONE,
                                   .flags = PY_FRAME | PROF_FRAME_RT_INDEX_OF(index)};
    const struct pycode *c = &py->codes.v[e->addr];
    /* A frame pushed but not yet run points one code unit before the bytecode (3.11, 3.12):
     * at the function's start. */
    if (instr + 2 == c->bytecode)
        index = 0;
    else if (instr >= c->bytecode && !((instr - c->bytecode) & 1) &&
             (instr - c->bytecode) / 2 < PROF_RT_INDEX_NONE)
        index = (uint32_t)((instr - c->bytecode) / 2);
    return (struct prof_frame){.addr = e->addr,
                               .loc = PROF_NONE,
                               .flags =
                                   PY_FRAME | PROF_FRAME_RT_CODE | PROF_FRAME_RT_INDEX_OF(index)};
}

static bool is_eval_frame(const struct profile *p, const struct prof_frame *fr)
{
    if ((fr->flags & (PROF_FRAME_KERNEL | PROF_FRAME_RUNTIME | PROF_FRAME_RT_RAW)) ||
        fr->loc >= p->locs.n || !p->locs.v[fr->loc].resolved)
        return false;
    return !strcmp(p->funcs.v[p->locs.v[fr->loc].func].name, PY_EVAL_FUNCTION);
}

/* A recorded frame's entry of Python's (another runtime's are not this half's). */
static bool is_python_raw(const struct prof_frame *fr)
{
    return (fr->flags & PROF_FRAME_RT_RAW) && PROF_FRAME_RT_ID(fr->flags) == HVFXT_RUNTIME_PYTHON;
}

/* Sample s's frames rebuilt at the end of the frame array: Python frames in place. */
static int merge_sample(struct profile *p, size_t s, struct hv_err *err)
{
    struct prof_sample *sm = &p->samples.v[s];
    uint32_t first = sm->first, n = sm->nframes;
    /* The recorded Python frames (the loader put them together), innermost first: entries
     * 2k (code word) and 2k+1 (instruction pointer); and the evaluation loops. */
    uint32_t py_at = UINT32_MAX, py_n = 0, evals = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct prof_frame *fr = &p->frames.v[first + i];
        if (is_python_raw(fr)) {
            if (py_at == UINT32_MAX)
                py_at = first + i;
            py_n++;
        }
        evals += is_eval_frame(p, fr);
    }
    py_n /= 2;
    if (py_at == UINT32_MAX)
        return 0;
    /* The rebuilt frames take at most as many entries as the recorded ones. */
    if (!vec_reserve(&p->frames, n))
        return hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory");
    sm = &p->samples.v[s];
    size_t out = p->frames.n;
    /* Evaluation loops past the chains (leaf end first): a loop just entered, whose frame is
     * not the thread's current one yet (or one leaving), runs no Python frame: it stays. */
    uint32_t chains = 0;
    for (uint32_t k = 0; k < py_n; k++)
        chains += k + 1 == py_n || (p->frames.v[py_at + 2 * k].flags & PROF_FRAME_RT_ENTRY);
    uint32_t keep = evals > chains ? evals - chains : 0;
    uint32_t next = 0; /* the next Python frame to place */
    for (uint32_t i = 0; i < n; i++) {
        const struct prof_frame *fr = &p->frames.v[first + i];
        if (is_python_raw(fr))
            continue;
        if (next < py_n && is_eval_frame(p, fr) && keep-- == 0) {
            keep = 0;
            /* This evaluation loop's frames: up to and including its entry frame. */
            while (next < py_n) {
                const struct prof_frame *e = &p->frames.v[py_at + 2 * next];
                p->frames.v[out++] = python_frame(p, e);
                next++;
                if (e->flags & PROF_FRAME_RT_ENTRY)
                    break;
            }
            continue;
        }
        p->frames.v[out++] = *fr;
    }
    while (next < py_n)
        p->frames.v[out++] = python_frame(p, &p->frames.v[py_at + 2 * next++]);
    sm->first = (uint32_t)p->frames.n;
    sm->nframes = (uint32_t)(out - p->frames.n);
    p->frames.n = out; /* the Python frames resolved by profile_symbolize() after the merge */
    return 0;
}

static int python_merge(struct profile *p, struct hv_err *err)
{
    for (size_t s = 0; s < p->samples.n; s++)
        if (merge_sample(p, s, err) < 0)
            return -1;
    return 0;
}

const struct runtime_report_ops runtime_python_report = {
    .id = HVFXT_RUNTIME_PYTHON,
    .name = "python",
    .add_code = python_add_code,
    .code_latest = python_code_latest,
    .merge = python_merge,
    .resolve = python_resolve,
    .loc_address = python_loc_address,
};
