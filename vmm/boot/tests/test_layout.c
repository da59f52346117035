/* layout_ram_regions() and e820_build() for several --mem sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/boot/boot.h"
#include "vmm/boot/e820.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void test_regions_small(void **state)
{
    struct ram_region r[2];
    unsigned n = 9;
    struct hv_err err = {0};
    assert_int_equal(layout_ram_regions(512 * MiB, r, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].gpa, 0);
    assert_int_equal(r[0].size, 512 * MiB);
}

static void test_regions_exactly_3g(void **state)
{
    struct ram_region r[2];
    unsigned n;
    struct hv_err err = {0};
    assert_int_equal(layout_ram_regions(3 * GiB, r, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].size, HVPROF_MMIO_GAP_START);
}

static void test_regions_split_above_gap(void **state)
{
    struct ram_region r[2];
    unsigned n;
    struct hv_err err = {0};
    assert_int_equal(layout_ram_regions(5 * GiB, r, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].gpa, 0);
    assert_int_equal(r[0].size, 3 * GiB);
    assert_int_equal(r[1].gpa, 4 * GiB);
    assert_int_equal(r[1].size, 2 * GiB);
}

static void test_regions_reject(void **state)
{
    struct ram_region r[2];
    unsigned n;
    struct hv_err err = {0};
    assert_int_equal(layout_ram_regions(15 * MiB, r, &n, &err), -1);
    assert_non_null(strstr(err.msg, "too small"));
    assert_non_null(strstr(err.msg, "16 MiB"));
    assert_int_equal(layout_ram_regions(0, r, &n, &err), -1);
    assert_int_equal(layout_ram_regions(64 * MiB + 100, r, &n, &err), -1);
    assert_non_null(strstr(err.msg, "4 KiB"));
    assert_int_equal(layout_ram_regions(2ull << 40, r, &n, &err), -1);
    assert_non_null(strstr(err.msg, "too large"));
    assert_int_equal(layout_ram_regions(16 * MiB, r, &n, &err), 0);
}

/* Shared structural checks: sorted, non-overlapping, low KiB RAM, MP table reserved, total RAM. */
static void check_e820(const struct hvprof_e820 *e, unsigned n, uint64_t mem)
{
    uint64_t ram = 0;
    for (unsigned i = 0; i < n; i++) {
        assert_true(e[i].size > 0);
        if (i)
            assert_true(e[i].addr >= e[i - 1].addr + e[i - 1].size);
        if (e[i].type == HVPROF_E820_RAM) {
            ram += e[i].size;
            /* RAM never reaches into the VGA/BIOS hole or the MMIO gap. */
            assert_false(e[i].addr < 0x100000 && e[i].addr + e[i].size > 0xa0000);
            assert_false(e[i].addr < HVPROF_MMIO_GAP_END &&
                         e[i].addr + e[i].size > HVPROF_MMIO_GAP_START);
        }
    }
    assert_int_equal(e[0].addr, 0);
    assert_int_equal(e[0].size, 0x9fc00);
    assert_int_equal(e[0].type, HVPROF_E820_RAM);
    assert_int_equal(e[1].addr, 0x9fc00);
    assert_int_equal(e[1].size, 0x400);
    assert_int_equal(e[1].type, HVPROF_E820_RESERVED);
    assert_int_equal(e[2].addr, 0xe0000);
    assert_int_equal(e[2].size, 0x20000);
    assert_int_equal(e[2].type, HVPROF_E820_RESERVED);
    /* All of --mem is RAM except the MP-table KiB and the 384 KiB VGA/BIOS hole (whose top
     * 128 KiB hold the ACPI tables). */
    assert_int_equal(ram, mem - 0x400 - (0x100000 - 0xa0000));
}

static void test_e820_sizes(void **state)
{
    const uint64_t sizes[] = {16 * MiB, 512 * MiB, 3 * GiB};
    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        struct hvprof_e820 e[HVPROF_E820_MAX];
        unsigned n;
        struct hv_err err = {0};
        assert_int_equal(e820_build(sizes[k], e, &n, &err), 0);
        assert_int_equal(n, 4);
        assert_int_equal(e[3].addr, 0x100000);
        assert_int_equal(e[3].addr + e[3].size, sizes[k]);
        assert_int_equal(e[3].type, HVPROF_E820_RAM);
        check_e820(e, n, sizes[k]);
    }
}

static void test_e820_above_gap(void **state)
{
    struct hvprof_e820 e[HVPROF_E820_MAX];
    unsigned n;
    struct hv_err err = {0};
    uint64_t mem = 3 * GiB + 512 * MiB;
    assert_int_equal(e820_build(mem, e, &n, &err), 0);
    assert_int_equal(n, 5);
    assert_int_equal(e[3].addr + e[3].size, 0xc0000000ull);
    assert_int_equal(e[4].addr, 0x100000000ull);
    assert_int_equal(e[4].size, 512 * MiB);
    assert_int_equal(e[4].type, HVPROF_E820_RAM);
    check_e820(e, n, mem);
}

static void test_e820_rejects_bad_mem(void **state)
{
    struct hvprof_e820 e[HVPROF_E820_MAX];
    unsigned n;
    struct hv_err err = {0};
    assert_int_equal(e820_build(8 * MiB, e, &n, &err), -1);
    assert_non_null(strstr(err.msg, "--mem"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regions_small),
        cmocka_unit_test(test_regions_exactly_3g),
        cmocka_unit_test(test_regions_split_above_gap),
        cmocka_unit_test(test_regions_reject),
        cmocka_unit_test(test_e820_sizes),
        cmocka_unit_test(test_e820_above_gap),
        cmocka_unit_test(test_e820_rejects_bad_mem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
