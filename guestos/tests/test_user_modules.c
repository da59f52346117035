/* User-space modules as Linux maps them, found in guest memory alone: this machine's own Debian
 * binaries (a PIE executable, the dynamic loader, libc.so.6 with its headers 38 pages below its
 * code, GNU ld's -z separate-code layout) loaded segment by segment into a synthetic guest
 * address space with real page tables, the loader's r_debug and link map written as ld.so
 * writes them; the dynamic symbols read from guest memory must be exactly the file's. */
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
#include "guestos/generic/elf_dynamic.h"
#include "guestos/generic/link_map.h"
#include "guestos/generic/user_modules.h"
#include "guestwalk/tests/guest_image.h"

#define PAGE 4096ull

/* Debian's paths (the guests run Debian 12; so does this machine). */
#define EXE_PATH  "/usr/bin/true"
#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"
#define LD_PATH   "/lib64/ld-linux-x86-64.so.2"

#define EXE_BIAS  0x555555554000ull
#define LIBC_BIAS 0x7f3a12000000ull
#define LD_BIAS   0x7f3a13000000ull
#define DATA_VA   0x7f3a14000000ull /* where the test's loader keeps r_debug and the link map */

static uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *b;
    struct hv_err err;
    if (hv_read_file(path, 1ull << 30, &b, len, &err) < 0)
        fail_msg("%s (this test reads the machine's own Debian binaries)", err.msg);
    return b;
}

/* Map `path`'s PT_LOAD segments at bias; `with_code` false leaves the executable ones unmapped
 * (pages never touched). Returns the run-time address of its dynamic section. */
static uint64_t load(struct gimg *g, const char *path, uint64_t bias, bool with_code)
{
    size_t len;
    uint8_t *f = slurp(path, &len);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    uint64_t dyn = 0, mapped_end = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(f + eh->e_phoff + i * sizeof(*ph));
        if (ph->p_type == PT_DYNAMIC)
            dyn = ph->p_vaddr + bias;
        if (ph->p_type != PT_LOAD || (!with_code && (ph->p_flags & PF_X)))
            continue;
        uint64_t s = (ph->p_vaddr & ~(PAGE - 1)) + bias;
        uint64_t e = ((ph->p_vaddr + ph->p_memsz + PAGE - 1) & ~(PAGE - 1)) + bias;
        if (s < mapped_end)
            s = mapped_end; /* a page shared with the segment before */
        uint64_t flags = GIMG_USER_RW | ((ph->p_flags & PF_X) ? 0 : GIMG_XD);
        if (e > s)
            assert_int_equal(gimg_map_fresh(g, s, e - s, flags), 0);
        mapped_end = e;
        assert_int_equal(gimg_write(g, ph->p_vaddr + bias, f + ph->p_offset, ph->p_filesz), 0);
    }
    free(f);
    return dyn;
}

static void mmu_of(struct gimg *g, struct pt_mmu *mmu)
{
    struct gw_snapshot cpu = gimg_cpu(g, EXE_BIAS, 0x7ffff000, 0, 3);
    cpu.efer |= PT_EFER_NXE;
    assert_int_equal(pt_mmu_init(mmu, cpu.cr0, cpu.cr3, cpu.cr4, cpu.efer, 0, 0), PT_OK);
}

/* Guest-virtual reads through the image's page tables (discover_read_fn). */
struct gimg_reader {
    struct gimg *g;
    const struct pt_mmu *mmu;
};

static bool gimg_read_fn(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct gimg_reader *r = ctx;
    uint8_t *out = dst;
    while (len) {
        struct pt_xlate x;
        if (pt_translate(r->mmu, &r->g->mem, va, PT_ACC_USER, &x, NULL) < 0)
            return false;
        size_t chunk = PAGE - (va & (PAGE - 1));
        chunk = chunk < len ? chunk : len;
        if (!gmem_read(&r->g->mem, x.gpa, out, chunk))
            return false;
        out += chunk;
        va += chunk;
        len -= chunk;
    }
    return true;
}

static const struct discover_module *find(const struct discover_module *m, size_t n, uint64_t va)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].header_va == va)
            return &m[i];
    return NULL;
}

