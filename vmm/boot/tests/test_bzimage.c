/* bzImage loading (boot.rst 64-bit boot protocol): zero-page fields, placement, and every
 * malformed-image case, on synthetic images built here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/boot/bzimage.h"
#include "vmm/boot/mptable.h"
#include "vmm/boot/tests/fixture.h"
#include "vmm/boot/zeropage.h"

#define MiB (1ull << 20)

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int load(struct test_ram *r, uint64_t mem, const uint8_t *img, size_t len,
                const uint8_t *initrd, size_t initrd_len, const char *cmdline,
                struct boot_entry *out, struct hv_err *err)
{
    test_ram_init(r, mem);
    struct boot_config cfg = {.cmdline = cmdline, .nr_cpus = 2, .mem_bytes = mem};
    struct boot_image k = {.name = "vmlinuz", .data = img, .size = len};
    struct boot_image i = {.name = "initramfs", .data = initrd, .size = initrd_len};
    return boot_load_images(&r->gmem, &cfg, &k, initrd ? &i : NULL, out, err);
}

static void test_zero_page_fields(void **state)
{
    struct bz_spec spec = bz_default_spec();
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    size_t ilen = 1 * MiB + 5;
    uint8_t *initrd = malloc(ilen);
    for (size_t i = 0; i < ilen; i++)
        initrd[i] = (uint8_t)(i * 13);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    const char *cmd = "console=ttyS0 quiet";
    assert_int_equal(load(&r, 512 * MiB, img, len, initrd, ilen, cmd, &b, &err), 0);

    const uint8_t *zp = test_ram_at(&r, 0x7000, 4096);
    /* Only the setup header was copied into a clean page (pitfall 5.1). */
    for (unsigned i = 0; i < SH_START; i++)
        if (i != ZP_E820_ENTRIES && (i < ZP_ACPI_RSDP_ADDR || i >= ZP_ACPI_RSDP_ADDR + 8))
            assert_int_equal(zp[i], 0);
    assert_int_equal(rd32(zp + ZP_ACPI_RSDP_ADDR), 0xe0000);
    assert_int_equal(zp[ZP_SENTINEL], 0);
    assert_memory_equal(zp + SH_BOOT_FLAG, img + SH_BOOT_FLAG, 2);
    assert_memory_equal(zp + SH_HEADER, "HdrS", 4);
    assert_memory_equal(zp + SH_VERSION, img + SH_VERSION, 2);
    assert_memory_equal(zp + SH_INIT_SIZE, img + SH_INIT_SIZE, 4);
    assert_memory_equal(zp + SH_PREF_ADDRESS, img + SH_PREF_ADDRESS, 8);
    for (unsigned i = 0x26c; i < ZP_E820_TABLE; i++)
        assert_int_equal(zp[i], 0); /* setup code after the header (0xcc) stayed out */

    /* Loader-written fields (boot.rst "Details of Header Fields"). */
    assert_int_equal(zp[SH_TYPE_OF_LOADER], 0xff);
    assert_int_equal(zp[SH_VID_MODE] | zp[SH_VID_MODE + 1] << 8, 0xffff);
    assert_int_equal(rd32(zp + SH_CMD_LINE_PTR), 0x20000);
    assert_string_equal((const char *)test_ram_at(&r, 0x20000, strlen(cmd) + 1), cmd);

    uint32_t rd_image = rd32(zp + SH_RAMDISK_IMAGE), rd_size = rd32(zp + SH_RAMDISK_SIZE);
    assert_int_equal(rd_size, ilen);
    assert_int_equal(rd_image % 4096, 0);
    assert_true((uint64_t)rd_image + rd_size - 1 <= spec.initrd_addr_max);
    assert_true((uint64_t)rd_image + rd_size <= 512 * MiB);
    assert_true(512 * MiB - ((uint64_t)rd_image + rd_size) < 4096); /* highest possible */
    /* Clear of [load, load + init_size). */
    assert_true(rd_image >= spec.pref_address + spec.init_size);
    assert_memory_equal(test_ram_at(&r, rd_image, ilen), initrd, ilen);
    assert_int_equal(rd32(zp + ZP_EXT_RAMDISK_IMAGE), 0);
    assert_int_equal(rd32(zp + ZP_EXT_RAMDISK_SIZE), 0);
    assert_int_equal(b.initrd_gpa, rd_image);
    assert_int_equal(b.initrd_size, ilen);

    /* e820 in the zero page. */
    assert_int_equal(zp[ZP_E820_ENTRIES], 4);
    const uint8_t *e = zp + ZP_E820_TABLE;
    assert_int_equal(rd64(e), 0);
    assert_int_equal(rd64(e + 8), 0x9fc00);
    assert_int_equal(rd32(e + 16), 1);
    assert_int_equal(rd64(e + 20), 0x9fc00);
    assert_int_equal(rd64(e + 28), 0x400);
    assert_int_equal(rd32(e + 36), 2);
    assert_int_equal(rd64(e + 40), 0xe0000); /* ACPI tables */
    assert_int_equal(rd64(e + 48), 0x20000);
    assert_int_equal(rd32(e + 56), 2);
    assert_int_equal(rd64(e + 60), 0x100000);
    assert_int_equal(rd64(e + 68), 512 * MiB - 0x100000);
    assert_int_equal(rd32(e + 76), 1);
    assert_int_equal(rd64(e + 80), 0); /* entry 4 unused */

    /* Relocatable kernel: loaded at pref_address, entered at +0x200 (64-bit boot protocol). */
    assert_int_equal(b.kind, BOOT_BZIMAGE);
    assert_int_equal(b.kernel_gpa, 16 * MiB);
    assert_int_equal(b.kernel_end, 24 * MiB);
    assert_int_equal(b.regs.rip, 16 * MiB + 0x200);
    assert_int_equal(b.regs.rsi, 0x7000);
    assert_int_equal(b.regs.rflags, 2);
    assert_int_equal(b.sregs.cs.selector, 0x10);
    assert_int_equal(b.sregs.ds.selector, 0x18);
    assert_memory_equal(test_ram_at(&r, 16 * MiB, spec.payload_size),
                        img + bz_payload_offset(&spec), spec.payload_size);
    /* Shared structures are there too. */
    assert_memory_equal(test_ram_at(&r, 0x9fc00, 4), "_MP_", 4);
    assert_int_equal(rd64(test_ram_at(&r, 0x510, 8)), 0x00af9b000000ffffull);
    assert_int_equal(rd64(test_ram_at(&r, 0x1000, 8)), 0x2003);
    test_ram_free(&r);
    free(img);
    free(initrd);
}

