/* common/elf_header.h: this machine's own /bin/true (an x86-64 PIE) passes; each field the
 * reader checks, broken one at a time, gives its own reason and message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/elf_header.h"
#include "common/files.h"

static uint8_t *true_bin(size_t *n)
{
    uint8_t *b;
    struct hv_err err;
    if (hv_read_file("/bin/true", 16 << 20, &b, n, &err) < 0)
        fail_msg("%s (the test reads this machine's /bin/true)", err.msg);
    return b;
}

static void test_real_binary(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = true_bin(&n);
    Elf64_Ehdr eh;
    struct hv_elf_want any = {.max_phnum = 64, .extent = n};
    assert_int_equal(hv_elf64_header(b, n, &any, &eh), HV_ELF_OK);
    assert_int_equal(eh.e_type, ET_DYN);
    assert_int_equal(eh.e_machine, EM_X86_64);
    assert_true(hv_elf_is_elf64(b, n));
    /* A kernel loader wants ET_EXEC. */
    struct hv_elf_want exec = {.exec_only = true, .max_phnum = 64};
    struct hv_err err;
    assert_int_equal(hv_elf64_header_err(b, n, &exec, &eh, &err), -1);
    assert_string_equal(err.msg, "ELF type 3 is not an executable (ET_EXEC)");
    free(b);
}

/* One field broken at a time: its reason and message. */
static void test_each_field(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = true_bin(&n);
    struct hv_elf_want want = {.max_phnum = 64, .extent = n};
    Elf64_Ehdr eh;
    struct hv_err err;
    const struct {
        size_t off, width;
        uint64_t value;
        enum hv_elf_bad bad;
        const char *msg;
    } cases[] = {
        {0, 1, 0x7e, HV_ELF_NOT_ELF, "not an ELF file"},
        {EI_CLASS, 1, ELFCLASS32, HV_ELF_NOT_64, "not an ELF64 file (ELF class 1)"},
        {EI_DATA, 1, ELFDATA2MSB, HV_ELF_NOT_LE, "ELF file is not little-endian"},
        {offsetof(Elf64_Ehdr, e_machine), 2, EM_386, HV_ELF_NOT_X86_64,
         "ELF machine 3 is not x86-64"},
        {offsetof(Elf64_Ehdr, e_type), 2, ET_REL, HV_ELF_TYPE,
         "ELF type 1 is not loadable (ET_EXEC or ET_DYN)"},
        {offsetof(Elf64_Ehdr, e_phentsize), 2, 32, HV_ELF_PHENTSIZE, "e_phentsize 32 is not 56"},
        {offsetof(Elf64_Ehdr, e_phnum), 2, 0, HV_ELF_PHNUM, "0 program headers (1-64 supported)"},
        {offsetof(Elf64_Ehdr, e_phnum), 2, 65, HV_ELF_PHNUM,
         "65 program headers (1-64 supported)"},
        {offsetof(Elf64_Ehdr, e_phoff), 8, UINT64_MAX - 8, HV_ELF_PHOFF,
         "truncated ELF: program headers at 0xfffffffffffffff7 are past the end of the file"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t h[sizeof(Elf64_Ehdr)];
        memcpy(h, b, sizeof(h));
        memcpy(h + cases[i].off, &cases[i].value, cases[i].width); /* little-endian host */
        assert_int_equal(hv_elf64_header(h, sizeof(h), &want, &eh), cases[i].bad);
        assert_int_equal(hv_elf64_header_err(h, sizeof(h), &want, &eh, &err), -1);
        assert_string_equal(err.msg, cases[i].msg);
    }
    /* Cut short: the magic alone, then less than a header. */
    assert_int_equal(hv_elf64_header(b, 3, &want, &eh), HV_ELF_SHORT);
    assert_int_equal(hv_elf64_header_err(b, 20, &want, &eh, &err), -1);
    assert_string_equal(err.msg, "truncated ELF: 20 bytes, shorter than the ELF header");
    assert_false(hv_elf_is_elf64(b, 4));
    /* The program headers past the extent the caller knows. */
    struct hv_elf_want tight = {.max_phnum = 64, .extent = 100};
    assert_int_equal(hv_elf64_header(b, n, &tight, &eh), HV_ELF_PHOFF);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_binary),
        cmocka_unit_test(test_each_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
