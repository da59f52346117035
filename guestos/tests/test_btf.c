/* BTF from a blob built here per Documentation/bpf/btf.rst: a task_struct with the members hvprof
 * needs at known offsets, some inside an anonymous struct (as randomized_struct_fields_start
 * makes them), a kind_flag struct with a bitfield, typedef and const chains, an array; then
 * hostile variants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/linux/btf.h"

struct blob {
    uint8_t types[4096];
    size_t tl;
    char strs[1024];
    size_t sl;
    uint8_t out[8192];
    size_t len;
};

static uint32_t str(struct blob *b, const char *s)
{
    if (!*s)
        return 0;
    uint32_t off = (uint32_t)b->sl;
    memcpy(b->strs + b->sl, s, strlen(s) + 1);
    b->sl += strlen(s) + 1;
    return off;
}

static void w32(struct blob *b, uint32_t v)
{
    memcpy(b->types + b->tl, &v, 4);
    b->tl += 4;
}

static void type(struct blob *b, const char *name, unsigned kind, unsigned vlen, bool kflag,
                 uint32_t size_or_type)
{
    w32(b, str(b, name));
    w32(b, (kflag ? 1u << 31 : 0) | (kind << 24) | vlen);
    w32(b, size_or_type);
}

static void member(struct blob *b, const char *name, uint32_t t, uint32_t off)
{
    w32(b, str(b, name));
    w32(b, t);
    w32(b, off);
}

/* Type ids, in the order they are written. */
enum {
    T_INT = 1,
    T_CHAR,
    T_COMM,
    T_MM_FWD,
    T_MM_PTR,
    T_PID_T,
    T_CONST_PID,
    T_ANON,
    T_THREAD,
    T_FLAGS,
    T_TASK
};

/* The blob: btf.rst's header (magic 0xeb9f, version 1, 24 bytes), types, strings. */
static void finish(struct blob *b)
{
    uint8_t hdr[24] = {0x9f, 0xeb, 1, 0};
    uint32_t v[5] = {24, 0, (uint32_t)b->tl, (uint32_t)b->tl, (uint32_t)b->sl};
    memcpy(hdr + 4, v, sizeof(v));
    memcpy(b->out, hdr, 24);
    memcpy(b->out + 24, b->types, b->tl);
    memcpy(b->out + 24 + b->tl, b->strs, b->sl);
    b->len = 24 + b->tl + b->sl;
}

static void build(struct blob *b)
{
    memset(b, 0, sizeof(*b));
    b->sl = 1; /* "" at offset 0 */
    type(b, "int", 1, 0, false, 4);
    w32(b, (1u << 24) | 32); /* signed, 32 bits */
    type(b, "char", 1, 0, false, 1);
    w32(b, (2u << 24) | 8);
    type(b, "", 3, 0, false, 0); /* char[16] */
    w32(b, T_CHAR);
    w32(b, T_INT);
    w32(b, 16);
    type(b, "mm_struct", 7, 0, false, 0);
    type(b, "", 2, 0, false, T_MM_FWD);
    type(b, "pid_t", 8, 0, false, T_INT);
    type(b, "", 10, 0, false, T_PID_T); /* const pid_t */
    type(b, "", 4, 2, false, 8);        /* anonymous struct { pid_t pid; const pid_t tgid; } */
    member(b, "pid", T_PID_T, 0);
    member(b, "tgid", T_CONST_PID, 32);
    type(b, "thread_struct", 4, 2, false, 24);
    member(b, "fsbase", T_INT, 0);
    member(b, "sp", T_MM_PTR, 64);
    type(b, "flagbits", 4, 2, true, 4); /* kind_flag: bitfield sizes in bits 24-31 */
    member(b, "a", T_INT, (3u << 24) | 0);
    member(b, "b", T_INT, (5u << 24) | 3);
    type(b, "task_struct", 4, 6, false, 0x500);
    member(b, "__state", T_INT, 16 * 8);
    member(b, "flags", T_INT, 0x2c * 8);
    member(b, "", T_ANON, 0x100 * 8);
    member(b, "comm", T_COMM, 0x208 * 8);
    member(b, "mm", T_MM_PTR, 0x300 * 8);
    member(b, "thread", T_THREAD, 0x400 * 8);
    finish(b);
}

