/* MC146818A real-time clock and CMOS RAM at ports 0x70 (index) / 0x71 (data), as on every PC
 * (MC146818A data sheet; the register map Linux's rtc-cmos and mc146818-lib use):
 *   0x00 seconds  0x02 minutes  0x04 hours  0x06 day of week (1 = Sunday)  0x07 day of month
 *   0x08 month    0x09 year (two digits)    0x32 century (the FADT's CENTURY field points here)
 *   0x0a status A: update-in-progress never set   0x0b status B: 24-hour, BCD
 *   0x0c status C: no interrupt flags               0x0d status D: bit 7, the RAM/time is valid
 * The time is the host's UTC at the moment of the read, in BCD: a guest reads a consistent clock
 * without kvmclock, and rtc-cmos probes cleanly. Writes to the time registers set an offset from
 * the host's time (hwclock --systohc keeps working); every other byte is plain CMOS RAM. There
 * is no alarm or periodic interrupt (IRQ 8 never fires). */
#pragma once

#include <stdint.h>
#include <time.h>

#define RTC_INDEX_PORT 0x70
#define RTC_DATA_PORT  0x71
#define RTC_CENTURY    0x32

struct rtc {
    uint8_t index;
    uint8_t ram[128];
    int64_t offset; /* guest time - host time, seconds (set by writes to the time registers) */
};

void rtc_init(struct rtc *r);
/* Port access; `now` is the host's CLOCK_REALTIME seconds (a parameter, so tests pin it). */
uint8_t rtc_read(struct rtc *r, uint16_t port, time_t now);
void rtc_write(struct rtc *r, uint16_t port, uint8_t value, time_t now);
