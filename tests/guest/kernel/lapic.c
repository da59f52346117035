/* Local APIC in xAPIC mode at its default base (SDM Vol. 3A 10.4), through the uncached part
 * of the direct map. Register offsets: SDM Vol. 3A table 10-1. */
#include "kernel.h"

#define LAPIC_ID         0x020
#define LAPIC_TPR        0x080
#define LAPIC_EOI        0x0b0
#define LAPIC_SVR        0x0f0
#define LAPIC_ICR_LO     0x300
#define LAPIC_ICR_HI     0x310
#define LAPIC_LVT_TIMER  0x320
#define LAPIC_LVT_LINT0  0x350
#define LAPIC_LVT_LINT1  0x360
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR  0x390
#define LAPIC_TIMER_DIV  0x3e0

#define LVT_MASKED   (1u << 16)
#define LVT_PERIODIC (1u << 17)
#define TIMER_DIV_16 0x3

/* KVM's in-kernel LAPIC timer counts at 1 GHz (APIC_BUS_CYCLE_NS = 1, the default unless the
 * VMM uses KVM_CAP_X86_APIC_BUS_CYCLES_NS); divided by 16 that is 62.5 MHz. */
#define LAPIC_BUS_HZ   1000000000ull
#define LAPIC_TIMER_HZ (LAPIC_BUS_HZ / 16)

u64 tsc_hz;

static volatile u32 *reg(u32 off)
{
    return (volatile u32 *)phys_to_virt(LAPIC_PHYS + off);
}

u32 lapic_id(void)
{
    return *reg(LAPIC_ID) >> 24;
}

void lapic_eoi(void)
{
    *reg(LAPIC_EOI) = 0;
}

void lapic_init(void)
{
    *reg(LAPIC_TPR) = 0;
    *reg(LAPIC_LVT_LINT0) = LVT_MASKED; /* no legacy PIC interrupts: everything here is polled */
    *reg(LAPIC_SVR) = 0x100 | VEC_SPURIOUS; /* APIC software enable */
    *reg(LAPIC_LVT_TIMER) = LVT_MASKED;
}

void lapic_timer_start(u32 hz)
{
    *reg(LAPIC_TIMER_DIV) = TIMER_DIV_16;
    *reg(LAPIC_LVT_TIMER) = VEC_TIMER | LVT_PERIODIC;
    *reg(LAPIC_TIMER_INIT) = (u32)(LAPIC_TIMER_HZ / hz);
}

/* TSC frequency from a one-shot count-down of the LAPIC timer over ~20 ms: both ends are read
 * back to back (count, then TSC), so the error is one MMIO read (~0.1 ms) per end (< 1 %). */
u64 lapic_calibrate_tsc(void)
{
    const u32 span = (u32)(LAPIC_TIMER_HZ / 50); /* 20 ms */
    *reg(LAPIC_TIMER_DIV) = TIMER_DIV_16;
    *reg(LAPIC_LVT_TIMER) = LVT_MASKED;
    *reg(LAPIC_TIMER_INIT) = 0xffffffffu;
    u32 c0 = *reg(LAPIC_TIMER_CUR);
    u64 t0 = rdtsc();
    u32 c1;
    u64 t1;
    do {
        c1 = *reg(LAPIC_TIMER_CUR);
        t1 = rdtsc();
    } while (c0 - c1 < span);
    *reg(LAPIC_TIMER_INIT) = 0;
    u64 ticks = c0 - c1;
    tsc_hz = (t1 - t0) * (LAPIC_TIMER_HZ / 1000) / ticks * 1000;
    return tsc_hz;
}

void delay_us(u64 us)
{
    u64 end = rdtsc() + us * (tsc_hz / 1000000);
    while (rdtsc() < end)
        ;
}

static void icr_send(u32 apic_id, u32 lo)
{
    *reg(LAPIC_ICR_HI) = apic_id << 24;
    *reg(LAPIC_ICR_LO) = lo;
    for (int i = 0; i < 100000 && (*reg(LAPIC_ICR_LO) & (1u << 12)); i++) /* delivery status */
        ;
}

/* MP spec 1.4 B.4 / SDM Vol. 3A 8.4.4.1: INIT (level assert), then STARTUP with the page number. */
void lapic_send_init(u32 apic_id)
{
    icr_send(apic_id, 0x4500);
}

void lapic_send_sipi(u32 apic_id, u32 vector)
{
    icr_send(apic_id, 0x4600 | vector);
}
