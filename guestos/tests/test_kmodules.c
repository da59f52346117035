/* Loaded kernel modules read from a guest's memory: a synthetic guest (guestwalk's test image,
 * 4- and 5-level) with the kernel's `modules` list, struct modules in the module area in a layout
 * BTF would give, and their mod_kallsyms tables. Covers the live module's name, code region and
 * symbols (local, global; section, file, undefined, data and unprintable ones left out), modules
 * still coming up, and hostile memory: names without NUL, code regions out of range, a list
 * that loops, an unmapped entry, a symbol count over the bound, a name in unmapped memory. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/linux/kmodules.h"
#include "guestwalk/tests/guest_image.h"

#define HEAD  0xffffffff82a00000ull /* &modules, in the kernel image's data */
#define MODS  0xffffffffc0000000ull /* the module area: struct modules, 0x1000 apart */
#define TEXT0 0xffffffffc0100000ull /* the first module's code */
#define KSYMS 0xffffffffc0200000ull /* mod_kallsyms, symtab and strtab */

static const struct lx_kmod_layout lay = {
    .list = 0x8,
    .name = 0x18,
    .name_size = 56,
    .state = 0x0,
    .text_base = 0x140,
    .text_size = 0x148,
    .kallsyms = 0x200,
    .ks_symtab = 0x0,
    .ks_num_symtab = 0x8,
    .ks_strtab = 0x10,
};

struct fx {
    struct gimg g;
    struct lx_kmods r;
    char why[160];
};

static void put_module(struct fx *f, unsigned i, uint32_t state, const char *name, size_t name_len,
                       uint64_t text, uint32_t size, uint64_t kallsyms, uint64_t next)
{
    uint64_t m = MODS + i * 0x1000ull;
    char n[56] = {0};
    memcpy(n, name, name_len);
    assert_int_equal(gimg_write(&f->g, m + lay.state, &state, 4), 0);
    assert_int_equal(gimg_write(&f->g, m + lay.name, n, sizeof(n)), 0);
    assert_int_equal(gimg_write_u64(&f->g, m + lay.text_base, text), 0);
    assert_int_equal(gimg_write(&f->g, m + lay.text_size, &size, 4), 0);
    assert_int_equal(gimg_write_u64(&f->g, m + lay.kallsyms, kallsyms), 0);
    assert_int_equal(gimg_write_u64(&f->g, m + lay.list, next), 0);
}

static uint64_t entry_of(unsigned i)
{
    return MODS + i * 0x1000ull + lay.list;
}

/* kvm_amd's table: what a loaded module's core symtab holds. */
static void put_symbols(struct fx *f)
{
    static const char strtab[] = "\0svm_vcpu_run\0svm_init\0svm_data\0und\0bad\x01name\0"
                                 "far_name";
    Elf64_Sym syms[] = {
        {0},
        {.st_info = ELF64_ST_INFO(STB_LOCAL, STT_SECTION), .st_shndx = 1, .st_value = TEXT0},
        {.st_name = 1,
         .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
         .st_shndx = 1,
         .st_value = TEXT0 + 0x100},
        {.st_name = 14,
         .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
         .st_shndx = 1,
         .st_value = TEXT0 + 0x2000},
        {.st_name = 23,
         .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
         .st_shndx = 3,
         .st_value = TEXT0 + 0x5000}, /* data, past the code */
        {.st_name = 32, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = SHN_UNDEF},
        {.st_name = 36,
         .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
         .st_shndx = 1,
         .st_value = TEXT0 + 0x300},
        {.st_name = 0x2000,
         .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
         .st_shndx = 1,
         .st_value = TEXT0 + 0x400}, /* its name is in unmapped memory */
    };
    uint64_t symtab = KSYMS + 0x100, strs = KSYMS + 0x800;
    assert_int_equal(gimg_write(&f->g, symtab, syms, sizeof(syms)), 0);
    assert_int_equal(gimg_write(&f->g, strs, strtab, sizeof(strtab)), 0);
    uint32_t n = sizeof(syms) / sizeof(syms[0]);
    assert_int_equal(gimg_write_u64(&f->g, KSYMS + lay.ks_symtab, symtab), 0);
    assert_int_equal(gimg_write(&f->g, KSYMS + lay.ks_num_symtab, &n, 4), 0);
    assert_int_equal(gimg_write_u64(&f->g, KSYMS + lay.ks_strtab, strs), 0);
}

static int setup_paging(void **state, bool la57)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(gimg_init(&f->g, la57), 0);
    assert_int_equal(gimg_map_fresh(&f->g, HEAD, 0x1000, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, MODS, 8 * 0x1000, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_map_fresh(&f->g, KSYMS, 0x2000, GIMG_KERN_RW), 0);
    /* head -> kvm_amd (live) -> kvm (coming) -> head */
    assert_int_equal(gimg_write_u64(&f->g, HEAD, entry_of(0)), 0);
    put_module(f, 0, 0, "kvm_amd", 7, TEXT0, 0x3000, KSYMS, entry_of(1));
    put_module(f, 1, 1, "kvm", 3, TEXT0 + 0x100000, 0x9000, 0, HEAD);
    put_symbols(f);
    assert_int_equal(
        lx_kmods_init_raw(&f->r, &f->g.mem, HEAD, &lay, f->g.root, la57, f->why, sizeof(f->why)),
        0);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_paging(state, false);
}

static int setup_la57(void **state)
{
    return setup_paging(state, true);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    gimg_free(&f->g);
    free(f);
    return 0;
}

struct got {
    unsigned n;
    uint64_t addr[8];
    char type[8];
    char name[8][32];
};