/* The file's GNU build-id, from its section headers' note. */
static void file_build_id(const char *path, uint8_t id[20])
{
    size_t len;
    uint8_t *f = slurp(path, &len);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    bool found = false;
    for (unsigned i = 0; i < eh->e_phnum && !found; i++) {
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(f + eh->e_phoff + i * sizeof(*ph));
        for (uint64_t o = ph->p_offset;
             ph->p_type == PT_NOTE && o + 12 < ph->p_offset + ph->p_filesz;) {
            const uint32_t *nh = (const uint32_t *)(f + o);
            uint64_t desc = o + 12 + ((nh[0] + 3) & ~3u);
            if (nh[2] == NT_GNU_BUILD_ID && nh[1] == 20) {
                memcpy(id, f + desc, 20);
                found = true;
                break;
            }
            o = desc + ((nh[1] + 3) & ~3u);
        }
    }
    free(f);
    assert_true(found);
}

/* libc alone, no loader state: found from its code pages, 38 pages above its header. */
static void test_header_below_code(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    load(&g, LIBC_PATH, LIBC_BIAS, true);
    struct pt_mmu mmu;
    mmu_of(&g, &mmu);
    struct discover_module mods[8];
    size_t n = discover_guest_modules(&g.mem, &mmu, mods, 8, NULL);
    assert_int_equal(n, 1);
    assert_int_equal(mods[0].header_va, LIBC_BIAS);
    assert_int_equal(mods[0].bias, LIBC_BIAS);
    assert_int_equal(mods[0].e_type, ET_DYN);
    assert_string_equal(mods[0].name, "libc.so.6"); /* DT_SONAME */
    uint8_t id[20];
    file_build_id(LIBC_PATH, id);
    assert_int_equal(mods[0].build_id_len, 20);
    assert_memory_equal(mods[0].build_id, id, 20);
    assert_true(mods[0].dynamic > LIBC_BIAS && mods[0].dynamic < mods[0].end);
    gimg_free(&g);
}

struct lm {
    uint64_t addr, name, ld, next, prev;
};

/* What ld.so leaves in memory: r_debug {version 1, r_map, r_brk, RT_CONSISTENT, ldbase} and the
 * list executable -> libc -> ld.so, and DT_DEBUG of the executable pointing at r_debug. */
static void write_loader_state(struct gimg *g, uint64_t exe_dyn, uint64_t libc_dyn, uint64_t ld_dyn,
                               uint32_t r_state)
{
    assert_int_equal(gimg_map_fresh(g, DATA_VA, PAGE, GIMG_USER_RW | GIMG_XD), 0);
    const uint64_t rd = DATA_VA, m0 = DATA_VA + 0x100, m1 = m0 + 0x40, m2 = m1 + 0x40;
    const uint64_t names = DATA_VA + 0x800;
    uint64_t r_debug[5] = {1, m0, LD_BIAS + 0x1000, r_state, LD_BIAS};
    gimg_write(g, rd, r_debug, sizeof(r_debug));
    struct lm e0 = {EXE_BIAS, names, exe_dyn, m1, 0};
    struct lm e1 = {LIBC_BIAS, names + 1, libc_dyn, m2, m0};
    struct lm e2 = {LD_BIAS, names + 1 + sizeof(LIBC_PATH), ld_dyn, 0, m1};
    gimg_write(g, m0, &e0, sizeof(e0));
    gimg_write(g, m1, &e1, sizeof(e1));
    gimg_write(g, m2, &e2, sizeof(e2));
    gimg_write(g, names, "", 1);
    gimg_write(g, names + 1, LIBC_PATH, sizeof(LIBC_PATH));
    gimg_write(g, names + 1 + sizeof(LIBC_PATH), LD_PATH, sizeof(LD_PATH));
    /* DT_DEBUG's slot in the executable's dynamic section. */
    struct pt_mmu mmu;
    mmu_of(g, &mmu);
    struct gimg_reader r = {g, &mmu};
    for (uint64_t va = exe_dyn;; va += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d;
        assert_true(gimg_read_fn(&r, va, &d, sizeof(d)));
        assert_int_not_equal(d.d_tag, DT_NULL);
        if (d.d_tag == DT_DEBUG) {
            d.d_un.d_ptr = rd;
            gimg_write(g, va, &d, sizeof(d));
            break;
        }
    }
}

