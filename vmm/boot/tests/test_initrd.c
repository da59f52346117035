/* initrd_place(): highest page-aligned spot, below initrd_addr_max and the RAM end, clear of the
 * kernel's [load, runtime_start + init_size) window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/boot/initrd.h"

#define MiB (1ull << 20)

static void test_top_of_ram(void **state)
{
    struct initrd_limits lim = {.ram_end = 512 * MiB,
                                .max_addr = 0x7fffffff,
                                .avoid_start = 1 * MiB,
                                .avoid_end = 40 * MiB};
    uint64_t at = 0;
    struct hv_err err = {0};
    assert_int_equal(initrd_place(&lim, 3 * MiB + 123, &at, &err), 0);
    assert_int_equal(at % 4096, 0);
    assert_true(at + 3 * MiB + 123 <= 512 * MiB);
    assert_true(512 * MiB - (at + 3 * MiB + 123) < 4096); /* as high as it goes */
}

static void test_below_initrd_addr_max(void **state)
{
    /* RAM extends past initrd_addr_max: the initrd's last byte must be <= initrd_addr_max. */
    struct initrd_limits lim = {.ram_end = 0xc0000000ull,
                                .max_addr = 0x37ffffff,
                                .avoid_start = 1 * MiB,
                                .avoid_end = 40 * MiB};
    uint64_t at = 0, size = 10 * MiB + 1;
    struct hv_err err = {0};
    assert_int_equal(initrd_place(&lim, size, &at, &err), 0);
    assert_true(at + size - 1 <= 0x37ffffff);
    assert_true(0x37ffffff - (at + size - 1) < 4096);
    assert_int_equal(at % 4096, 0);
}

static void test_clear_of_kernel(void **state)
{
    /* Kernel window reaches almost to the top: the only room is below it. */
    struct initrd_limits lim = {.ram_end = 64 * MiB,
                                .max_addr = 0x7fffffff,
                                .avoid_start = 16 * MiB,
                                .avoid_end = 63 * MiB};
    uint64_t at = 0, size = 2 * MiB;
    struct hv_err err = {0};
    assert_int_equal(initrd_place(&lim, size, &at, &err), 0);
    assert_true(at + size <= 16 * MiB);
    assert_true(at >= 1 * MiB);
    assert_int_equal(at, 14 * MiB);

    /* Fits above the kernel: placed at the top, not below. */
    lim.avoid_end = 40 * MiB;
    assert_int_equal(initrd_place(&lim, size, &at, &err), 0);
    assert_int_equal(at, 62 * MiB);
    assert_true(at >= lim.avoid_end);
}

static void test_does_not_fit(void **state)
{
    struct initrd_limits lim = {
        .ram_end = 64 * MiB, .max_addr = 0x7fffffff, .avoid_start = 1 * MiB, .avoid_end = 60 * MiB};
    uint64_t at = 0;
    struct hv_err err = {0};
    assert_int_equal(initrd_place(&lim, 5 * MiB, &at, &err), -1);
    assert_non_null(strstr(err.msg, "does not fit"));
    assert_int_equal(initrd_place(&lim, 4 * MiB, &at, &err), 0);
    assert_int_equal(at, 60 * MiB);
    /* Larger than all of RAM. */
    assert_int_equal(initrd_place(&lim, 1ull << 40, &at, &err), -1);
    /* initrd_addr_max below the kernel's 1 MiB floor. */
    lim.max_addr = 0xfffff;
    assert_int_equal(initrd_place(&lim, 4096, &at, &err), -1);
    /* Empty. */
    lim.max_addr = 0x7fffffff;
    assert_int_equal(initrd_place(&lim, 0, &at, &err), -1);
    assert_non_null(strstr(err.msg, "empty"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_of_ram),
        cmocka_unit_test(test_below_initrd_addr_max),
        cmocka_unit_test(test_clear_of_kernel),
        cmocka_unit_test(test_does_not_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
