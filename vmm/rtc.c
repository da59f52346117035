#include "vmm/rtc.h"

#include <string.h>

/* Register numbers (MC146818A data sheet, "Address Map"). */
enum {
    REG_SEC = 0x00,
    REG_MIN = 0x02,
    REG_HOUR = 0x04,
    REG_WDAY = 0x06,
    REG_MDAY = 0x07,
    REG_MON = 0x08,
    REG_YEAR = 0x09,
    REG_A = 0x0a,
    REG_B = 0x0b,
    REG_C = 0x0c,
    REG_D = 0x0d,
};
#define A_DIVIDER_32K 0x20 /* DV2-0 = 010: 32.768 kHz time base */
#define A_RATE_1024HZ 0x06
#define B_24H         0x02 /* DM (bit 2) clear: BCD */
#define D_VRT         0x80 /* valid RAM and time */

void rtc_init(struct rtc *r)
{
    memset(r, 0, sizeof(*r));
    r->ram[REG_A] = A_DIVIDER_32K | A_RATE_1024HZ;
    r->ram[REG_B] = B_24H;
    r->ram[REG_D] = D_VRT;
}

static uint8_t bcd(unsigned v)
{
    return (uint8_t)((v / 10) << 4 | (v % 10));
}

static unsigned from_bcd(uint8_t v)
{
    return (v >> 4) * 10 + (v & 0xf);
}

static int is_time_reg(uint8_t i)
{
    return i == REG_SEC || i == REG_MIN || i == REG_HOUR || i == REG_WDAY || i == REG_MDAY ||
           i == REG_MON || i == REG_YEAR || i == RTC_CENTURY;
}

uint8_t rtc_read(struct rtc *r, uint16_t port, time_t now)
{
    if (port == RTC_INDEX_PORT)
        return r->index;
    if (!is_time_reg(r->index))
        return r->index == REG_C ? 0 : r->ram[r->index];
    time_t t = now + (time_t)r->offset;
    struct tm tm;
    gmtime_r(&t, &tm);
    switch (r->index) {
    case REG_SEC:
        return bcd((unsigned)tm.tm_sec);
    case REG_MIN:
        return bcd((unsigned)tm.tm_min);
    case REG_HOUR:
        return bcd((unsigned)tm.tm_hour);
    case REG_WDAY:
        return bcd((unsigned)tm.tm_wday + 1);
    case REG_MDAY:
        return bcd((unsigned)tm.tm_mday);
    case REG_MON:
        return bcd((unsigned)tm.tm_mon + 1);
    case REG_YEAR:
        return bcd((unsigned)(tm.tm_year + 1900) % 100);
    default: /* RTC_CENTURY */
        return bcd((unsigned)(tm.tm_year + 1900) / 100);
    }
}

/* A write to one time register moves the guest's clock by the difference in that field. */
static void set_time_field(struct rtc *r, uint8_t reg, uint8_t value, time_t now)
{
    time_t t = now + (time_t)r->offset;
    struct tm tm;
    gmtime_r(&t, &tm);
    unsigned v = from_bcd(value);
    switch (reg) {
    case REG_SEC:
        tm.tm_sec = (int)v;
        break;
    case REG_MIN:
        tm.tm_min = (int)v;
        break;
    case REG_HOUR:
        tm.tm_hour = (int)v;
        break;
    case REG_MDAY:
        tm.tm_mday = (int)v;
        break;
    case REG_MON:
        tm.tm_mon = (int)v - 1;
        break;
    case REG_YEAR:
        tm.tm_year = (tm.tm_year + 1900) / 100 * 100 + (int)v - 1900;
        break;
    case RTC_CENTURY:
        tm.tm_year = (int)v * 100 + (tm.tm_year + 1900) % 100 - 1900;
        break;
    default: /* day of week follows from the date */
        return;
    }
    time_t nt = timegm(&tm);
    if (nt != (time_t)-1)
        r->offset = (int64_t)(nt - now);
}

void rtc_write(struct rtc *r, uint16_t port, uint8_t value, time_t now)
{
    if (port == RTC_INDEX_PORT) {
        r->index = value & 0x7f; /* bit 7 is the NMI mask */
        return;
    }
    if (is_time_reg(r->index)) {
        set_time_field(r, r->index, value, now);
        return;
    }
    switch (r->index) {
    case REG_A:
        r->ram[REG_A] = value & 0x7f; /* UIP (bit 7) is read-only */
        break;
    case REG_B:
        /* Only 24-hour BCD is implemented: keep those bits, accept the interrupt enables. */
        r->ram[REG_B] = (uint8_t)((value & ~0x06) | B_24H);
        break;
    case REG_C:
    case REG_D:
        break; /* read-only */
    default:
        r->ram[r->index] = value;
    }
}
