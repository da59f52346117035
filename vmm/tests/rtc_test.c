/* The MC146818 RTC model (vmm/rtc.h) with a pinned host clock: BCD time fields, status
 * registers, writes that move the clock, CMOS RAM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vmm/rtc.h"

/* 2026-11-22 23:07:49 UTC, a Sunday */
#define NOW 1795388869

static uint8_t reg(struct rtc *r, uint8_t i, time_t now)
{
    rtc_write(r, RTC_INDEX_PORT, i, now);
    return rtc_read(r, RTC_DATA_PORT, now);
}

static void test_rtc_time_in_bcd(void **state)
{
    (void)state;
    struct rtc r;
    rtc_init(&r);
    assert_int_equal(reg(&r, 0x00, NOW), 0x49); /* seconds */
    assert_int_equal(reg(&r, 0x02, NOW), 0x07); /* minutes */
    assert_int_equal(reg(&r, 0x04, NOW), 0x23); /* hours, 24-hour */
    assert_int_equal(reg(&r, 0x06, NOW), 0x01); /* Sunday = 1 */
    assert_int_equal(reg(&r, 0x07, NOW), 0x22);
    assert_int_equal(reg(&r, 0x08, NOW), 0x11);
    assert_int_equal(reg(&r, 0x09, NOW), 0x26);
    assert_int_equal(reg(&r, 0x32, NOW), 0x20); /* century */
    assert_int_equal(reg(&r, 0x00, NOW + 1), 0x50);
}

static void test_rtc_status(void **state)
{
    (void)state;
    struct rtc r;
    rtc_init(&r);
    assert_int_equal(reg(&r, 0x0a, NOW) & 0x80, 0); /* never update-in-progress */
    assert_int_equal(reg(&r, 0x0b, NOW), 0x02);     /* 24-hour, BCD */
    assert_int_equal(reg(&r, 0x0d, NOW), 0x80);     /* valid */
    rtc_write(&r, RTC_INDEX_PORT, 0x0b, NOW);
    rtc_write(&r, RTC_DATA_PORT, 0x04 | 0x10, NOW); /* binary mode refused, UIE kept */
    assert_int_equal(reg(&r, 0x0b, NOW), 0x12);
    rtc_write(&r, RTC_INDEX_PORT, 0x8d, NOW); /* NMI-mask bit ignored in the index */
    assert_int_equal(rtc_read(&r, RTC_INDEX_PORT, NOW), 0x0d);
}

static void test_rtc_write_moves_clock(void **state)
{
    (void)state;
    struct rtc r;
    rtc_init(&r);
    rtc_write(&r, RTC_INDEX_PORT, 0x04, NOW);
    rtc_write(&r, RTC_DATA_PORT, 0x21, NOW); /* hours 23 -> 21 */
    assert_int_equal(reg(&r, 0x04, NOW), 0x21);
    assert_int_equal(reg(&r, 0x04, NOW + 3600), 0x22);
    rtc_write(&r, RTC_INDEX_PORT, 0x09, NOW);
    rtc_write(&r, RTC_DATA_PORT, 0x30, NOW); /* year 2030 */
    assert_int_equal(reg(&r, 0x09, NOW), 0x30);
    assert_int_equal(reg(&r, 0x07, NOW), 0x22);
}

static void test_rtc_cmos_ram(void **state)
{
    (void)state;
    struct rtc r;
    rtc_init(&r);
    rtc_write(&r, RTC_INDEX_PORT, 0x40, NOW);
    rtc_write(&r, RTC_DATA_PORT, 0xa5, NOW);
    assert_int_equal(reg(&r, 0x40, NOW), 0xa5);
    assert_int_equal(reg(&r, 0x0c, NOW), 0); /* no interrupt flags */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rtc_time_in_bcd),
        cmocka_unit_test(test_rtc_status),
        cmocka_unit_test(test_rtc_write_moves_clock),
        cmocka_unit_test(test_rtc_cmos_ram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
