/* VMCOREINFO from guest memory: the text as Linux 6.1 writes it (keys and value formats of
 * kernel/crash_core.c and arch/x86/kernel/crash_core_64.c), placed as the data page and the ELF
 * note in a synthetic guest RAM, found by the page scan; hostile and stale variants refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "guestos/linux/vmcoreinfo.h"

static const char text61[] = "OSRELEASE=6.1.0-27-amd64\n"
                             "BUILD-ID=0123456789abcdef0123456789abcdef01234567\n"
                             "PAGESIZE=4096\n"
                             "SYMBOL(init_uts_ns)=ffffffffa3c14420\n"
                             "OFFSET(uts_namespace.name)=0\n"
                             "SYMBOL(swapper_pg_dir)=ffffffffa3c0a000\n"
                             "SYMBOL(_stext)=ffffffffa2a00000\n"
                             "SYMBOL(kallsyms_names)=ffffffffa3660a28\n"
                             "NUMBER(phys_base)=-1644167168\n"
                             "SYMBOL(init_top_pgt)=ffffffffa3c0a000\n"
                             "NUMBER(pgtable_l5_enabled)=0\n"
                             "KERNELOFFSET=21a00000\n"
                             "NUMBER(KERNEL_IMAGE_SIZE)=1073741824\n";

#define RAM (4u << 20)

struct ram {
    uint8_t *b;
    struct gmem mem;
};

static void ram_init(struct ram *r)
{
    r->b = calloc(1, RAM);
    assert_non_null(r->b);
    gmem_init(&r->mem);
    assert_int_equal(gmem_add(&r->mem, 0, RAM, r->b, NULL), 0);
}

/* The data page at gpa: the text, then zeros. */
static void put_data(struct ram *r, uint64_t gpa, const char *t)
{
    memcpy(r->b + gpa, t, strlen(t));
}

/* The note at gpa (append_elf_note): namesz 11, descsz, type 0, "VMCOREINFO\0" + pad, text. */
static void put_note(struct ram *r, uint64_t gpa, const char *t)
{
    uint32_t hdr[3] = {11, (uint32_t)strlen(t), 0};
    memcpy(r->b + gpa, hdr, 12);
    memcpy(r->b + gpa + 12, "VMCOREINFO", 11);
    memcpy(r->b + gpa + 24, t, strlen(t));
}

static void test_parse_61(void **state)
{
    (void)state;
    struct lx_vmcoreinfo *v = malloc(sizeof(*v));
    struct hv_err err;
    assert_int_equal(lx_vmcoreinfo_parse(text61, sizeof(text61) - 1, v, &err), 0);
    assert_string_equal(v->osrelease, "6.1.0-27-amd64");
    assert_true(v->has_build_id);
    assert_int_equal(v->build_id[0], 0x01);
    assert_int_equal(v->build_id[19], 0x67);
    assert_true(v->has_kernel_offset);
    assert_int_equal(v->kernel_offset, 0x21a00000);
    uint64_t a;
    assert_true(lx_vmcoreinfo_symbol(v, "_stext", &a));
    assert_int_equal(a, 0xffffffffa2a00000ull);
    /* _stext - KERNELOFFSET is the default __START_KERNEL (0xffffffff81000000). */
    assert_int_equal(a - v->kernel_offset, 0xffffffff81000000ull);
    int64_t d;
    assert_true(lx_vmcoreinfo_decimal(v, "NUMBER(phys_base)", &d));
    assert_int_equal(d, -1644167168);
    assert_true(lx_vmcoreinfo_decimal(v, "OFFSET(uts_namespace.name)", &d));
    assert_int_equal(d, 0);
    assert_false(lx_vmcoreinfo_symbol(v, "no_such_symbol", &a));
    assert_false(lx_vmcoreinfo_symbol(v, "init_uts", &a)); /* a prefix is not a key */
    free(v);
}

