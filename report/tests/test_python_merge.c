/* Python frames in reports (python/report/, docs/python.md): a recording written with the
 * recorder's encoders, with an interpreter module whose _PyEval_EvalFrameDefault runs two
 * chains of Python frames (one entered from C through a builtin), code records with location
 * tables; the merged stacks, names, files and lines are pinned exactly. Twice: as the recorder
 * writes it now (runtime_stack, runtime code records) and as recordings before runtime records
 * hold it (python_stack, Python code records), which still load the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fxt/encode.h"
#include "report/fxt_load.h"
#include "report/report_stacks.h"
#include "schema/decode.h"
#include "schema/encode.h"
#include "rec_buf.h"

#define PID   0x10000001ull
#define CODE0 0x7f0000001000ull /* leaf_loop, 10 */
#define CODE1 0x7f0000002000ull /* key, 20 */
#define CODE2 0x7f0000003000ull /* through_c, 30 */
#define CODE3 0x7f0000004000ull /* <module>, 1 */
#define CODE4 0x7f0000005000ull /* no record */
#define BC    0xd0              /* the bytecode's offset in each code object */

/* Location tables (CPython 3.11+, Objects/locations.md): "no column" entries, first byte
 * 0x80 | 13 << 3 | (code units - 1), then the line's delta as a signed varint. Four units on
 * the first line, four on the next. */
static const uint8_t table[] = {0xe8 | 3, 0, 0xe8 | 3, 2};

static bool old_format; /* the recording as before runtime records */

static void pycode(struct buf *b, uint64_t code, const char *name, int32_t first)
{
    struct hvfxt_code c = {.runtime = HVFXT_RUNTIME_PYTHON,
                           .pid = PID,
                           .code = code,
                           .base = code + BC,
                           .firstlineno = first,
                           .name = name,
                           .name_len = (uint16_t)strlen(name),
                           .filename = "/py/t.py",
                           .filename_len = 8,
                           .table = table,
                           .table_len = sizeof(table)};
    put(b, hvfxt_enc_code(b->w + b->n, CAP(b), &c, old_format));
}

/* A sample's Python frames in the recording's format: python_stack's words as they are, or
 * runtime_stack's, the runtime's id first. */
static uint64_t rt_words[1 + 2 * 16];
static void with_frames(struct hvfxt_sample *s, const uint64_t *py, uint32_t n)
{
    s->fields &= ~(uint64_t)(HVFXT_SF_PYTHON_STACK | HVFXT_SF_RUNTIME_STACK);
    if (old_format) {
        s->fields |= HVFXT_SF_PYTHON_STACK;
        s->py_stack = py;
        s->n_py = n;
        return;
    }
    rt_words[0] = HVFXT_RUNTIME_PYTHON;
    memcpy(rt_words + 1, py, n * sizeof(*py));
    s->fields |= HVFXT_SF_RUNTIME_STACK;
    s->rt_stack = rt_words;
    s->n_rt = 1 + n;
}

