/* ELF64 loading for the hvprof boot ABI (vmm/boot/hvprof_boot.h): segments, bss, boot info, entry
 * state, initrd, and the rejected cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/boot/elf64.h"
#include "common/files.h"
#include "vmm/boot/tests/fixture.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static const char *tiny_kernel_path;

static int load(struct test_ram *r, uint64_t mem, unsigned cpus, const uint8_t *img, size_t len,
                const uint8_t *initrd, size_t ilen, const char *cmdline, struct boot_entry *b,
                struct hv_err *err)
{
    test_ram_init(r, mem);
    /* Junk everywhere the loader writes, so zeroing is really checked. */
    memset(test_ram_at(r, 1 * MiB, 4 * MiB), 0xee, 4 * MiB);
    struct boot_config cfg = {.cmdline = cmdline, .nr_cpus = cpus, .mem_bytes = mem};
    struct boot_image k = {.name = "kernel.elf", .data = img, .size = len};
    struct boot_image i = {.name = "boot.cpio", .data = initrd, .size = ilen};
    return boot_load_images(&r->gmem, &cfg, &k, initrd ? &i : NULL, b, err);
}

static void test_two_segments_with_bss(void **state)
{
    const struct elf_seg_spec segs[] = {
        {.paddr = 0x100000, .filesz = 0x3000, .memsz = 0x3000, .fill = 0x11},
        {.paddr = 0x200000, .filesz = 0x123, .memsz = 0x5000, .fill = 0x22},
    };
    size_t len;
    uint8_t *img = elf_build(segs, 2, 0x100040, &len);
    uint8_t initrd[10000];
    for (unsigned i = 0; i < sizeof(initrd); i++)
        initrd[i] = (uint8_t)(i ^ 0x5a);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    assert_int_equal(
        load(&r, 64 * MiB, 2, img, len, initrd, sizeof(initrd), "hello world", &b, &err), 0);

    const uint8_t *t = test_ram_at(&r, 0x100000, 0x3000);
    for (unsigned i = 0; i < 0x3000; i++)
        assert_int_equal(t[i], (uint8_t)(0x11 ^ (uint8_t)i));
    const uint8_t *d = test_ram_at(&r, 0x200000, 0x5000);
    for (unsigned i = 0; i < 0x123; i++)
        assert_int_equal(d[i], (uint8_t)(0x22 ^ (uint8_t)i));
    for (unsigned i = 0x123; i < 0x5000; i++)
        assert_int_equal(d[i], 0);                         /* bss zeroed */
    assert_int_equal(*test_ram_at(&r, 0x205000, 1), 0xee); /* nothing past memsz */

    struct hvprof_bootinfo bi;
    memcpy(&bi, test_ram_at(&r, 0x7000, sizeof(bi)), sizeof(bi));
    assert_int_equal(bi.magic, HVPROF_BOOT_MAGIC);
    assert_int_equal(bi.version, HVPROF_BOOT_VERSION);
    assert_int_equal(bi.size, sizeof(bi));
    assert_int_equal(bi.nr_cpus, 2);
    assert_int_equal(bi.mem_bytes, 64 * MiB);
    assert_int_equal(bi.cmdline_gpa, 0x20000);
    assert_int_equal(bi.cmdline_len, 11);
    assert_string_equal((const char *)test_ram_at(&r, 0x20000, 12), "hello world");
    assert_int_equal(bi.kernel_end_gpa, 0x205000);
    assert_int_equal(bi.mptable_gpa, 0x9fc00);
    assert_memory_equal(test_ram_at(&r, bi.mptable_gpa, 4), "_MP_", 4);
    assert_int_equal(bi.e820_entries, 4);
    assert_int_equal(bi.e820[3].addr, 0x100000);
    assert_int_equal(bi.e820[3].addr + bi.e820[3].size, 64 * MiB);
    assert_int_equal(bi.e820[1].type, HVPROF_E820_RESERVED);
    assert_int_equal(bi.initrd_size, sizeof(initrd));
    assert_int_equal(bi.initrd_gpa % 4096, 0);
    assert_true(bi.initrd_gpa >= bi.kernel_end_gpa);
    assert_true(bi.initrd_gpa + sizeof(initrd) <= 64 * MiB);
    assert_true(64 * MiB - (bi.initrd_gpa + sizeof(initrd)) < 4096);
    assert_memory_equal(test_ram_at(&r, bi.initrd_gpa, sizeof(initrd)), initrd, sizeof(initrd));
    /* The rest of the boot info page is zero. */
    const uint8_t *page = test_ram_at(&r, 0x7000, 4096);
    for (unsigned i = sizeof(bi); i < 4096; i++)
        assert_int_equal(page[i], 0);

    assert_int_equal(b.kind, BOOT_ELF64);
    assert_int_equal(b.regs.rip, 0x100040);
    assert_int_equal(b.regs.rdi, 0x7000);
    assert_int_equal(b.regs.rsi, 0x7000);
    assert_int_equal(b.regs.rsp, 0xc000);
    assert_int_equal(b.sregs.cs.selector, 0x10);
    assert_int_equal(b.sregs.cr3, 0x1000);
    assert_int_equal(b.kernel_gpa, 0x100000);
    assert_int_equal(b.kernel_end, 0x205000);
    test_ram_free(&r);
    free(img);
}