static void test_members(void **state)
{
    (void)state;
    struct blob *bl = calloc(1, sizeof(*bl));
    build(bl);
    struct lx_btf b;
    struct hv_err err = {0};
    if (lx_btf_load(&b, bl->out, bl->len, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(b.ntypes, T_TASK);
    uint32_t task = lx_btf_find_struct(&b, "task_struct");
    assert_int_equal(task, T_TASK);
    assert_int_equal(lx_btf_find_struct(&b, "no_such"), 0);
    const struct {
        const char *path;
        uint64_t off, size;
    } want[] = {
        {"__state", 16, 4},  {"flags", 0x2c, 4}, {"pid", 0x100, 4},       {"tgid", 0x104, 4},
        {"comm", 0x208, 16}, {"mm", 0x300, 8},   {"thread.sp", 0x408, 8}, {"thread", 0x400, 24},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        uint64_t off = 0, size = 0;
        if (!lx_btf_member(&b, task, want[i].path, &off, &size))
            fail_msg("%s not found", want[i].path);
        assert_int_equal(off, want[i].off);
        assert_int_equal(size, want[i].size);
    }
    uint64_t off, size;
    assert_false(lx_btf_member(&b, task, "nothing", &off, &size));
    assert_false(lx_btf_member(&b, task, "comm.x", &off, &size)); /* comm is not a struct */
    assert_false(lx_btf_member(&b, T_FLAGS, "b", &off, &size));   /* a bitfield */
    lx_btf_free(&b);
    free(bl);
}

static void expect_bad(struct blob *bl, size_t len)
{
    struct lx_btf b;
    struct hv_err err = {0};
    assert_int_equal(lx_btf_load(&b, bl->out, len, &err), -1);
    assert_true(strstr(err.msg, "btf:") != NULL);
}

static void test_hostile(void **state)
{
    (void)state;
    struct blob *bl = calloc(1, sizeof(*bl));
    build(bl);
    expect_bad(bl, 10);           /* shorter than the header */
    expect_bad(bl, bl->len - 40); /* strings cut off */
    build(bl);
    bl->out[0] = 0; /* magic */
    expect_bad(bl, bl->len);
    build(bl);
    uint32_t huge = 0xfffffff0; /* type_len past the blob */
    memcpy(bl->out + 12, &huge, 4);
    expect_bad(bl, bl->len);
    build(bl);
    bl->out[24 + 4 + 3] = 30; /* kind 30 of the first type: unknown */
    expect_bad(bl, bl->len);
    build(bl);
    uint32_t vlen = (4u << 24) | 0xffff; /* task_struct claims 65535 members */
    memcpy(bl->out + 24 + bl->tl - 6 * 12 - 12 + 4, &vlen, 4);
    expect_bad(bl, bl->len);
    /* A typedef loop: lookups stop, they do not spin. */
    build(bl);
    uint32_t self = T_PID_T;
    size_t pid_t_at = 24 + (12 + 4) * 2 + (12 + 12) + 12 + 12; /* int, char, array, fwd, ptr */
    memcpy(bl->out + pid_t_at + 8, &self, 4);
    struct lx_btf b;
    assert_int_equal(lx_btf_load(&b, bl->out, bl->len, NULL), 0);
    uint64_t off, size;
    assert_false(lx_btf_member(&b, T_TASK, "pid", &off, &size));
    lx_btf_free(&b);
    free(bl);
}

/* A task_struct of `width` anonymous members of its own type and nothing else: without a bound
 * on the total, a lookup of a missing name examines width^(depth+1) members (64 wide: 64^9).
 * Every lookup hvprof makes must give up after LX_BTF_MAX_WORK members, and the real layout's
 * lookups must cost a small fraction of that. */
static void test_anonymous_bomb(void **state)
{
    (void)state;
    struct blob *bl = calloc(1, sizeof(*bl));
    memset(bl, 0, sizeof(*bl));
    bl->sl = 1;
    const unsigned width = 64;
    type(bl, "task_struct", 4, width, false, 64);
    for (unsigned i = 0; i < width; i++)
        member(bl, "", 1, 0); /* each: an anonymous member of type 1, itself */
    uint8_t hdr[24] = {0x9f, 0xeb, 1, 0};
    uint32_t v[5] = {24, 0, (uint32_t)bl->tl, (uint32_t)bl->tl, (uint32_t)bl->sl};
    memcpy(hdr + 4, v, sizeof(v));
    memcpy(bl->out, hdr, 24);
    memcpy(bl->out + 24, bl->types, bl->tl);
    memcpy(bl->out + 24 + bl->tl, bl->strs, bl->sl);
    bl->len = 24 + bl->tl + bl->sl;
    struct lx_btf b;
    assert_int_equal(lx_btf_load(&b, bl->out, bl->len, NULL), 0);
    const char *const paths[] = {"pid", "tgid", "comm", "mm", "thread.sp"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        uint64_t off, size, work = 0;
        assert_false(lx_btf_member_counted(&b, 1, paths[i], &off, &size, &work));
        assert_int_equal(work, LX_BTF_MAX_WORK);
        uint64_t bit, bits;
        uint32_t w;
        (void)bits;
        assert_false(lx_btf_bitfield(&b, 1, paths[i], &bit, &w));
    }
    lx_btf_free(&b);

    /* The well-formed layout: every lookup examines few members. */
    build(bl);
    assert_int_equal(lx_btf_load(&b, bl->out, bl->len, NULL), 0);
    uint64_t off, size, work = 0;
    assert_true(lx_btf_member_counted(&b, T_TASK, "tgid", &off, &size, &work));
    assert_int_equal(off, 0x104);
    assert_int_equal(work, 5); /* __state, flags, the anonymous struct, its pid and tgid */
    lx_btf_free(&b);
    free(bl);
}

/* Enumerators as the page cache reads them (PG_uptodate), of an enum, a signed enum and an
 * ENUM64 (btf.rst: struct btf_enum and struct btf_enum64). */
static void test_enums(void **state)
{
    (void)state;
    struct blob *bl = calloc(1, sizeof(*bl));
    bl->sl = 1;
    type(bl, "pageflags", 6, 3, false, 4);
    w32(bl, str(bl, "PG_locked"));
    w32(bl, 0);
    w32(bl, str(bl, "PG_referenced"));
    w32(bl, 1);
    w32(bl, str(bl, "PG_uptodate"));
    w32(bl, 3);
    type(bl, "", 6, 1, true, 4); /* signed */
    w32(bl, str(bl, "NEGATIVE"));
    w32(bl, (uint32_t)-5);
    type(bl, "big", 19, 1, false, 8);
    w32(bl, str(bl, "BIG"));
    w32(bl, 0x89abcdef);
    w32(bl, 0x1234567);
    finish(bl);
    struct lx_btf b;
    struct hv_err err = {0};
    if (lx_btf_load(&b, bl->out, bl->len, &err))
        fail_msg("%s", err.msg);
    int64_t val = 0;
    assert_true(lx_btf_enum_value(&b, "PG_uptodate", &val));
    assert_int_equal(val, 3);
    assert_true(lx_btf_enum_value(&b, "PG_locked", &val));
    assert_int_equal(val, 0);
    assert_true(lx_btf_enum_value(&b, "NEGATIVE", &val));
    assert_int_equal(val, -5);
    assert_true(lx_btf_enum_value(&b, "BIG", &val));
    assert_int_equal(val, 0x123456789abcdefll);
    assert_false(lx_btf_enum_value(&b, "PG_dirty", &val));
    assert_false(lx_btf_enum_value(&b, "pageflags", &val)); /* a type, not an enumerator */
    lx_btf_free(&b);
    free(bl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members), cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_anonymous_bomb), cmocka_unit_test(test_enums)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