static void build(struct buf *b)
{
    put(b, fxt_enc_magic(b->w + b->n, CAP(b)));
    put(b, fxt_enc_provider_info(b->w + b->n, CAP(b), 0, "hvprof", 6));
    put(b, fxt_enc_provider_info(b->w + b->n, CAP(b), 1, "vcpu0", 5));
    put(b, fxt_enc_provider_section(b->w + b->n, CAP(b), 0));
    put(b, fxt_enc_init(b->w + b->n, CAP(b), 1000000000ull));
    put(b, fxt_enc_kobj_process(b->w + b->n, CAP(b), PID, "python3.11"));
    put(b, fxt_enc_kobj_thread(b->w + b->n, CAP(b), 0x40000001, "python3.11", PID));
    struct hvfxt_module m = {.id = 1, .name = "/usr/bin/python3.11", .name_len = 19};
    put(b, hvfxt_enc_module(b->w + b->n, CAP(b), &m));
    struct hvfxt_mapping mp = {.pid = PID,
                               .module_id = 1,
                               .start = 0x401000,
                               .size = 0x5000,
                               .vaddr = 0x401000,
                               .flags = 5,
                               .ts = 1};
    put(b, hvfxt_enc_mapping(b->w + b->n, CAP(b), &mp));
    struct hvfxt_symbol syms[] = {{0x401000, 'T', "main", 4},
                                  {0x402000, 'T', "_PyEval_EvalFrameDefault", 24},
                                  {0x403000, 'T', "builtin_sorted", 14},
                                  {0x404000, 'T', "memcpy", 6},
                                  {0x405000, 0, "", 0}};
    size_t taken;
    put(b, hvfxt_enc_symbols(b->w + b->n, CAP(b), 1, syms, 5, &taken));
    assert_int_equal(taken, 5);
    pycode(b, CODE0, "leaf_loop", 10);
    pycode(b, CODE1, "key", 20);
    pycode(b, CODE2, "through_c", 30);
    pycode(b, CODE3, "<module>", 1);

    put(b, fxt_enc_provider_section(b->w + b->n, CAP(b), 1));
    put(b, fxt_enc_init(b->w + b->n, CAP(b), 1000000000ull));
    /* 1: in memcpy, called by leaf_loop (unit 5: line 11), called by key (entered from C:
     * builtin_sorted), called by through_c (unit 2: line 30), run by <module> (entered). */
    uint64_t us[] = {0x404010, 0x402100, 0x403100, 0x402200, 0x401100};
    uint64_t py[] = {CODE0, CODE0 + BC + 10, CODE1 | HVFXT_PY_ENTRY, CODE1 + BC,
                     CODE2, CODE2 + BC + 4,  CODE3 | HVFXT_PY_ENTRY, CODE3 + BC + 14};
    struct hvfxt_sample s = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                       HVFXT_SF_USER_STACK | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                                       HVFXT_SF_PC,
                             .pid = PID,
                             .tid = 0x40000001,
                             .ts = 100,
                             .user_stack = us,
                             .n_user = 5,
                             .cpl = 3,
                             .pc = 0x404010};
    with_frames(&s, py, 8);
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &s));
    /* 2: in the guest kernel with no user stack: the Python frames at the root end; one code
     * object without a record. */
    uint64_t ks[] = {0xffffffff81000100ull};
    uint64_t py2[] = {CODE4, CODE4 + BC, CODE3 | HVFXT_PY_ENTRY, CODE3 + BC};
    struct hvfxt_sample k = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                       HVFXT_SF_VCPU | HVFXT_SF_CPL | HVFXT_SF_PC |
                                       HVFXT_SF_KERNEL_STACK,
                             .pid = PID,
                             .tid = 0x40000001,
                             .ts = 200,
                             .cpl = 0,
                             .pc = 0xffffffff81000100ull,
                             .kernel_stack = ks,
                             .n_kernel = 1};
    with_frames(&k, py2, 4);
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &k));
    /* 3: another code object at through_c's address (its record first), run by an evaluation
     * loop while a second one was just entered at the leaf (its frame not current yet): the
     * leaf loop stays, the outer one gives way. */
    put(b, fxt_enc_provider_section(b->w + b->n, CAP(b), 0));
    pycode(b, CODE2, "reused", 40);
    put(b, fxt_enc_provider_section(b->w + b->n, CAP(b), 1));
    uint64_t us3[] = {0x402010, 0x402100, 0x401100};
    uint64_t py3[] = {CODE2 | HVFXT_PY_ENTRY, CODE2 + BC};
    s.ts = 300;
    s.pc = 0x402010;
    s.user_stack = us3;
    s.n_user = 3;
    with_frames(&s, py3, 2);
    put(b, hvfxt_enc_sample(b->w + b->n, CAP(b), &s));
}

static const char *fname(const struct profile *p, const struct prof_sample *s, uint32_t i,
                         uint32_t *line, bool *python)
{
    const struct prof_frame *fr = &p->frames.v[s->first + i];
    assert_true(fr->loc < p->locs.n);
    const struct prof_loc *l = &p->locs.v[fr->loc];
    *line = l->line;
    *python = p->funcs.v[l->func].runtime == HVFXT_RUNTIME_PYTHON;
    return p->funcs.v[l->func].name;
}

