/* The kernel-modules source on its own (sampler/sources/kernel_modules/): a scripted OS layer
 * lists modules as the Linux layer does; the records are read back from the fake's file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/sources/tests/fake_env.h"

extern const struct rec_source_ops rec_source_kernel_modules;

#define MOD_A 0xffffffffc0100000ull
#define MOD_B 0xffffffffc0300000ull
static struct guestos_kmodule mods[4];
static unsigned nmods, symbol_calls, list_calls;

static int scripted_modules(struct guestos *os, const struct gmem *mem, struct guestos_kmodule *out,
                            size_t max, struct hv_err *err)
{
    (void)os, (void)mem, (void)err;
    list_calls++;
    unsigned n = nmods < max ? nmods : (unsigned)max;
    memcpy(out, mods, n * sizeof(*out));
    return (int)n;
}

static long scripted_symbols(struct guestos *os, const struct gmem *mem,
                             const struct guestos_kmodule *m, guestos_symbol_fn fn, void *ctx,
                             struct hv_err *err)
{
    (void)os, (void)mem;
    symbol_calls++;
    if (!strcmp(m->name, "broken"))
        return hv_errf(err, "its table cannot be read");
    struct guestos_symbol s[] = {
        {.addr = m->text_start + 0x200, .name = "second_fn", .name_len = 9, .type = 'T'},
        {.addr = m->text_start + 0x10, .name = "first_fn", .name_len = 8, .type = 't'},
    };
    for (unsigned i = 0; i < 2; i++)
        if (fn(ctx, &s[i]))
            break;
    return 2;
}

/* 255-byte names, 65536 of them: a forged table. */
static long flood_symbols(struct guestos *os, const struct gmem *mem,
                          const struct guestos_kmodule *m, guestos_symbol_fn fn, void *ctx,
                          struct hv_err *err)
{
    (void)os, (void)mem, (void)err;
    static char name[256];
    memset(name, 'x', 255);
    symbol_calls++;
    long n = 0;
    for (uint64_t i = 0; i < (1u << 16); i++, n++) {
        struct guestos_symbol s = {
            .addr = m->text_start + i * 16, .name = name, .name_len = 255, .type = 'T'};
        if (fn(ctx, &s))
            break;
    }
    return n;
}

static struct guestos_ops ops;
static struct gmem no_ram;

/* What the file says of module `name`: its mapping's start (in the kernel's address space) and
 * its symbols as "type name@offset" lines, in record order. */
struct module_look {
    const char *name;
    uint64_t id, start;
    bool found;
    char *syms;
    size_t len;
};

static void look_at(void *ctx, const struct hvfxt_record *x)
{
    struct module_look *m = ctx;
    if (x->kind == HVFXT_REC_MODULE && fxtr_str_is(x->u.module.name, m->name))
        m->id = x->u.module.id;
    if (x->kind == HVFXT_REC_MAPPING && m->id && x->u.mapping.module_id == m->id) {
        assert_int_equal(x->u.mapping.pid, hvfxt_koid_guest_process(0));
        m->start = x->u.mapping.start;
        m->found = true;
    }
    if (x->kind == HVFXT_REC_SYMBOLS && m->id && x->u.symbols.module_id == m->id) {
        uint32_t index = 0, pos = 0;
        uint64_t addr;
        char type;
        const char *sym;
        size_t sym_len;
        while (hvfxt_symbols_next(&x->u.symbols, &index, &pos, &addr, &type, &sym, &sym_len)) {
            size_t used = strlen(m->syms);
            snprintf(m->syms + used, m->len - used, "%c %.*s@0x%llx\n", type ? type : '-',
                     (int)sym_len, sym, (unsigned long long)addr);
        }
    }
}

static bool module_in_file(struct fake_env *f, const char *name, uint64_t *start, char *syms,
                           size_t len)
{
    struct module_look m = {.name = name, .syms = syms, .len = len};
    syms[0] = 0;
    fake_env_each(f, look_at, &m);
    *start = m.start;
    return m.found;
}

static void setup(struct fake_env *f, long (*symbols)(struct guestos *, const struct gmem *,
                                                      const struct guestos_kmodule *,
                                                      guestos_symbol_fn, void *, struct hv_err *))
{
    fake_env_init(f, 1);
    ops = *f->os.ops;
    ops.kernel_modules = scripted_modules;
    ops.kernel_module_symbols = symbols;
    f->os.ops = &ops;
    f->env.mem = &no_ram;
    nmods = symbol_calls = list_calls = 0;
    fake_env_create(f, &rec_source_kernel_modules, false);
}

