/* Images found through the files their pages cache (guestos/generic/file_modules.h): a forked
 * child that maps one code page of this machine's own libc.so.6 and nothing else of it, no ELF
 * header anywhere in its memory. A stand-in OS layer says which file page each mapped page is
 * and serves the file's pages as the page cache would; the image must come out exactly as
 * discovery from a whole mapping gives it (header address, bias, build-id, soname), from at
 * most FILE_MODULES_MAX_PAGES pages, and every inconsistent answer must place nothing. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/files.h"
#include "guestos/generic/file_modules.h"
#include "guestos/generic/generic.h"
#include "guestos/generic/user_modules.h"
#include "guestwalk/tests/guest_image.h"

#define PAGE      4096ull
#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"
#define LIBC_BIAS 0x7f3a12000000ull
#define CODE_PAGE 9 /* the child touched the 10th page of libc's code */

/* The stand-in OS layer: one file, the test's libc. */
struct fake_os {
    uint8_t *file;
    size_t len;
    const Elf64_Phdr *ph;
    unsigned nph;
    struct gimg *g;
    int64_t index_shift; /* added to every page index it reports (a lie) */
    bool page0_evicted;  /* the page cache lost the file's first page */
    unsigned tells, pages;
};

/* The file page that run-time page va maps in the test's layout, as mmap placed it. */
static bool file_index(const struct fake_os *f, uint64_t va, uint64_t *index)
{
    uint64_t link = (va & ~(PAGE - 1)) - LIBC_BIAS;
    for (unsigned i = 0; i < f->nph; i++) {
        const Elf64_Phdr *p = &f->ph[i];
        uint64_t s = p->p_vaddr & ~(PAGE - 1);
        if (p->p_type == PT_LOAD && link >= s && link < p->p_vaddr + p->p_filesz) {
            *index = ((p->p_offset & ~(PAGE - 1)) + (link - s)) / PAGE;
            return true;
        }
    }
    return false;
}

static bool fake_page_file(struct guestos *os, const struct gmem *mem, const struct guestos_as *as,
                           uint64_t va, struct guestos_file *out)
{
    struct fake_os *f = os->priv;
    struct pt_mmu mmu;
    struct pt_xlate x;
    uint64_t index;
    f->tells++;
    if (pt_mmu_init(&mmu, as->cr0, as->root, as->cr4, as->efer, 0, 0) != PT_OK ||
        pt_translate(&mmu, mem, va, PT_ACC_USER, &x, NULL) != 0 || !file_index(f, va, &index))
        return false;
    *out = (struct guestos_file){
        .ino = 1234, .size = f->len, .index = index + (uint64_t)f->index_shift, .handle = 1};
    return true;
}

static int fake_file_page(struct guestos *os, const struct gmem *mem, const struct guestos_file *gf,
                          uint64_t index, void *dst)
{
    (void)mem;
    (void)gf;
    struct fake_os *f = os->priv;
    f->pages++;
    if ((index == 0 && f->page0_evicted) || index >= (f->len + PAGE - 1) / PAGE)
        return 0;
    memset(dst, 0, PAGE);
    size_t n = f->len - index * PAGE < PAGE ? f->len - index * PAGE : PAGE;
    memcpy(dst, f->file + index * PAGE, n);
    return 1;
}

static const struct guestos_ops fake_ops = {
    .name = "fake",
    .user_page_file = fake_page_file,
    .file_page = fake_file_page,
};

struct child {
    struct gimg g;
    struct fake_os f;
    struct guestos os;
    struct guestos_as as;
    uint64_t code_va; /* the one page of libc the child maps */
};

/* A child mapping one code page of libc at LIBC_BIAS's layout, and nothing else of it. */
static void child_init(struct child *c)
{
    memset(c, 0, sizeof(*c));
    struct hv_err err;
    if (hv_read_file(LIBC_PATH, 1ull << 30, &c->f.file, &c->f.len, &err) < 0)
        fail_msg("%s (this test reads the machine's own libc)", err.msg);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)c->f.file;
    c->f.ph = (const Elf64_Phdr *)(c->f.file + eh->e_phoff);
    c->f.nph = eh->e_phnum;
    const Elf64_Phdr *code = NULL;
    for (unsigned i = 0; i < c->f.nph && !code; i++)
        if (c->f.ph[i].p_type == PT_LOAD && (c->f.ph[i].p_flags & PF_X))
            code = &c->f.ph[i];
    assert_non_null(code);
    assert_true(code->p_offset > 0); /* the header is not in the code segment */
    assert_int_equal(gimg_init(&c->g, false), 0);
    c->code_va = (code->p_vaddr & ~(PAGE - 1)) + CODE_PAGE * PAGE + LIBC_BIAS;
    uint64_t off = (code->p_offset & ~(PAGE - 1)) + CODE_PAGE * PAGE;
    assert_int_equal(gimg_map_fresh(&c->g, c->code_va, PAGE, GIMG_USER_RW), 0);
    assert_int_equal(gimg_write(&c->g, c->code_va, c->f.file + off, PAGE), 0);
    c->f.g = &c->g;
    c->os = (struct guestos){.ops = &fake_ops, .priv = &c->f};
    struct gw_snapshot cpu = gimg_cpu(&c->g, c->code_va, 0x7ffff000, 0, 3);
    c->as = (struct guestos_as){
        .cr0 = cpu.cr0, .root = cpu.cr3, .cr4 = cpu.cr4, .efer = cpu.efer | PT_EFER_NXE, .pid = 2};
}