static int on_sym(void *ctx, uint64_t addr, char type, const char *name, size_t len)
{
    struct got *g = ctx;
    assert_true(g->n < 8 && len < 32);
    g->addr[g->n] = addr;
    g->type[g->n] = type;
    memcpy(g->name[g->n], name, len);
    g->name[g->n][len] = 0;
    g->n++;
    return 0;
}

static void test_live_module_and_symbols(void **state)
{
    struct fx *f = *state;
    struct lx_kmod m[4];
    struct hv_err err = {0};
    int n = lx_kmods_list(&f->r, m, 4, &err);
    assert_int_equal(n, 1); /* kvm is still coming up */
    assert_string_equal(m[0].name, "kvm_amd");
    assert_int_equal(m[0].addr, MODS);
    assert_int_equal(m[0].text, TEXT0);
    assert_int_equal(m[0].text_size, 0x3000);
    assert_int_equal(m[0].kallsyms, KSYMS);

    struct got g = {0};
    assert_int_equal(lx_kmods_symbols(&f->r, &m[0], on_sym, &g, &err), 2);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.addr[0], TEXT0 + 0x100);
    assert_int_equal(g.type[0], 't');
    assert_string_equal(g.name[0], "svm_vcpu_run");
    assert_int_equal(g.addr[1], TEXT0 + 0x2000);
    assert_int_equal(g.type[1], 'T');
    assert_string_equal(g.name[1], "svm_init");
}

static void test_coming_module_found_once_live(void **state)
{
    struct fx *f = *state;
    uint32_t live = 0;
    assert_int_equal(gimg_write(&f->g, MODS + 0x1000 + lay.state, &live, 4), 0);
    struct lx_kmod m[4];
    struct hv_err err = {0};
    assert_int_equal(lx_kmods_list(&f->r, m, 4, &err), 2);
    assert_string_equal(m[1].name, "kvm");
    assert_int_equal(m[1].text_size, 0x9000);
    /* No table: listed, but its symbols cannot be read. */
    struct got g = {0};
    assert_int_equal(lx_kmods_symbols(&f->r, &m[1], on_sym, &g, &err), -1);
    assert_non_null(strstr(err.msg, "kvm"));
    /* max bounds what is written, not the walk. */
    assert_int_equal(lx_kmods_list(&f->r, m, 1, &err), 1);
}

static void test_hostile_modules_skipped(void **state)
{
    struct fx *f = *state;
    struct lx_kmod m[4];
    struct hv_err err = {0};
    char long_name[56];
    memset(long_name, 'A', sizeof(long_name));
    /* A name that fills the array without a NUL; then one with a control byte; then a code
     * region in the user half; then one too large: each skipped, kvm_amd still found. */
    put_module(f, 1, 0, long_name, sizeof(long_name), TEXT0 + 0x100000, 0x1000, 0, entry_of(2));
    put_module(f, 2, 0, "ev\til", 5, TEXT0 + 0x100000, 0x1000, 0, entry_of(3));
    put_module(f, 3, 0, "user", 4, 0x400000, 0x1000, 0, entry_of(4));
    put_module(f, 4, 0, "huge", 4, TEXT0, 0x40000000, 0, HEAD);
    int n = lx_kmods_list(&f->r, m, 4, &err);
    assert_int_equal(n, 1);
    assert_string_equal(m[0].name, "kvm_amd");
}

static void test_broken_lists_fail(void **state)
{
    struct fx *f = *state;
    struct lx_kmod m[4];
    struct hv_err err = {0};
    /* A loop that never comes back to the head. */
    assert_int_equal(gimg_write_u64(&f->g, entry_of(1), entry_of(0)), 0);
    assert_int_equal(lx_kmods_list(&f->r, m, 4, &err), -1);
    assert_non_null(strstr(err.msg, "a cycle?"));
    /* An entry in unmapped memory. */
    assert_int_equal(gimg_write_u64(&f->g, entry_of(1), 0xffffffffc8000000ull), 0);
    assert_int_equal(lx_kmods_list(&f->r, m, 4, &err), -1);
    assert_non_null(strstr(err.msg, "cannot be read"));
    /* The head itself unmapped. */
    struct lx_kmods r2;
    assert_int_equal(lx_kmods_init_raw(&r2, &f->g.mem, HEAD + 0x100000, &lay, f->g.root, f->g.la57,
                                       f->why, sizeof(f->why)),
                     0);
    assert_int_equal(lx_kmods_list(&r2, m, 4, &err), -1);
    assert_non_null(strstr(err.msg, "list head"));
}

static void test_symbol_count_bounded(void **state)
{
    struct fx *f = *state;
    uint32_t n = LX_KMOD_MAX_SYMS + 1;
    assert_int_equal(gimg_write(&f->g, KSYMS + lay.ks_num_symtab, &n, 4), 0);
    struct lx_kmod m = {.addr = MODS, .text = TEXT0, .text_size = 0x3000, .kallsyms = KSYMS};
    snprintf(m.name, sizeof(m.name), "kvm_amd");
    struct got g = {0};
    struct hv_err err = {0};
    assert_int_equal(lx_kmods_symbols(&f->r, &m, on_sym, &g, &err), -1);
    assert_non_null(strstr(err.msg, "symbols (more than"));
    assert_int_equal(g.n, 0);
    /* A table that runs into unmapped memory stops with an error, after what it gave. */
    n = 0x200;
    assert_int_equal(gimg_write(&f->g, KSYMS + lay.ks_num_symtab, &n, 4), 0);
    assert_int_equal(lx_kmods_symbols(&f->r, &m, on_sym, &g, &err), -1);
    assert_non_null(strstr(err.msg, "cannot be read"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_live_module_and_symbols, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_module_and_symbols, setup_la57, teardown),
        cmocka_unit_test_setup_teardown(test_coming_module_found_once_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_modules_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken_lists_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symbol_count_bounded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
