/* /dev/kvm: open it, check the API version and probe the capabilities the VMM may use. Nothing
 * is assumed from hardware-KVM documentation: docs/sources.md §1 describes a PVM host that lacks
 * VCPU_EVENTS, XSAVE, ONE_REG and others. */
#pragma once

#include <linux/kvm.h>
#include <stdbool.h>

#include "common/err.h"

struct kvm_sys {
    int fd;
    int vcpu_mmap_size;  /* KVM_GET_VCPU_MMAP_SIZE */
    int max_vcpus;       /* KVM_CAP_MAX_VCPUS (falls back to NR_VCPUS, then 4: api.rst 4.7),
                          * at most KVM_CAP_MAX_VCPU_ID (vCPU ids are 0..n-1) */
    bool x2apic_api;     /* KVM_CAP_X2APIC_API: 32-bit APIC ids for more than 255 vCPUs */
    int sync_regs;       /* KVM_CAP_SYNC_REGS mask (KVM_SYNC_X86_*), 0 if absent */
    bool immediate_exit; /* KVM_CAP_IMMEDIATE_EXIT */
    bool pit2, irqchip, set_identity_map, set_tss;
    bool vcpu_events, xsave, one_reg, tsc_deadline;
    bool pvm;                 /* software virtualization (kvm_pvm): CPUID hides CX16 and AVX */
    struct kvm_cpuid2 *cpuid; /* KVM_GET_SUPPORTED_CPUID, heap */
};

/* Open /dev/kvm (one clear line on ENOENT/EACCES), check API version 12, probe everything. */
int kvm_sys_open(struct kvm_sys *k, struct hv_err *err);
void kvm_sys_close(struct kvm_sys *k);