/* A PIE process: the executable found from its code, the shared objects named by the paths
 * the loader opened, and libc found through the link map although none of its code pages is
 * mapped yet. */
static void test_link_map(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    uint64_t exe_dyn = load(&g, EXE_PATH, EXE_BIAS, true);
    uint64_t libc_dyn = load(&g, LIBC_PATH, LIBC_BIAS, false);
    uint64_t ld_dyn = load(&g, LD_PATH, LD_BIAS, true);
    write_loader_state(&g, exe_dyn, libc_dyn, ld_dyn, 0);
    struct pt_mmu mmu;
    mmu_of(&g, &mmu);
    struct discover_module mods[8];
    size_t n = discover_guest_modules(&g.mem, &mmu, mods, 8, NULL);
    assert_int_equal(n, 3);
    const struct discover_module *exe = find(mods, n, EXE_BIAS), *libc = find(mods, n, LIBC_BIAS),
                                 *ld = find(mods, n, LD_BIAS);
    assert_non_null(exe);
    assert_non_null(libc);
    assert_non_null(ld);
    assert_int_equal(exe->r_debug, DATA_VA);
    assert_string_equal(exe->name, ""); /* the loader names the executable "" */
    assert_string_equal(libc->name, LIBC_PATH);
    assert_string_equal(ld->name, LD_PATH);
    assert_int_equal(libc->bias, LIBC_BIAS);

    /* The list read directly, as the loader left it. */
    struct link_map_entry e[4];
    bool consistent;
    assert_int_equal(
        link_map_read(gimg_read_fn, &(struct gimg_reader){&g, &mmu}, DATA_VA, e, 4, &consistent),
        3);
    assert_true(consistent);
    assert_int_equal(e[1].addr, LIBC_BIAS);
    assert_int_equal(e[1].ld, libc_dyn);
    gimg_free(&g);
}

/* The file's defined functions in .dynsym: (address, name) pairs, sorted. */
struct sym {
    uint64_t addr;
    char name[DYN_MAX_NAME + 1];
};

static int by_addr_name(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return strcmp(x->name, y->name);
}

static size_t file_dynsyms(const char *path, struct sym *out, size_t max)
{
    size_t len, n = 0;
    uint8_t *f = slurp(path, &len);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM)
            continue;
        const char *str = (const char *)f + sh[sh[i].sh_link].sh_offset;
        const Elf64_Sym *s = (const Elf64_Sym *)(f + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof(*s); k++) {
            unsigned t = ELF64_ST_TYPE(s[k].st_info);
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s[k].st_shndx == SHN_UNDEF ||
                !s[k].st_value || !s[k].st_name)
                continue;
            assert_true(n < max);
            out[n].addr = s[k].st_value;
            snprintf(out[n].name, sizeof(out[n].name), "%s", str + s[k].st_name);
            n++;
        }
    }
    free(f);
    qsort(out, n, sizeof(*out), by_addr_name);
    return n;
}

struct collected {
    struct sym *v;
    size_t n, max;
};

static int collect(void *ctx, const struct guestos_symbol *s)
{
    struct collected *c = ctx;
    assert_true(c->n < c->max);
    c->v[c->n].addr = s->addr;
    snprintf(c->v[c->n].name, sizeof(c->v[c->n].name), "%.*s", (int)s->name_len, s->name);
    c->n++;
    return 0;
}

/* libc's exported functions read from guest memory: exactly the file's .dynsym functions
 * (memcpy, read, __libc_start_main, ...), counted through DT_GNU_HASH. */
static void test_dynamic_symbols(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    load(&g, LIBC_PATH, LIBC_BIAS, true);
    struct pt_mmu mmu;
    mmu_of(&g, &mmu);
    struct discover_module mods[2];
    assert_int_equal(discover_guest_modules(&g.mem, &mmu, mods, 2, NULL), 1);
    enum { MAX = 8192 };
    struct sym *want = calloc(MAX, sizeof(*want)), *got = calloc(MAX, sizeof(*got));
    size_t nwant = file_dynsyms(LIBC_PATH, want, MAX);
    assert_true(nwant > 1500);
    struct collected c = {got, 0, MAX};
    long k = discover_guest_symbols(&g.mem, &mmu, &mods[0], collect, &c);
    assert_int_equal(k, (long)nwant);
    qsort(got, c.n, sizeof(*got), by_addr_name);
    for (size_t i = 0; i < nwant; i++) {
        if (got[i].addr != want[i].addr || strcmp(got[i].name, want[i].name))
            fail_msg("symbol %zu: guest %#lx %s, file %#lx %s", i, (unsigned long)got[i].addr,
                     got[i].name, (unsigned long)want[i].addr, want[i].name);
    }
    bool memcpy_seen = false;
    for (size_t i = 0; i < nwant; i++)
        memcpy_seen |= !strcmp(got[i].name, "memcpy");
    assert_true(memcpy_seen);
    free(want);
    free(got);
    gimg_free(&g);
}