/* guestos_file_modules over the child's executable ranges, as the Linux layer calls it. */
static size_t file_modules(struct child *c, struct discover_module *mods, size_t n, size_t max)
{
    struct discover_range r[DISCOVER_GUEST_MAX_RANGES];
    struct discover_module none[1];
    size_t nr;
    assert_int_equal(guestos_generic_discover_in(&c->g.mem, &c->as, r, &nr, none, 1), 0);
    assert_int_equal(nr, 1); /* the one code page */
    return guestos_file_modules(&c->os, &c->g.mem, &c->as, r, nr, mods, n, max);
}

static void child_free(struct child *c)
{
    gimg_free(&c->g);
    free(c->f.file);
}

/* The file's GNU build-id from its program headers' notes. */
static uint32_t build_id(const struct fake_os *f, uint8_t id[20])
{
    for (unsigned i = 0; i < f->nph; i++) {
        const Elf64_Phdr *ph = &f->ph[i];
        for (uint64_t o = ph->p_offset;
             ph->p_type == PT_NOTE && o + 12 < ph->p_offset + ph->p_filesz;) {
            const uint32_t *nh = (const uint32_t *)(f->file + o);
            uint64_t desc = o + 12 + ((nh[0] + 3) & ~3u);
            if (nh[2] == NT_GNU_BUILD_ID && nh[1] == 20) {
                memcpy(id, f->file + desc, 20);
                return 20;
            }
            o = desc + ((nh[1] + 3) & ~3u);
        }
    }
    return 0;
}

static void test_found_through_its_file(void **state)
{
    (void)state;
    struct child c;
    child_init(&c);
    struct discover_module mods[4];
    /* Its own memory shows no image. */
    struct pt_mmu mmu;
    assert_int_equal(pt_mmu_init(&mmu, c.as.cr0, c.as.root, c.as.cr4, c.as.efer, 0, 0), PT_OK);
    assert_int_equal(discover_guest_modules(&c.g.mem, &mmu, mods, 4, NULL), 0);

    size_t n = file_modules(&c, mods, 0, 4);
    assert_int_equal(n, 1);
    assert_int_equal(mods[0].header_va, LIBC_BIAS);
    assert_int_equal(mods[0].bias, LIBC_BIAS);
    assert_int_equal(mods[0].e_type, ET_DYN);
    assert_true(mods[0].file_offsets);
    assert_true(c.code_va >= mods[0].start && c.code_va < mods[0].end);
    assert_string_equal(mods[0].name, "libc.so.6"); /* DT_SONAME, from the page cache */
    uint8_t id[20];
    assert_int_equal(build_id(&c.f, id), 20);
    assert_int_equal(mods[0].build_id_len, 20);
    assert_memory_equal(mods[0].build_id, id, 20);
    assert_true(c.f.pages <= FILE_MODULES_MAX_PAGES);
    print_message("libc found from one code page: %u page-cache pages read, %u page lookups\n",
                  c.f.pages, c.f.tells);

    /* A range a module covers already is not looked at. */
    c.f.tells = c.f.pages = 0;
    assert_int_equal(file_modules(&c, mods, 1, 4), 1);
    assert_int_equal(c.f.tells, 0);
    assert_int_equal(c.f.pages, 0);
    child_free(&c);
}

/* The kernel's answer off by a page either way, or pointing into the read-only headers'
 * segment: the image would sit whole pages away; nothing is placed. */
static void test_wrong_index_places_nothing(void **state)
{
    (void)state;
    const int64_t shifts[] = {1, -1, -CODE_PAGE - 1000, INT64_MAX / 2};
    for (size_t i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++) {
        struct child c;
        child_init(&c);
        c.f.index_shift = shifts[i];
        struct discover_module mods[4];
        assert_int_equal(file_modules(&c, mods, 0, 4), 0);
        assert_true(c.f.pages <= FILE_MODULES_MAX_PAGES);
        child_free(&c);
    }
}

/* Without the file's first page in the page cache there are no headers to place it by. */
static void test_header_not_cached(void **state)
{
    (void)state;
    struct child c;
    child_init(&c);
    c.f.page0_evicted = true;
    struct discover_module mods[4];
    assert_int_equal(file_modules(&c, mods, 0, 4), 0);
    assert_int_equal(c.f.pages, 1);
    child_free(&c);
}

/* An OS layer that cannot tell files finds nothing, and reads nothing. */
static void test_no_file_layer(void **state)
{
    (void)state;
    struct child c;
    child_init(&c);
    static const struct guestos_ops none = {.name = "none"};
    c.os.ops = &none;
    struct discover_module mods[4];
    assert_int_equal(file_modules(&c, mods, 0, 4), 0);
    child_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found_through_its_file),
        cmocka_unit_test(test_wrong_index_places_nothing),
        cmocka_unit_test(test_header_not_cached),
        cmocka_unit_test(test_no_file_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
