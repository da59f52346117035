/* CPython 3.13's own account of its layout (_Py_DebugOffsets at the start of _PyRuntime) read
 * into the reader's layout: the values Debian 13's python3.13 3.13.5-2 holds in its .PyRuntime
 * section (read from the package's /usr/bin/python3.13), and what is refused: another cookie, a
 * 3.14 struct, a free-threaded build, an offset outside its structure; and py_runtime_open on
 * them, with and without a readable Py_Version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "python/py_frames.h"

/* Debian 13's python3.13 (3.13.5): _Py_DebugOffsets word by word after the cookie. */
static const uint64_t debian13[PY_DEBUG_OFFSETS_WORDS - 1] = {
    0x30d05f0, 0,         /* version, ft */
    283376,    608,  632, /* runtime */
    194976,    7272, 7264, 7344, 7400, 7656, 7640, 7648, 16,  7752, 0,   7768, 7760, /* interp */
    304,       0,    8,    16,   72,   152,  160,  232,  32,       /* thread state */
    80,        8,    0,    56,   72,   70,                         /* frame */
    208,       112,  120,  128,  136,  68,   52,   96,   104, 200, /* code */
    16,        8,    416,  24,   88,   168,  32,   24,   16,  40,   24,  16,   48,
    32,        40,   24,   16, /* objects */
    32,        16,   24,   40,   16,   32,   64,   32,   16,  40,   240, 200};

static void words(uint64_t w[PY_DEBUG_OFFSETS_WORDS])
{
    memcpy(&w[0], "xdebugpy", 8);
    memcpy(&w[1], debian13, sizeof(debian13));
}

static void test_debian13(void **state)
{
    (void)state;
    uint64_t w[PY_DEBUG_OFFSETS_WORDS];
    words(w);
    struct py_layout l;
    char why[128];
    assert_true(py_layout_from_debug(w, &l, why, sizeof(why)));
    assert_int_equal(l.minor, 13);
    assert_int_equal(l.runtime_interpreters_head, 632);
    assert_int_equal(l.interp_next, 7264);
    assert_int_equal(l.interp_threads_head, 7344);
    assert_int_equal(l.tstate_next, 8);
    assert_int_equal(l.tstate_current_frame, 72);
    assert_int_equal(l.tstate_cframe, 0);
    assert_int_equal(l.tstate_native_thread_id, 160);
    assert_int_equal(l.frame_code, 0);
    assert_int_equal(l.frame_previous, 8);
    assert_int_equal(l.frame_instr, 56);
    assert_int_equal(l.frame_owner, 70);
    assert_int_equal(l.owner_cstack, 3);
    assert_false(l.instr_is_prev);
    assert_int_equal(l.code_filename, 112);
    assert_int_equal(l.code_qualname, 128);
    assert_int_equal(l.code_linetable, 136);
    assert_int_equal(l.code_firstlineno, 68);
    assert_int_equal(l.code_adaptive, 200);
    assert_int_equal(l.bytes_size, 16);
    assert_int_equal(l.bytes_data, 32);
    assert_int_equal(l.str_state, 32);
    assert_int_equal(l.str_length, 16);
    assert_int_equal(l.str_ascii_data, 40);
    assert_int_equal(l.str_compact_data, 56);
}

static void test_refused(void **state)
{
    (void)state;
    uint64_t w[PY_DEBUG_OFFSETS_WORDS];
    struct py_layout l;
    char why[128];
    words(w);
    memcpy(&w[0], "xdebugp!", 8);
    assert_false(py_layout_from_debug(w, &l, why, sizeof(why)));
    words(w);
    w[1] = 0x030e00f0; /* 3.14's struct has more members */
    assert_false(py_layout_from_debug(w, &l, why, sizeof(why)));
    assert_non_null(strstr(why, "3.13"));
    words(w);
    w[2] = 1;
    assert_false(py_layout_from_debug(w, &l, why, sizeof(why)));
    words(w);
    w[23] = 4096; /* current_frame past the thread state's 304 bytes */
    assert_false(py_layout_from_debug(w, &l, why, sizeof(why)));
    words(w);
    w[19] = 0; /* a structure of no size */
    assert_false(py_layout_from_debug(w, &l, why, sizeof(why)));
}

/* A process's memory for py_runtime_open: _PyRuntime's words at RUNTIME, Py_Version at VERSION
 * when `version` is set (else its page is not present), nothing else. */
#define RUNTIME 0x9a3f400ull
#define VERSION 0x89665d8ull
struct mem {
    uint64_t w[PY_DEBUG_OFFSETS_WORDS];
    uint64_t version;
    bool runtime;
};

static bool rd(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct mem *m = ctx;
    if (m->runtime && va >= RUNTIME && va + len <= RUNTIME + sizeof(m->w)) {
        memcpy(dst, (const uint8_t *)m->w + (va - RUNTIME), len);
        return true;
    }
    if (m->version && va == VERSION && len == 8) {
        memcpy(dst, &m->version, 8);
        return true;
    }
    return false;
}

/* 3.13 is known by its _Py_DebugOffsets alone: Py_Version's page may never be present in a
 * process (a constant nothing reads). Where it reads it must agree; an unreadable _PyRuntime is
 * "not yet", a 3.13 one without the cookie is no interpreter this reader knows. */
static void test_open(void **state)
{
    (void)state;
    struct mem mm = {.runtime = true};
    words(mm.w);
    struct rt_mem m = {rd, &mm};
    struct py_runtime rt;
    char why[160];
    assert_int_equal(py_runtime_open(&rt, &m, RUNTIME, VERSION, why, sizeof(why)), 0);
    assert_int_equal(rt.version, 0x30d05f0);
    assert_ptr_equal(rt.l, &rt.own);
    assert_int_equal(rt.l->minor, 13);
    mm.version = 0x30d05f0;
    assert_int_equal(py_runtime_open(&rt, &m, RUNTIME, VERSION, why, sizeof(why)), 0);
    mm.version = 0x30c04f0; /* 3.12.4 */
    assert_int_equal(py_runtime_open(&rt, &m, RUNTIME, VERSION, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "Py_Version"));
    mm.version = 0x30d05f0;
    mm.runtime = false;
    assert_int_equal(py_runtime_open(&rt, &m, RUNTIME, VERSION, why, sizeof(why)),
                     PY_OPEN_UNREADABLE);
    mm.runtime = true;
    memcpy(&mm.w[0], "xdebugp!", 8);
    assert_int_equal(py_runtime_open(&rt, &m, RUNTIME, VERSION, why, sizeof(why)), -1);
    mm.version = 0;
    assert_int_equal(py_runtime_open(&rt, &m, RUNTIME, VERSION, why, sizeof(why)),
                     PY_OPEN_UNREADABLE);
    mm.version = 0x30c04f0; /* 3.12: no layout here */
    assert_int_equal(py_runtime_open(&rt, &m, RUNTIME, VERSION, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "3.12"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_debian13),
                                       cmocka_unit_test(test_refused), cmocka_unit_test(test_open)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