static void test_default_cmdline_and_no_initrd(void **state)
{
    struct bz_spec spec = bz_default_spec();
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    assert_int_equal(load(&r, 64 * MiB, img, len, NULL, 0, NULL, &b, &err), 0);
    assert_string_equal((const char *)test_ram_at(&r, 0x20000, 1),
                        "console=ttyS0 earlyprintk=serial reboot=k panic=-1 pci=off");
    const uint8_t *zp = test_ram_at(&r, 0x7000, 4096);
    assert_int_equal(rd32(zp + SH_RAMDISK_IMAGE), 0);
    assert_int_equal(rd32(zp + SH_RAMDISK_SIZE), 0);
    assert_int_equal(b.initrd_gpa, 0);
    test_ram_free(&r);
    free(img);
}

static void test_setup_sects_zero_means_four(void **state)
{
    struct bz_spec spec = bz_default_spec();
    spec.setup_sects = 0;
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    assert_int_equal(bz_payload_offset(&spec), 5 * 512);
    struct bzimage_info info;
    struct hv_err err = {0};
    assert_int_equal(bzimage_parse(img, len, &info, &err), 0);
    assert_int_equal(info.setup_sects, 4);
    assert_int_equal(info.payload_offset, 5 * 512);
    assert_int_equal(info.payload_size, spec.payload_size);
    assert_int_equal(info.header_end, 0x26c);

    struct test_ram r;
    struct boot_entry b;
    assert_int_equal(load(&r, 64 * MiB, img, len, NULL, 0, "x", &b, &err), 0);
    assert_memory_equal(test_ram_at(&r, b.kernel_gpa, spec.payload_size), img + 5 * 512,
                        spec.payload_size);
    test_ram_free(&r);
    free(img);
}

