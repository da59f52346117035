/* Boot CPU: boot info, descriptor tables, LAPIC + TSC calibration, memory, the programs named
 * on the command line (each in its own address space), the APs, then the scheduler. */
#include "kernel.h"

#include "guest_abi.h"

union cpu_area cpu_areas[MAX_CPUS];
u64 kernel_entry_tsc;

#define DEFAULT_PROGS "workload,syscall,threads,recurse,nofp"

/* progs=a,b*3,c: program names from the boot archive, each optionally *N copies; procs=N sets
 * the number of `workload` copies. */
static void spawn_programs(void)
{
    char list[sizeof(config.progs)];
    if (!cmdline_get("progs", list, sizeof(list)))
        memcpy(list, DEFAULT_PROGS, sizeof(DEFAULT_PROGS));
    char *p = list;
    int spawned = 0;
    while (*p) {
        char *name = p;
        while (*p && *p != ',')
            p++;
        if (*p)
            *p++ = '\0';
        int copies = 1;
        for (char *s = name; *s; s++) {
            if (*s == '*') {
                *s = '\0';
                copies = 0;
                for (s++; *s >= '0' && *s <= '9'; s++)
                    copies = copies * 10 + (*s - '0');
                break;
            }
        }
        if (!strncmp(name, "workload", 9))
            copies = (int)cmdline_int("procs", copies == 1 ? 2 : copies);
        for (int i = 0; i < copies && *name; i++, spawned++)
            proc_spawn(name, i);
    }
    if (!spawned)
        panic("no programs to run (progs=%s)", list);
}

void kmain(u64 bootinfo_gpa);
void kmain(u64 bootinfo_gpa)
{
    kernel_entry_tsc = rdtsc();
    struct cpu *c = &cpu_areas[0].cpu;
    c->index = 0;
    cpu_init_tables(c);

    if (bootinfo_gpa >= 0x100000)
        panic("bootinfo at %#lx: outside low memory", bootinfo_gpa);
    struct hvprof_bootinfo bi;
    memcpy(&bi, phys_to_virt(bootinfo_gpa), sizeof(bi));
    if (bi.magic != HVPROF_BOOT_MAGIC)
        panic("bad bootinfo magic %#x", bi.magic);
    if (bi.cmdline_gpa && bi.cmdline_gpa + bi.cmdline_len < DMAP_LIMIT)
        cmdline_parse(phys_to_virt(bi.cmdline_gpa), bi.cmdline_len);
    config.hugepages = (int)cmdline_int("hugepages", 0) != 0;
    config.zero_pages = (int)cmdline_int("zeropages", 0) != 0;
    /* 100 Hz by default: each tick costs emulated CPL 0 instructions on this machine. */
    long hz = cmdline_int("hz", 100);
    config.timer_hz = (u32)(hz < 10 ? 10 : hz > 10000 ? 10000 : hz);

    lapic_init();
    c->apic_id = lapic_id();
    lapic_calibrate_tsc();

    u32 apic_ids[MAX_CPUS];
    int ncpus = mptable_cpus(&bi, apic_ids, MAX_CPUS);
    if (ncpus <= 0) {
        ncpus = 1;
        apic_ids[0] = c->apic_id;
    }
    long want = cmdline_int("cpus", 0);
    if (want > 0 && want < ncpus)
        ncpus = (int)want;
    kprintf("hvprof-guest: boot cpus=%d mem=%luM tsc_khz=%lu hugepages=%d fsgsbase=%d "
            "cmdline=\"%s\"\n",
            ncpus, bi.mem_bytes >> 20, tsc_hz / 1000, config.hugepages, cpu_has_fsgsbase,
            config.cmdline);

    mem_init(&bi);
    if (!bi.initrd_gpa || !bi.initrd_size || bi.initrd_gpa + bi.initrd_size > DMAP_LIMIT)
        panic("no boot archive (initrd at %#lx, %lu bytes)", bi.initrd_gpa, bi.initrd_size);
    archive_init(phys_to_virt(bi.initrd_gpa), bi.initrd_size);
    spawn_programs();

    smp_start_aps(apic_ids, ncpus);
    c->online = 1;
    kprintf("hvprof-guest: entering user mode %lu us after kernel entry (%lu KiB free)\n",
            (rdtsc() - kernel_entry_tsc) * 1000000 / tsc_hz, mem_free_bytes() >> 10);
    lapic_timer_start(config.timer_hz);
    cpu_enter_scheduler();
}