static void test_no_cmdline_no_initrd(void **state)
{
    const struct elf_seg_spec seg = {.paddr = 0x100000, .filesz = 0x100, .memsz = 0x100};
    size_t len;
    uint8_t *img = elf_build(&seg, 1, 0x100000, &len);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    assert_int_equal(load(&r, 16 * MiB, 1, img, len, NULL, 0, NULL, &b, &err), 0);
    struct hvprof_bootinfo bi;
    memcpy(&bi, test_ram_at(&r, 0x7000, sizeof(bi)), sizeof(bi));
    assert_int_equal(bi.cmdline_gpa, 0);
    assert_int_equal(bi.cmdline_len, 0);
    assert_int_equal(bi.initrd_gpa, 0);
    assert_int_equal(bi.initrd_size, 0);
    assert_int_equal(bi.nr_cpus, 1);
    test_ram_free(&r);
    free(img);
}

static void test_above_mmio_gap(void **state)
{
    /* 3.5 GiB: RAM splits around the gap; the initrd stays below it; e820 has 4 entries. */
    const struct elf_seg_spec seg = {.paddr = 0x100000, .filesz = 0x100, .memsz = 0x100};
    size_t len;
    uint8_t *img = elf_build(&seg, 1, 0x100000, &len);
    uint8_t initrd[100] = {1};
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    uint64_t mem = 3 * GiB + 512 * MiB;
    assert_int_equal(load(&r, mem, 4, img, len, initrd, sizeof(initrd), "x", &b, &err), 0);
    struct hvprof_bootinfo bi;
    memcpy(&bi, test_ram_at(&r, 0x7000, sizeof(bi)), sizeof(bi));
    assert_int_equal(bi.e820_entries, 5);
    assert_int_equal(bi.e820[4].addr, 4 * GiB);
    assert_int_equal(bi.e820[4].size, 512 * MiB);
    assert_int_equal(bi.initrd_gpa, 3 * GiB - 4096);
    test_ram_free(&r);
    free(img);
}

static void expect_error(const uint8_t *img, size_t len, uint64_t mem, const char *what)
{
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    int rc = load(&r, mem, 1, img, len, NULL, 0, NULL, &b, &err);
    if (rc != -1 || !strstr(err.msg, what) || strncmp(err.msg, "kernel.elf: ", 12) != 0)
        fail_msg("expected \"kernel.elf: ...%s...\", got rc %d \"%s\"", what, rc, err.msg);
    /* A broken image is corrupt; a well-formed one for another machine or class, unsupported;
     * one that does not fit the guest's RAM is left to the caller's kind. */
    enum hv_err_kind want = HV_ERR_CORRUPT;
    if (strstr(what, "ELF64") || strstr(what, "x86-64") || strstr(what, "ET_EXEC"))
        want = HV_ERR_UNSUPPORTED;
    if (strstr(what, "RAM") || strstr(what, "1 MiB") || strstr(what, "initrd"))
        want = hv_err_kind(&err);
    if (hv_err_kind(&err) != want)
        fail_msg("\"%s\": kind %s, not %s", err.msg, hv_err_kind_name(hv_err_kind(&err)),
                 hv_err_kind_name(want));
    assert_null(strchr(err.msg, '\n'));
    test_ram_free(&r);
}

