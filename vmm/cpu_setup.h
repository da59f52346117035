/* Per-vCPU architectural set-up that works on hardware KVM and on this PVM host alike: CPUID,
 * MSRs (each one separately, so a refused MSR is only a warning), LAPIC LINT0/LINT1, FPU. */
#pragma once

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* A heap copy of `supported` patched for vCPU `index` of `nr_vcpus`: the topology of one socket
 * of nr_vcpus single-threaded cores (APIC ID = index in leaves 1, 0BH, 1FH and 8000001EH; core
 * counts in leaves 1, 4, 0BH, 1FH and 80000008H), HYPERVISOR bit (leaf 1 ECX[31]), no
 * architectural PMU (leaf 0xA zero), leaf 6 ECX[3] (EPB) clear, and the host's brand string
 * where KVM's table has none (api.rst 4.46; docs/sources.md §2). */
struct kvm_cpuid2 *cpu_cpuid_for_vcpu(const struct kvm_cpuid2 *supported, unsigned index,
                                      unsigned nr_vcpus, struct hv_err *err);

/* The MSRs hvprof sets, and the values (Firecracker/kvmtool boot-protocol list, docs/sources.md
 * §2). */
struct cpu_msr_init {
    uint32_t index;
    uint64_t value;
    const char *name;
};
extern const struct cpu_msr_init cpu_boot_msrs[];
extern const unsigned cpu_boot_msrs_count;

/* On the vCPU's thread, before the first KVM_RUN: KVM_SET_CPUID2 (must precede KVM_SET_MSRS:
 * KVM decides which MSRs exist from the guest CPUID), the MSRs one by one, LAPIC LINT0=ExtINT /
 * LINT1=NMI, FPU fcw/mxcsr defaults. `refused` receives the names of refused MSRs
 * (comma-separated, bounded); the caller warns once. */
int cpu_setup_vcpu(int vcpu_fd, const struct kvm_cpuid2 *cpuid, char *refused, size_t refused_len,
                   struct hv_err *err);