static void test_parse_refuses(void **state)
{
    (void)state;
    struct lx_vmcoreinfo *v = malloc(sizeof(*v));
    struct hv_err err;
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"PAGESIZE=4096\n", "no OSRELEASE"},
        {"OSRELEASE=6.1\nBUILD-ID=0123\n", "hex digits"},
        {"OSRELEASE=6.1\nKERNELOFFSET=0x200000\n", "KERNELOFFSET"},
        {"OSRELEASE=6.1\nno equals sign\n", "has no '='"},
        {"OSRELEASE=6.1\nKEY=\x01\n", "not printable"},
        {"", "0 bytes"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(lx_vmcoreinfo_parse(bad[i].text, strlen(bad[i].text), v, &err), -1);
        if (!strstr(err.msg, bad[i].why))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.msg, bad[i].why);
    }
    char longline[200] = "OSRELEASE=";
    memset(longline + 10, 'x', 150);
    assert_int_equal(lx_vmcoreinfo_parse(longline, strlen(longline), v, &err), -1);
    assert_non_null(strstr(err.msg, "longer than 80"));
    int64_t d;
    static const char big[] = "OSRELEASE=6\nNUMBER(x)=99999999999999999999\n";
    assert_int_equal(lx_vmcoreinfo_parse(big, sizeof(big) - 1, v, &err), 0);
    assert_false(lx_vmcoreinfo_decimal(v, "NUMBER(x)", &d)); /* overflows int64 */
    free(v);
}

/* The data page and the note, as a booted kernel has them: found, two agreeing copies. */
static void test_find(void **state)
{
    (void)state;
    struct ram r;
    ram_init(&r);
    struct lx_vmcoreinfo *v = malloc(sizeof(*v));
    struct hv_err err;
    assert_int_equal(lx_vmcoreinfo_find(&r.mem, v, &err), 0); /* nothing there */
    put_data(&r, 0x123000, text61);
    put_note(&r, 0x200000, text61);
    /* A page that merely starts with the key but holds garbage is not a copy. */
    memcpy(r.b + 0x300000, "OSRELEASE=\x02\x03", 12);
    assert_int_equal(lx_vmcoreinfo_find(&r.mem, v, &err), 1);
    assert_int_equal(v->copies, 2);
    assert_int_equal(v->gpa, 0x123000);
    assert_string_equal(v->osrelease, "6.1.0-27-amd64");
    assert_int_equal(v->kernel_offset, 0x21a00000);
    /* A stale copy from another boot disagrees: nothing is trusted. */
    put_data(&r, 0x3ff000, "OSRELEASE=6.1.0-26-amd64\nKERNELOFFSET=1000000\n");
    assert_int_equal(lx_vmcoreinfo_find(&r.mem, v, &err), -1);
    assert_non_null(strstr(err.msg, "disagree"));
    /* A note at the very end of RAM whose text would run past it is cut, not over-read. */
    memset(r.b + 0x3ff000, 0, 0x1000);
    memset(r.b + 0x123000, 0, 0x1000);
    memset(r.b + 0x200000, 0, 0x2000);
    uint32_t hdr[3] = {11, 4096, 0};
    memcpy(r.b + RAM - 4096, hdr, 12);
    memcpy(r.b + RAM - 4096 + 12, "VMCOREINFO", 11);
    memcpy(r.b + RAM - 4096 + 24, "OSRELEASE=6.1\n", 14);
    assert_int_equal(lx_vmcoreinfo_find(&r.mem, v, &err), 1);
    assert_string_equal(v->osrelease, "6.1");
    free(v);
    free(r.b);
}

/* Guest RAM as the VMM maps it (anonymous, page-aligned, backed only where written): the scan
 * finds the copy the guest wrote and never touches the pages the guest has not, which stay
 * unbacked (mincore) — reading them would map the zero page under the guest. */
static void test_find_touches_only_written_pages(void **state)
{
    (void)state;
    const size_t size = 96u << 20; /* more than one 64 MiB residency chunk */
    uint8_t *ram = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(ram != MAP_FAILED);
    memcpy(ram + (80u << 20), text61, strlen(text61)); /* past the first chunk */
    memcpy(ram + 0x5000, "OSRELEASE", 9);              /* written, but no VMCOREINFO */
    struct gmem mem;
    gmem_init(&mem);
    assert_int_equal(gmem_add(&mem, 0, size, ram, NULL), 0);
    struct lx_vmcoreinfo *v = malloc(sizeof(*v));
    assert_int_equal(lx_vmcoreinfo_find(&mem, v, NULL), 1);
    assert_int_equal(v->gpa, 80u << 20);
    assert_string_equal(v->osrelease, "6.1.0-27-amd64");
    unsigned char *vec = malloc(size / 4096);
    assert_int_equal(mincore(ram, size, vec), 0);
    size_t resident = 0;
    for (size_t i = 0; i < size / 4096; i++)
        resident += vec[i] & 1;
    assert_int_equal(resident, 2); /* the two pages written above */
    free(vec);
    free(v);
    munmap(ram, size);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_61),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_find_touches_only_written_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