/* A hostile process: link maps that loop, break, or run on without end are bounded, and bad
 * r_debug values are refused. */
static void test_hostile_link_map(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    const uint64_t base = 0x7f0000000000ull, pages = 64;
    assert_int_equal(gimg_map_fresh(&g, base, pages * PAGE, GIMG_USER_RW | GIMG_XD), 0);
    struct pt_mmu mmu;
    mmu_of(&g, &mmu);
    struct gimg_reader r = {&g, &mmu};
    struct link_map_entry *e = calloc(LINK_MAP_MAX, sizeof(*e));
    bool consistent;

    /* A consistent chain longer than the bound: cut at LINK_MAP_MAX. */
    uint64_t rd[5] = {1, base + 0x40, 0, 1 /* RT_ADD */, 0};
    gimg_write(&g, base, rd, sizeof(rd));
    const unsigned chain = 5000;
    for (unsigned i = 0; i < chain; i++) {
        uint64_t at = base + 0x40 + 0x30ull * i;
        struct lm m = {0x1000ull * i, 0, 0, i + 1 < chain ? at + 0x30 : 0, i ? at - 0x30 : 0};
        gimg_write(&g, at, &m, sizeof(m));
    }
    assert_int_equal(link_map_read(gimg_read_fn, &r, base, e, LINK_MAP_MAX, &consistent),
                     LINK_MAP_MAX);
    assert_false(consistent); /* RT_ADD: dlopen in progress */

    /* A loop back to the head: its l_prev does not point back, the walk stops. */
    struct lm loop = {0, 0, 0, base + 0x40, base + 0x40};
    gimg_write(&g, base + 0x40 + 0x30, &loop, sizeof(loop));
    assert_int_equal(link_map_read(gimg_read_fn, &r, base, e, LINK_MAP_MAX, &consistent), 2);

    /* A name without an end within the bound, and one pointing nowhere: "". */
    memset(e, 0, sizeof(*e));
    uint8_t junk[DISCOVER_NAME_MAX + 8];
    memset(junk, 'a', sizeof(junk));
    gimg_write(&g, base + 40 * PAGE, junk, sizeof(junk));
    struct lm named = {0, base + 40 * PAGE, 0, 0, 0};
    gimg_write(&g, base + 0x40, &named, sizeof(named));
    assert_int_equal(link_map_read(gimg_read_fn, &r, base, e, 4, &consistent), 1);
    assert_string_equal(e[0].name, "");
    named.name = 0x100000000000ull; /* unmapped */
    gimg_write(&g, base + 0x40, &named, sizeof(named));
    assert_int_equal(link_map_read(gimg_read_fn, &r, base, e, 4, &consistent), 1);
    assert_string_equal(e[0].name, "");

    /* r_debug: unmapped, misaligned, a kernel address, version 0. */
    assert_int_equal(link_map_read(gimg_read_fn, &r, 0x100000000000ull, e, 4, &consistent), -1);
    assert_int_equal(link_map_read(gimg_read_fn, &r, base + 4, e, 4, &consistent), -1);
    assert_int_equal(link_map_read(gimg_read_fn, &r, 0xffff800000000000ull, e, 4, &consistent), -1);
    rd[0] = 0;
    gimg_write(&g, base, rd, sizeof(rd));
    assert_int_equal(link_map_read(gimg_read_fn, &r, base, e, 4, &consistent), -1);
    free(e);
    gimg_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_below_code),
        cmocka_unit_test(test_link_map),
        cmocka_unit_test(test_dynamic_symbols),
        cmocka_unit_test(test_hostile_link_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