static void test_rejected(void **state)
{
    size_t len;
    uint8_t *img;
    struct elf_seg_spec s[2] = {{.paddr = 0x100000, .filesz = 0x1000, .memsz = 0x1000},
                                {.paddr = 0x200000, .filesz = 0x10, .memsz = 0x10}};

    s[0].paddr = 100 * MiB; /* past 64 MiB of RAM */
    img = elf_build(s, 1, 100 * MiB, &len);
    expect_error(img, len, 64 * MiB, "outside guest RAM");
    free(img);

    s[0].paddr = 3 * GiB - 0x800; /* straddles the MMIO gap */
    img = elf_build(s, 1, 3 * GiB - 0x800, &len);
    expect_error(img, len, 3 * GiB + 64 * MiB, "outside guest RAM");
    free(img);

    s[0].paddr = 0x80000; /* in the low boot area */
    img = elf_build(s, 1, 0x80000, &len);
    expect_error(img, len, 64 * MiB, "below 1 MiB");
    free(img);

    s[0].paddr = 0x100000;
    s[0].memsz = 0x800; /* filesz > memsz */
    img = elf_build(s, 1, 0x100000, &len);
    expect_error(img, len, 64 * MiB, "p_filesz");
    free(img);
    s[0].memsz = 0x1000;

    img = elf_build(s, 1, 0x100000, &len);
    expect_error(img, len - 1, 64 * MiB, "truncated"); /* segment data cut short */
    expect_error(img, 100, 64 * MiB, "truncated");     /* program headers cut */
    expect_error(img, 20, 64 * MiB, "truncated");      /* ELF header cut */
    img[4] = 1;                                        /* ELFCLASS32 */
    expect_error(img, len, 64 * MiB, "not an ELF64");
    img[4] = 2;
    img[18] = 3; /* EM_386 */
    expect_error(img, len, 64 * MiB, "not x86-64");
    img[18] = 62;
    img[16] = 3; /* ET_DYN */
    expect_error(img, len, 64 * MiB, "ET_EXEC");
    free(img);

    img = elf_build(s, 1, 0x101000, &len); /* entry just past the segment */
    expect_error(img, len, 64 * MiB, "entry point");
    free(img);
    img = elf_build(s, 1, 0x100fff, &len); /* last byte: accepted */
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    assert_int_equal(load(&r, 64 * MiB, 1, img, len, NULL, 0, NULL, &b, &err), 0);
    test_ram_free(&r);
    free(img);

    s[1].paddr = 0x100800; /* overlaps segment 0 */
    img = elf_build(s, 2, 0x100000, &len);
    expect_error(img, len, 64 * MiB, "overlaps");
    free(img);

    /* initrd that does not fit next to the kernel */
    s[0].memsz = 60 * MiB;
    img = elf_build(s, 1, 0x100000, &len);
    uint8_t *big = calloc(1, 4 * MiB);
    assert_int_equal(load(&r, 64 * MiB, 1, img, len, big, 4 * MiB, NULL, &b, &err), -1);
    assert_non_null(strstr(err.msg, "boot.cpio: initrd of"));
    test_ram_free(&r);
    free(big);
    free(img);
}

/* A real ELF produced by the toolchain (tiny_kernel.S, linked at 1 MiB). */
static void test_tiny_kernel_file(void **state)
{
    uint8_t *data;
    size_t size;
    struct hv_err err = {0};
    assert_int_equal(hv_read_file(tiny_kernel_path, 1 << 20, &data, &size, &err), 0);
    struct elf64_info info;
    assert_int_equal(elf64_parse(data, size, &info, &err), 0);
    assert_true(info.nseg >= 1);
    assert_true(info.lowest >= 0x100000);

    struct test_ram r;
    struct boot_entry b;
    test_ram_init(&r, 64 * MiB);
    struct boot_config cfg = {.kernel_path = tiny_kernel_path, .nr_cpus = 1, .mem_bytes = 64 * MiB};
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), 0);
    assert_int_equal(b.entry, info.entry);
    for (unsigned i = 0; i < info.nseg; i++)
        assert_memory_equal(test_ram_at(&r, info.seg[i].paddr, info.seg[i].filesz),
                            data + info.seg[i].offset, info.seg[i].filesz);
    test_ram_free(&r);
    free(data);
}

int main(int argc, char **argv)
{
    tiny_kernel_path = argc > 1 ? argv[1] : "boot_tiny_kernel";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_segments_with_bss), cmocka_unit_test(test_no_cmdline_no_initrd),
        cmocka_unit_test(test_above_mmio_gap),        cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_tiny_kernel_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
