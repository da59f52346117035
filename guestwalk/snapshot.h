/* A stopped vCPU as the profiler sees it: the one input of everything that runs at a sampling
 * exit (identity, unwinding, the record). Filled by vmm/ (vcpu_snapshot) from KVM's registers,
 * or by a test from saved values, so nothing above vmm/ needs a vCPU file descriptor.
 *
 * Fields KVM always returns are always valid. `have` says which of the optional ones were
 * asked for and could be read: MP state is read only at CPL 0 (a user-mode vCPU is running by
 * definition) and MSRs only when an OS layer needs them (each costs an ioctl). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum gw_snap_have {
    GW_SNAP_HALTED = 1u << 0, /* `halted` is valid (KVM_GET_MP_STATE) */
    GW_SNAP_MSRS = 1u << 1,   /* `lstar` is valid, and `kernel_gs_base` (0 if unreadable) */
};

struct gw_snapshot {
    uint64_t rip, rsp, rbp, rflags;
    uint64_t rcx; /* SYSCALL leaves the user RIP here (SDM Vol. 2B, SYSCALL) */
    uint64_t cr0, cr3, cr4, efer;
    uint64_t fs_base, gs_base; /* the segment bases in effect (SDM Vol. 3A §3.4.4) */
    uint64_t kernel_gs_base;   /* IA32_KERNEL_GS_BASE (0xC0000102), swapped in by SWAPGS */
    uint64_t lstar;            /* IA32_LSTAR (0xC0000082): the 64-bit SYSCALL entry point */
    /* The guest kernel's own page-table root when CR3 holds the user half of a Linux PTI pair
     * (guestwalk/pti.h), 0 = CR3 is enough. Not from the VMM: the OS layer that recognised the
     * pair fills it in before kernel-half reads. */
    uint64_t kernel_cr3;
    uint8_t cpl;   /* CS.selector[1:0]: 3 = user, 0 = kernel */
    bool halted;   /* HLT, or an AP waiting for INIT/SIPI (valid with GW_SNAP_HALTED) */
    unsigned have; /* enum gw_snap_have */
};
