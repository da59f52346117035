/* Guest kernel address-space layout (virtual and physical), shared by C and assembly. */
#pragma once

#define KVBASE     0xffffffff80000000 /* kernel image: KVBASE + phys, covers phys [0, 1 GiB) */
#define DMAP_BASE  0xffff800000000000 /* direct map of phys [0, 4 GiB) (PML4 slot 256) */
#define DMAP_LIMIT 0x100000000        /* 4 GiB: the direct map's size */
#define LAPIC_PHYS 0xfee00000         /* SDM Vol. 3A 10.4.1: default local APIC base */

#define CPU_AREA_SIZE 16384 /* per-CPU struct at the bottom, kernel stack above it */
#define MAX_CPUS      8

#define TRAMP_BASE 0xc000 /* AP trampoline: in the ABI's free low memory, SIPI vector 0x0c */

/* Selectors of the guest's own GDT (per CPU; same layout everywhere). */
#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA 0x1b /* 0x18 | RPL 3 */
#define SEL_UCODE 0x23 /* 0x20 | RPL 3 */
#define SEL_TSS   0x28

/* User address-space layout (each process has its own PML4; slots 256..511 are the kernel's). */
#define USER_STACK_TOP  0x7fffffe00000 /* 2 MiB aligned; main thread's stack ends here */
#define USER_STACK_SLOT 0x400000       /* thread k's stack ends at TOP - k * SLOT */
#define USER_STACK_SIZE 0x10000        /* 64 KiB with 4 KiB pages (2 MiB with hugepages=1) */
#define USER_IMAGE_MIN  0x10000
#define USER_IMAGE_MAX  0x700000000000

/* Trap vectors. */
#define VEC_BREAKPOINT 3    /* system calls (int3), DPL-3 gate */
#define VEC_TIMER      0x20 /* LAPIC timer */
#define VEC_SPURIOUS   0xff
