/* Application processors: INIT-SIPI-SIPI (Intel MP spec 1.4, B.4; SDM Vol. 3A 8.4.4.1) into the
 * real-mode trampoline copied to TRAMP_BASE, one AP at a time (the mailbox is shared). */
#include "kernel.h"

extern const u8 tramp_start[], tramp_end[], tramp_cr3[], tramp_stack[], tramp_entry[], tramp_arg[];
extern u64 kernel_pml4[];

u32 nr_cpus_online = 1;

static void mailbox_set(const u8 *field, u64 v)
{
    *(volatile u64 *)phys_to_virt(TRAMP_BASE + (u64)(field - tramp_start)) = v;
}

static _Noreturn void ap_main(struct cpu *c)
{
    cpu_init_tables(c);
    lapic_init();
    c->apic_id = lapic_id();
    __atomic_store_n(&c->online, 1, __ATOMIC_RELEASE);
    lapic_timer_start(config.timer_hz);
    cpu_enter_scheduler();
}

void smp_start_aps(const u32 *apic_ids, int n)
{
    memcpy(phys_to_virt(TRAMP_BASE), tramp_start, (size_t)(tramp_end - tramp_start));
    mailbox_set(tramp_cr3, kimage_to_phys(kernel_pml4));
    mailbox_set(tramp_entry, (u64)ap_main);
    for (int i = 1; i < n && i < MAX_CPUS; i++) {
        struct cpu *c = &cpu_areas[i].cpu;
        c->index = (u32)i;
        mailbox_set(tramp_stack, (u64)c + CPU_AREA_SIZE);
        mailbox_set(tramp_arg, (u64)c);
        lapic_send_init(apic_ids[i]);
        delay_us(10000); /* MP spec B.4: 10 ms after INIT */
        for (int sipi = 0; sipi < 2 && !c->online; sipi++) {
            lapic_send_sipi(apic_ids[i], TRAMP_BASE >> 12);
            /* 200 us per the spec; under emulation the AP needs longer to check in. */
            u64 end = rdtsc() + tsc_hz / 2;
            while (!__atomic_load_n(&c->online, __ATOMIC_ACQUIRE) && rdtsc() < end)
                ;
        }
        if (!c->online)
            panic("cpu %d (apic %u) did not start", i, apic_ids[i]);
        nr_cpus_online++;
        kprintf("hvprof-guest: cpu %d online apic=%u\n", i, c->apic_id);
    }
}