/* Read once the kernel is described; each module once, "[name]" over its code, with its
 * symbols; one whose table cannot be read is recorded without; a module loaded later is found
 * at the next look, a second later (or at the end). */
static void test_modules_recorded_once(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f, scripted_symbols);
    mods[0] = (struct guestos_kmodule){
        .name = "kvm_amd", .text_start = MOD_A, .text_end = MOD_A + 0x1800};
    mods[1] =
        (struct guestos_kmodule){.name = "broken", .text_start = MOD_B, .text_end = MOD_B + 0x1000};
    nmods = 2;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, false), 0);
    assert_int_equal(list_calls, 0); /* the kernel is not described yet */
    f.kernel.state = REC_KERNEL_FOUND;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 2000, false), 0);
    assert_int_equal(symbol_calls, 2);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 2);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MAPPING, NULL), 2);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_SYMBOLS, NULL), 1);
    mods[2] = (struct guestos_kmodule){
        .name = "brd", .text_start = MOD_B + 0x100000, .text_end = MOD_B + 0x102000};
    nmods = 3;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 3000, false), 0);
    assert_int_equal(list_calls, 1); /* a look a second */
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 4000, true), 0);
    assert_int_equal(list_calls, 2);
    assert_int_equal(symbol_calls, 3);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 3);
    /* Each "[name]" mapped at its code; symbols sorted, offsets into the code, ending at the
     * code's end; the one whose table did not read has none. */
    uint64_t start = 0;
    char syms[512];
    assert_true(module_in_file(&f, "[kvm_amd]", &start, syms, sizeof(syms)));
    assert_int_equal(start, MOD_A);
    assert_string_equal(syms, "t first_fn@0x10\nT second_fn@0x200\n- @0x1800\n");
    assert_true(module_in_file(&f, "[broken]", &start, syms, sizeof(syms)));
    assert_int_equal(start, MOD_B);
    assert_string_equal(syms, "");
    assert_true(module_in_file(&f, "[brd]", &start, syms, sizeof(syms)));
    assert_int_equal(start, MOD_B + 0x100000);
    assert_string_equal(syms, "t first_fn@0x10\nT second_fn@0x200\n- @0x2000\n");
    char summary[1024];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "guest kernel modules: 3 recorded with 4 code symbols (3 "
                                    "loaded at the last of 2 looks"));
    assert_non_null(strstr(summary, "1 without symbols"));
    fake_env_fini(&f);
}

/* A pass whose slice is spent leaves the rest to the next pass, not to a second later. */
static void test_modules_deferred(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f, scripted_symbols);
    f.kernel.state = REC_KERNEL_FOUND;
    mods[0] = (struct guestos_kmodule){.name = "a", .text_start = MOD_A, .text_end = MOD_A + 16};
    nmods = 1;
    f.may_work = false;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, false), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 0);
    f.may_work = true;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 2000, false), 0);
    assert_int_equal(fake_env_count(&f, HVFXT_REC_MODULE, NULL), 1);
    char summary[1024];
    fake_env_summary(&f, summary, sizeof(summary));
    assert_non_null(strstr(summary, "1 looks went on at a later drain pass"));
    fake_env_fini(&f);
}

/* Forged tables take their share of the metadata budget and are cut; once it is spent no table
 * is read and no module recorded, only counted. */
static void test_modules_budget(void **state)
{
    (void)state;
    struct fake_env f;
    setup(&f, flood_symbols);
    f.kernel.state = REC_KERNEL_FOUND;
    f.meta.max = 1u << 20;
    for (unsigned i = 0; i < 3; i++) {
        mods[i] = (struct guestos_kmodule){.text_start = MOD_A + i * 0x100000,
                                           .text_end = MOD_A + i * 0x100000 + 0x100000};
        snprintf(mods[i].name, sizeof(mods[i].name), "forged%u", i);
    }
    nmods = 3;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 1000, true), 0);
    assert_int_equal(f.meta.cut_symbol_tables, 3);
    assert_true(meta_budget_used(&f.meta) <= f.meta.max);
    f.meta.max = meta_budget_used(&f.meta);
    mods[0].text_start += 0x10000000;
    mods[0].text_end += 0x10000000;
    unsigned calls = symbol_calls;
    assert_int_equal(fake_env_poll(&f, REC_STAGE_GUEST, 2000, true), 0);
    assert_int_equal(symbol_calls, calls);
    assert_int_equal(f.meta.cut_records, 1);
    assert_int_equal(f.meta.cut_symbol_tables, 4);
    fake_env_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modules_recorded_once),
        cmocka_unit_test(test_modules_deferred),
        cmocka_unit_test(test_modules_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