static void test_merge(void **state)
{
    (void)state;
    static struct buf b;
    b.n = 0;
    build(&b);
    /* HVPROF_WRITE_SEED=FILE: the recording, as a seed of fuzz_report_fxt_load's corpus. */
    const char *seed = getenv("HVPROF_WRITE_SEED");
    FILE *sf = seed ? fopen(seed, "wb") : NULL;
    if (sf) {
        fwrite(b.w, 8, b.n, sf);
        fclose(sf);
    }
    struct profile p;
    struct fxt_load_stats st;
    struct hv_err err;
    profile_init(&p);
    assert_int_equal(fxt_load_profile(b.w, b.n * 8, &p, &st, NULL, NULL, &err), 0);
    assert_int_equal(st.runtime_codes, 5);
    assert_int_equal(st.runtime_samples, 3);
    assert_int_equal(profile_symbolize(&p, NULL, NULL, &err), 0);
    assert_int_equal(p.samples.n, 3);

    static const struct {
        const char *name;
        uint32_t line;
        bool python;
    } want1[] = {{"memcpy", 0, false},    {"leaf_loop", 11, true},
                 {"key", 20, true},       {"builtin_sorted", 0, false},
                 {"through_c", 30, true}, {"<module>", 2, true},
                 {"main", 0, false}};
    const struct prof_sample *s = &p.samples.v[0];
    assert_int_equal(s->nframes, 7);
    for (uint32_t i = 0; i < 7; i++) {
        uint32_t line;
        bool py;
        assert_string_equal(fname(&p, s, i, &line, &py), want1[i].name);
        assert_int_equal(py, want1[i].python);
        if (py)
            assert_int_equal(line, want1[i].line);
    }
    /* A Python function's file and first line (pprof's Function). */
    const struct prof_frame *fr = &p.frames.v[s->first + 2];
    const struct prof_func *key = &p.funcs.v[p.locs.v[fr->loc].func];
    assert_int_equal(profile_loc_address(&p, &p.locs.v[fr->loc]), CODE1);
    assert_string_equal(key->file, "/py/t.py");
    assert_int_equal(key->start_line, 20);
    assert_string_equal(p.modules.v[key->module].name, "/py/t.py");
    assert_int_equal(p.modules.v[key->module].runtime, HVFXT_RUNTIME_PYTHON);

    /* The kernel sample: its kernel frames, then the Python frames (one unnamed). */
    s = &p.samples.v[1];
    assert_int_equal(s->nframes, 3);
    uint32_t line;
    bool py;
    char want[64];
    snprintf(want, sizeof(want), "[python code 0x%llx]", (unsigned long long)CODE4);
    assert_string_equal(fname(&p, s, 1, &line, &py), want);
    assert_true(py);
    assert_string_equal(fname(&p, s, 2, &line, &py), "<module>");
    assert_int_equal(line, 1);

    /* Sample 3: the new code object's name; the leaf evaluation loop kept. */
    s = &p.samples.v[2];
    assert_int_equal(s->nframes, 3);
    assert_string_equal(fname(&p, s, 0, &line, &py), "_PyEval_EvalFrameDefault");
    assert_false(py);
    assert_string_equal(fname(&p, s, 1, &line, &py), "reused");
    assert_int_equal(line, 40);
    assert_string_equal(fname(&p, s, 2, &line, &py), "main");

    /* Symbolized again (symbols loaded later): the same. */
    assert_int_equal(profile_symbolize(&p, NULL, NULL, &err), 0);
    assert_int_equal(p.samples.v[0].nframes, 7);

    /* Folded stacks: Python functions say their file. */
    struct report_stacks rs;
    assert_int_equal(report_stacks_build(&p, NULL, &rs, &err), 0);
    bool found = false;
    for (size_t i = 0; i < rs.n; i++)
        found |= !strcmp(rs.v[i].text, "python3.11;main;<module> (t.py);through_c (t.py);"
                                       "builtin_sorted;key (t.py);leaf_loop (t.py);memcpy");
    assert_true(found);
    report_stacks_free(&rs);
    profile_free(&p);
}

/* What a recording starts with before its records: the magic, a provider and its section. */
static size_t prefix(uint64_t *w, size_t cap)
{
    size_t n = fxt_enc_magic(w, cap);
    n += fxt_enc_provider_info(w + n, cap - n, 0, "hvprof", 6);
    n += fxt_enc_provider_section(w + n, cap - n, 0);
    n += fxt_enc_init(w + n, cap - n, 1000000000ull);
    return n;
}