static void test_non_relocatable_loads_at_1mib(void **state)
{
    struct bz_spec spec = bz_default_spec();
    spec.relocatable = 0;
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    uint8_t initrd[5000];
    memset(initrd, 0x5a, sizeof(initrd));
    assert_int_equal(load(&r, 64 * MiB, img, len, initrd, sizeof(initrd), "x", &b, &err), 0);
    assert_int_equal(b.kernel_gpa, 1 * MiB);
    assert_int_equal(b.regs.rip, 1 * MiB + 0x200);
    /* The kernel moves itself to pref_address: the footprint covers both. */
    assert_int_equal(b.kernel_end, 24 * MiB);
    assert_true(b.initrd_gpa >= 24 * MiB);
    test_ram_free(&r);
    free(img);
}

static void test_low_initrd_addr_max(void **state)
{
    struct bz_spec spec = bz_default_spec();
    spec.initrd_addr_max = 0x0fffffff;
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    uint8_t *initrd = calloc(1, 3 * MiB);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    assert_int_equal(load(&r, 512 * MiB, img, len, initrd, 3 * MiB, "x", &b, &err), 0);
    assert_int_equal(b.initrd_gpa + 3 * MiB - 1, 0x0fffffff);
    test_ram_free(&r);
    free(img);
    free(initrd);
}

/* Load `img` and expect one error line naming `file` and containing `what`. */
static void expect_error(const uint8_t *img, size_t len, uint64_t mem, size_t initrd_len,
                         const char *cmdline, const char *file, const char *what)
{
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    uint8_t *initrd = initrd_len ? calloc(1, initrd_len) : NULL;
    int rc = load(&r, mem, img, len, initrd, initrd_len, cmdline, &b, &err);
    if (rc != -1 || !strstr(err.msg, what) || strncmp(err.msg, file, strlen(file)) != 0)
        fail_msg("expected \"%s: ...%s...\", got rc %d \"%s\"", file, what, rc, err.msg);
    assert_null(strchr(err.msg, '\n'));
    test_ram_free(&r);
    free(initrd);
}

static void test_malformed_images(void **state)
{
    struct bz_spec spec = bz_default_spec();
    size_t len;
    uint8_t *good = bz_build(&spec, &len);
    uint8_t *img = malloc(len);

#define FRESH() memcpy(img, good, len)
    FRESH();
    img[SH_BOOT_FLAG] = 0x56;
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "boot_flag");
    FRESH();
    img[SH_HEADER + 3] = 'Z';
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "HdrS");
    FRESH();
    img[SH_VERSION] = 0x0b; /* 2.11 */
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "older than 2.12");
    FRESH();
    img[SH_XLOADFLAGS] &= (uint8_t)~XLF_KERNEL_64;
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "no 64-bit entry");
    FRESH();
    img[SH_JUMP + 1] = 0x50; /* header would end at 0x252, before init_size */
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "header ends");
    FRESH(); /* setup shorter than setup_sects claims */
    expect_error(img, 3 * 512, 64 * MiB, 0, NULL, "vmlinuz: ", "setup sectors");
    FRESH(); /* payload shorter than syssize claims */
    expect_error(img, len - 16, 64 * MiB, 0, NULL, "vmlinuz: ", "syssize");
    FRESH(); /* header itself cut */
    expect_error(img, 0x204, 64 * MiB, 0, NULL, "vmlinuz: ", "truncated");
    FRESH();
    img[SH_KERNEL_ALIGNMENT] = 3;
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "power of two");
    /* Segments outside RAM: a non-relocatable kernel that wants to run below 1 MiB. */
    FRESH();
    img[SH_RELOCATABLE] = 0;
    memset(img + SH_PREF_ADDRESS, 0, 8);
    img[SH_PREF_ADDRESS + 1] = 0x10; /* 0x1000 */
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "below 1 MiB");
    /* Kernel too big for --mem: init_size window past the end of RAM. */
    FRESH();
    expect_error(img, len, 20 * MiB, 0, NULL, "vmlinuz: ", "too big for --mem");
    FRESH();
    img[SH_PREF_ADDRESS + 7] = 0x80; /* pref_address far beyond RAM */
    img[SH_RELOCATABLE] = 0;
    expect_error(img, len, 64 * MiB, 0, NULL, "vmlinuz: ", "too big for --mem");
    /* initrd does not fit: 64 MiB RAM, kernel up to 24 MiB, 41 MiB initrd. */
    FRESH();
    expect_error(img, len, 64 * MiB, 41 * MiB, NULL, "initramfs: ", "does not fit");
    /* Command line longer than cmdline_size. */
    FRESH();
    memset(img + SH_CMDLINE_SIZE, 0, 4);
    img[SH_CMDLINE_SIZE] = 10;
    expect_error(img, len, 64 * MiB, 0, "01234567890", "vmlinuz: ", "command line");
    /* Not a kernel at all. */
    FRESH();
    memset(img, 0, 0x300);
    expect_error(img, len, 64 * MiB, 0, NULL,
                 "vmlinuz: ", "not an ELF64 kernel or a Linux bzImage");
