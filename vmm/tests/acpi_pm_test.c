/* ACPI PM registers (vmm/acpi_pm.h): SCI_EN always set, PM1_STS write-1-to-clear, the PM timer's
 * rate and 24-bit wrap, and power-off only for SLP_EN with the \_S5 type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/acpi_pm.h"

static void on_poweroff(void *ctx)
{
    (*(int *)ctx)++;
}

static uint32_t rd(struct acpi_pm *pm, uint16_t port, unsigned size, uint64_t now)
{
    uint8_t b[4] = {0};
    acpi_pm_read(pm, port, b, size, now);
    uint32_t v;
    memcpy(&v, b, 4);
    return v;
}

static void wr16(struct acpi_pm *pm, uint16_t port, uint16_t v)
{
    uint8_t b[2];
    memcpy(b, &v, 2);
    acpi_pm_write(pm, port, b, 2);
}

static void test_pm_timer(void **state)
{
    (void)state;
    struct acpi_pm pm;
    acpi_pm_init(&pm, NULL, NULL);
    assert_int_equal(rd(&pm, 0x608, 4, 0), 0);
    assert_int_equal(rd(&pm, 0x608, 4, 1000000000ull), 3579545u); /* one second */
    /* 24 bits: 2^24 ticks is 4.687 s; 5 s reads 5 * 3579545 - 2^24 */
    assert_int_equal(rd(&pm, 0x608, 4, 5000000000ull), 5u * 3579545u - (1u << 24));
    /* no overflow after days of uptime */
    uint64_t day = 86400ull * 1000000000ull;
    assert_int_equal(rd(&pm, 0x608, 4, day), (uint32_t)((86400ull * 3579545ull) & 0xffffff));
}

static void test_pm1_registers(void **state)
{
    (void)state;
    struct acpi_pm pm;
    int poweroffs = 0;
    acpi_pm_init(&pm, on_poweroff, &poweroffs);
    assert_int_equal(rd(&pm, 0x604, 2, 0), 1); /* SCI_EN */
    wr16(&pm, 0x602, 0x0121);                  /* PM1_EN */
    assert_int_equal(rd(&pm, 0x602, 2, 0), 0x0121);
    pm.pm1_sts = 0x8001;
    wr16(&pm, 0x600, 0x8000); /* write 1 to clear WAK_STS */
    assert_int_equal(rd(&pm, 0x600, 2, 0), 0x0001);
    wr16(&pm, 0x604, 0); /* SCI_EN stays set */
    assert_int_equal(rd(&pm, 0x604, 2, 0), 1);
}

static void test_pm_poweroff(void **state)
{
    (void)state;
    struct acpi_pm pm;
    int poweroffs = 0;
    acpi_pm_init(&pm, on_poweroff, &poweroffs);
    wr16(&pm, 0x604, (uint16_t)(1 | 3u << 10));            /* SLP_TYP 3 without SLP_EN */
    wr16(&pm, 0x604, (uint16_t)(1 | 3u << 10 | 1u << 13)); /* S3: not supported */
    assert_int_equal(poweroffs, 0);
    assert_int_equal(rd(&pm, 0x604, 2, 0) & (1u << 13), 0); /* SLP_EN reads 0 */
    wr16(&pm, 0x604, (uint16_t)(1 | 5u << 10 | 1u << 13));  /* S5 */
    assert_int_equal(poweroffs, 1);
    /* Linux writes the type first, then the same word with SLP_EN (acpi_hw_legacy_sleep):
     * byte-wise writes work too */
    uint8_t lo = 1, hi = (uint8_t)((5u << 10 | 1u << 13) >> 8);
    acpi_pm_write(&pm, 0x604, &lo, 1);
    acpi_pm_write(&pm, 0x605, &hi, 1);
    assert_int_equal(poweroffs, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pm_timer),
        cmocka_unit_test(test_pm1_registers),
        cmocka_unit_test(test_pm_poweroff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