/* The record's own codec: what the encoder writes, the decoder gives back, in both formats; a
 * position table over the bound is refused; a runtime_stack without its runtime's id is a
 * malformed record. */
static void test_code_record(void **state)
{
    (void)state;
    uint64_t w[64];
    struct hvfxt_code c = {.runtime = HVFXT_RUNTIME_PYTHON,
                           .pid = PID,
                           .code = CODE1,
                           .base = CODE1 + BC,
                           .firstlineno = 20,
                           .name = "C.key",
                           .name_len = 5,
                           .filename = "/py/t.py",
                           .filename_len = 8,
                           .table = table,
                           .table_len = sizeof(table)};
    for (int old = 0; old < 2; old++) {
        size_t m = prefix(w, 64);
        size_t n = hvfxt_enc_code(w + m, 64 - m, &c, old);
        assert_int_equal(n, 1 + (old ? 5 : 6) + 1 + 1 + 1);
        struct fxtr_reader r;
        fxtr_init(&r, w, (m + n) * 8);
        struct hvfxt_record x;
        struct hv_err err;
        for (int k = 0; k < 4; k++)
            assert_int_equal(hvfxt_next(&r, &x, &err), 1); /* the prefix's */
        if (hvfxt_next(&r, &x, &err) != 1)
            fail_msg("%s", err.msg);
        assert_int_equal(x.kind, HVFXT_REC_CODE);
        assert_int_equal(x.u.code.runtime, HVFXT_RUNTIME_PYTHON);
        assert_int_equal(x.u.code.pid, PID);
        assert_int_equal(x.u.code.code, CODE1);
        assert_int_equal(x.u.code.base, CODE1 + BC);
        assert_int_equal(x.u.code.firstlineno, 20);
        assert_true(fxtr_str_is(x.u.code.name, "C.key"));
        assert_true(fxtr_str_is(x.u.code.filename, "/py/t.py"));
        assert_int_equal(x.u.code.table_len, sizeof(table));
        fxtr_free(&r);
    }
    struct hvfxt_code big = c;
    big.table_len = HVFXT_CODE_TABLE_MAX + 1;
    assert_int_equal(hvfxt_enc_code(w, 64, &big, false), 0);
    struct hvfxt_code other = c;
    other.runtime = 2;
    assert_int_equal(hvfxt_enc_code(w, 64, &other, true), 0); /* 0x84 is Python's only */
    uint64_t sw[32];
    uint64_t rt[] = {HVFXT_RUNTIME_PYTHON, CODE1 | HVFXT_RT_ENTRY, CODE1 + BC};
    struct hvfxt_sample s = {.fields = HVFXT_SF_PID | HVFXT_SF_BOOT_TS | HVFXT_SF_RUNTIME_STACK,
                             .pid = PID,
                             .ts = 5,
                             .rt_stack = rt,
                             .n_rt = 3};
    size_t sn = hvfxt_enc_sample(sw, 32, &s);
    uint64_t pid;
    const uint64_t *got;
    uint32_t ng;
    assert_true(hvfxt_record_runtime(sw, sn, &pid, &got, &ng));
    assert_int_equal(pid, PID);
    assert_int_equal(ng, 3);
    assert_int_equal(got[0], HVFXT_RUNTIME_PYTHON);
    assert_int_equal(got[1], CODE1 | HVFXT_RT_ENTRY);
    assert_false(hvfxt_record_runtime(sw, 2, &pid, &got, &ng));
    /* Not a runtime's id: the decoder refuses the record. */
    rt[0] = 0;
    size_t m = prefix(sw, 32);
    sn = hvfxt_enc_sample(sw + m, 32 - m, &s);
    struct fxtr_reader r;
    fxtr_init(&r, sw, (m + sn) * 8);
    struct hvfxt_record x;
    struct hv_err err;
    for (int k = 0; k < 4; k++)
        assert_int_equal(hvfxt_next(&r, &x, &err), 1); /* the prefix's */
    assert_int_equal(hvfxt_next(&r, &x, &err), -1);
    assert_non_null(strstr(err.msg, "runtime_stack"));
    fxtr_free(&r);
}

static void test_merge_old_recording(void **state)
{
    old_format = true;
    test_merge(state);
    old_format = false;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_merge_old_recording),
        cmocka_unit_test(test_code_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