#undef FRESH
    free(img);
    free(good);
}

static void test_exact_fit_is_accepted(void **state)
{
    /* 24 MiB of RAM holds [16 MiB, 24 MiB) exactly: loaded at pref_address. */
    struct bz_spec spec = bz_default_spec();
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    assert_int_equal(load(&r, 24 * MiB, img, len, NULL, 0, "x", &b, &err), 0);
    assert_int_equal(b.kernel_gpa, 16 * MiB);
    assert_int_equal(b.kernel_end, 24 * MiB);
    test_ram_free(&r);
    free(img);
}

static void test_files(void **state)
{
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    test_ram_init(&r, 64 * MiB);
    struct boot_config cfg = {.nr_cpus = 1, .mem_bytes = 64 * MiB};

    const char *text = "#!/bin/sh\necho this is not a kernel\n";
    cfg.kernel_path = test_write_file(0, "script.sh", text, strlen(text));
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), -1);
    assert_non_null(strstr(err.msg, "script.sh: not an ELF64 kernel or a Linux bzImage"));

    cfg.kernel_path = test_write_file(0, "empty", "", 0);
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), -1);
    assert_non_null(strstr(err.msg, "empty: not an ELF64 kernel or a Linux bzImage"));

    cfg.kernel_path = "/nonexistent/vmlinuz";
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), -1);
    assert_string_equal(err.msg, "/nonexistent/vmlinuz: No such file or directory");

    cfg.kernel_path = "/tmp";
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), -1);
    assert_string_equal(err.msg, "/tmp: a directory, not a file hvprof can read");

    /* A real file round trip: bzImage + initrd from disk. */
    struct bz_spec spec = bz_default_spec();
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    cfg.kernel_path = test_write_file(0, "vmlinuz", img, len);
    cfg.initrd_path = test_write_file(1, "initrd", "0123456789", 10);
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), 0);
    assert_int_equal(b.initrd_size, 10);
    assert_memory_equal(test_ram_at(&r, b.initrd_gpa, 10), "0123456789", 10);

    cfg.initrd_path = test_write_file(1, "empty-initrd", "", 0);
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), -1);
    assert_non_null(strstr(err.msg, "empty-initrd: initrd is empty"));

    cfg.initrd_path = "/nonexistent/initrd";
    assert_int_equal(boot_load(&r.gmem, &cfg, &b, &err), -1);
    assert_string_equal(err.msg, "/nonexistent/initrd: No such file or directory");
    free(img);
    test_ram_free(&r);
}

static void test_bad_config(void **state)
{
    struct bz_spec spec = bz_default_spec();
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    test_ram_init(&r, 64 * MiB);
    struct boot_image k = {.name = "vmlinuz", .data = img, .size = len};
    struct boot_config cfg = {.nr_cpus = 0, .mem_bytes = 64 * MiB};
    assert_int_equal(boot_load_images(&r.gmem, &cfg, &k, NULL, &b, &err), -1);
    assert_non_null(strstr(err.msg, "--vcpus"));
    cfg.nr_cpus = 1025;
    assert_int_equal(boot_load_images(&r.gmem, &cfg, &k, NULL, &b, &err), -1);
    assert_non_null(strstr(err.msg, "1 to 1024"));
    /* The gmem must hold all of --mem. */
    cfg.nr_cpus = 1;
    cfg.mem_bytes = 128 * MiB;
    assert_int_equal(boot_load_images(&r.gmem, &cfg, &k, NULL, &b, &err), -1);
    assert_non_null(strstr(err.msg, "does not cover"));
    test_ram_free(&r);
    free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_page_fields),
        cmocka_unit_test(test_default_cmdline_and_no_initrd),
        cmocka_unit_test(test_setup_sects_zero_means_four),
        cmocka_unit_test(test_non_relocatable_loads_at_1mib),
        cmocka_unit_test(test_low_initrd_addr_max),
        cmocka_unit_test(test_malformed_images),
        cmocka_unit_test(test_exact_fit_is_accepted),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
