/* Module discovery from guest memory: real ELF files loaded (segment by segment, as a loader
 * would) into a synthetic guest address space with real x86-64 page tables; discovery must find
 * them through the page tables alone, with build-id, load bias and soname. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestwalk/tests/guest_image.h"
#include "schema/recording.h"
#include "guestos/module.h"
#include "sampler/parts/module_registry.h"
#include "guestos/generic/user_modules.h"
#include "report/fxt_load.h"
#include "symbolize/elf_symbols.h"
#include "testutil.h"

#define PAGE 4096ull

/* Load `path`'s PT_LOAD segments at bias into the image; exec segments without XD. */
static void load_elf(struct gimg *g, const char *path, uint64_t bias)
{
    size_t len;
    uint8_t *f = read_file(path, &len);
    assert_non_null(f);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(f + eh->e_phoff + i * sizeof(*ph));
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = (ph->p_vaddr & ~(PAGE - 1)) + bias;
        uint64_t e = ((ph->p_vaddr + ph->p_memsz + PAGE - 1) & ~(PAGE - 1)) + bias;
        uint64_t flags = GIMG_USER_RW | ((ph->p_flags & PF_X) ? 0 : GIMG_XD);
        assert_int_equal(gimg_map_fresh(g, s, e - s, flags), 0);
        assert_int_equal(gimg_write(g, ph->p_vaddr + bias, f + ph->p_offset, ph->p_filesz), 0);
    }
    free(f);
}

static const struct discover_module *find(const struct discover_module *m, size_t n, uint64_t va)
{
    for (size_t i = 0; i < n; i++) {
        if (m[i].header_va == va)
            return &m[i];
    }
    return NULL;
}

static void test_discover_through_page_tables(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    const uint64_t lib_bias = 0x7f1234560000ull;
    load_elf(&g, fixture("prog_static"), 0);
    load_elf(&g, fixture("libfix_stripped.so"), lib_bias);
    /* A supervisor-only executable page is not a user module. */
    assert_int_equal(gimg_map_fresh(&g, 0x10000000, PAGE, GIMG_KERN_RW), 0);
    assert_int_equal(gimg_write(&g, 0x10000000, "\177ELF", 4), 0);

    struct gw_snapshot cpu = gimg_cpu(&g, 0x401000, 0x7ffff000, 0, 3);
    cpu.efer |= PT_EFER_NXE;
    struct pt_mmu mmu;
    assert_int_equal(pt_mmu_init(&mmu, cpu.cr0, cpu.cr3, cpu.cr4, cpu.efer, 0, 0), PT_OK);
    struct discover_module mods[8];
    struct discover_guest_stats st;
    size_t n = discover_guest_modules(&g.mem, &mmu, mods, 8, &st);
    assert_int_equal(st.iter_result, 0);
    assert_int_equal(n, 2);

    struct elf_symbols prog, lib;
    assert_int_equal(elf_symbols_load_file(&prog, fixture("prog_static"), NULL), 0);
    assert_int_equal(elf_symbols_load_file(&lib, fixture("libfix.so"), NULL), 0);
    const struct discover_module *m = find(mods, n, 0x400000);
    assert_non_null(m);
    assert_int_equal(m->bias, 0);
    assert_int_equal(m->e_type, ET_EXEC);
    assert_int_equal(m->build_id_len, 20);
    assert_memory_equal(m->build_id, prog.build_id, 20);
    assert_string_equal(m->name, ""); /* no DT_SONAME: the recording names it by address */
    assert_true(m->nseg >= 2);
    m = find(mods, n, lib_bias);
    assert_non_null(m);
    assert_int_equal(m->bias, lib_bias);
    assert_int_equal(m->e_type, ET_DYN);
    assert_memory_equal(m->build_id, lib.build_id, 20);
    assert_string_equal(m->name, "libfix.so.1"); /* DT_SONAME through the dynamic section */
    elf_symbols_free(&prog);
    elf_symbols_free(&lib);
    gimg_free(&g);
}

/* Record time to report time: modules discovered in guest memory go into a recording with the
 * fxt writer; the report side symbolizes samples from the file plus symbol files found by
 * build-id alone (the recording names the program only "[elf@0x400000]"). */
static void test_record_and_symbolize(void **state)
{
    (void)state;
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    const uint64_t lib_bias = 0x7f1234560000ull;
    load_elf(&g, fixture("prog_static"), 0);
    load_elf(&g, fixture("libfix_stripped.so"), lib_bias);
    struct gw_snapshot cpu = gimg_cpu(&g, 0x401000, 0x7ffff000, 0, 3);
    struct pt_mmu mmu;
    assert_int_equal(pt_mmu_init(&mmu, cpu.cr0, cpu.cr3, cpu.cr4, cpu.efer, 0, 0), PT_OK);
    struct discover_module mods[8];
    size_t n = discover_guest_modules(&g.mem, &mmu, mods, 8, NULL);
    assert_int_equal(n, 2);

    char *dir = make_temp_dir();
    char path[4096];
    snprintf(path, sizeof(path), "%s/rec.fxt", dir);
    struct fxt_writer w;
    struct hv_err err;
    if (hvfxt_recording_open(&w, path, 1000000000ull, 1, "test", &err) < 0)
        fail_msg("%s", err.msg);
    struct discover_registry reg;
    discover_registry_init(&reg);
    const uint64_t pid = hvfxt_koid_guest_process(3);
    int rc = discover_record(&w, &reg, pid, mods, n, 10, &err);
    assert_true(rc >= 4); /* 2 modules + their segments */
    assert_int_equal(discover_record(&w, &reg, pid, mods, n, 20, &err), 0); /* nothing new */
    /* A kernel ELF at its (higher-half) link address, in address space 0, as the sampler
     * records a kernel the VMM loaded. */
    struct elf_symbols kes;
    if (elf_symbols_load_file(&kes, fixture("kernel_standin"), &err) < 0)
        fail_msg("%s", err.msg);
    struct discover_module k = {.header_va = kes.load_lo & ~0xfffull, .e_type = ET_EXEC};
    k.start = k.header_va;
    k.end = (kes.load_hi + 0xfff) & ~0xfffull;
    k.seg[0] = (struct discover_seg){.start = k.start, .size = k.end - k.start, .flags = 5};
    k.nseg = 1;
    memcpy(k.build_id, kes.build_id, kes.build_id_len);
    k.build_id_len = kes.build_id_len;
    snprintf(k.name, sizeof(k.name), "%s", fixture("kernel_standin"));
    elf_symbols_free(&kes);
    if (discover_record(&w, &reg, hvfxt_koid_guest_process(0), &k, 1, 10, &err) < 0)
        fail_msg("%s", err.msg);

    uint64_t leaf = nm_address(fixture("prog_static"), "fixture_leaf");
    uint64_t lib_leaf = nm_address(fixture("libfix.so"), "fixture_middle") + lib_bias;
    uint64_t us[] = {lib_leaf + 4};
    uint64_t kfn = nm_address(fixture("kernel_standin"), "fixture_outer");
    assert_true(kfn >= 0xffffffff80100000ull);
    struct hvfxt_sample smp = {.fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS |
                                         HVFXT_SF_USER_STACK | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                                         HVFXT_SF_PC,
                               .pid = pid,
                               .tid = hvfxt_koid_guest_thread(1),
                               .ts = 100,
                               .user_stack = us,
                               .n_user = 1,
                               .cpl = 3,
                               .pc = leaf + 1};
    uint64_t words[64];
    size_t nw = hvfxt_enc_sample(words, 64, &smp);
    assert_true(nw > 0);
    assert_int_equal(fxt_writer_emit(&w, hvfxt_vcpu_provider(0), words, nw, &err), 0);
    /* And a kernel-mode sample in the same process. */
    smp.fields &= ~(uint32_t)HVFXT_SF_USER_STACK;
    smp.cpl = 0;
    smp.pc = kfn + 2;
    nw = hvfxt_enc_sample(words, 64, &smp);
    assert_int_equal(fxt_writer_emit(&w, hvfxt_vcpu_provider(0), words, nw, &err), 0);
    assert_int_equal(fxt_writer_close(&w, &err), 0);
    discover_registry_free(&reg);
    gimg_free(&g);

    struct profile p;
    profile_init(&p);
    if (fxt_load_profile_file(path, &p, NULL, NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    struct symbol_path sp;
    symbol_path_init(&sp);
    assert_int_equal(symbol_path_add_dir(&sp, FIXTURE_OUT, NULL), 0);
    size_t loaded;
    assert_int_equal(profile_load_symbols(&p, &sp, &loaded, NULL), 0);
    assert_int_equal(loaded, 2 + 1); /* program, library, "kernel" (by its recorded path) */
    assert_int_equal(profile_symbolize(&p, NULL, NULL, NULL), 0);
    assert_int_equal(p.samples.n, 2);
    const struct prof_frame *kf = &p.frames.v[p.samples.v[1].first];
    assert_string_equal(p.funcs.v[p.locs.v[kf->loc].func].name, "fixture_outer");
    const struct prof_frame *f = &p.frames.v[p.samples.v[0].first];
    assert_string_equal(p.funcs.v[p.locs.v[f[0].loc].func].name, "fixture_leaf");
    assert_string_equal(p.funcs.v[p.locs.v[f[1].loc].func].name, "fixture_middle");
    /* Named from its main module, once found by build-id. */
    assert_string_equal(profile_process_name(&p, pid), "prog_static");
    symbol_path_free(&sp);
    profile_free(&p);
    remove_temp_dir(dir);
}

/* Hostile headers through the plain callback interface: a flat buffer as memory. */
struct flat {
    uint8_t *b;
    uint64_t base, len;
};

static bool flat_read(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct flat *f = ctx;
    if (va < f->base || va - f->base > f->len || len > f->len - (va - f->base))
        return false;
    memcpy(dst, f->b + (va - f->base), len);
    return true;
}

static void test_hostile_headers(void **state)
{
    (void)state;
    size_t len;
    uint8_t *img = read_file(fixture("prog_static"), &len);
    struct flat f = {img, 0x400000, len < 0x4000 ? len : 0x4000};
    struct discover_module m;
    struct hv_err err;
    assert_int_equal(discover_elf_at(flat_read, &f, 0x400000, &m, &err), 0);
    Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
    Elf64_Ehdr saved = *eh;
    eh->e_phnum = 0xffff;
    assert_int_equal(discover_elf_at(flat_read, &f, 0x400000, &m, &err), -1);
    *eh = saved;
    eh->e_phoff = 1ull << 40;
    assert_int_equal(discover_elf_at(flat_read, &f, 0x400000, &m, &err), -1);
    *eh = saved;
    Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset != 0)
            ph[i].p_memsz = ~0ull - 0x1000;
    }
    assert_int_equal(discover_elf_at(flat_read, &f, 0x400000, &m, &err), -1);
    assert_non_null(strstr(err.msg, "out of range"));
    /* The range scan stops after DISCOVER_SCAN_PAGES pages without a header. */
    struct discover_range r = {0x400000 + (DISCOVER_SCAN_PAGES + 2) * PAGE, 0x500000};
    uint8_t *big = calloc(1, 0x100000);
    memcpy(big, img, 0x1000);
    struct flat fb = {big, 0x400000, 0x100000};
    assert_int_equal(discover_modules(flat_read, &fb, &r, 1, &m, 1), 0);
    free(big);
    free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discover_through_page_tables),
        cmocka_unit_test(test_record_and_symbolize),
        cmocka_unit_test(test_hostile_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
