#include "vmm/cpu_setup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

/* SDM vol. 4 (MSR index) numbers. */
#define MSR_IA32_TSC            0x010
#define MSR_IA32_SYSENTER_CS    0x174
#define MSR_IA32_SYSENTER_ESP   0x175
#define MSR_IA32_SYSENTER_EIP   0x176
#define MSR_IA32_MISC_ENABLE    0x1a0
#define MSR_MTRR_DEF_TYPE       0x2ff
#define MSR_STAR                0xc0000081
#define MSR_LSTAR               0xc0000082
#define MSR_CSTAR               0xc0000083
#define MSR_SYSCALL_MASK        0xc0000084
#define MSR_KERNEL_GS_BASE      0xc0000102
#define MISC_ENABLE_FAST_STRING (1ull << 0)
#define MTRR_DEF_TYPE_E         (1ull << 11)
#define MTRR_TYPE_WRBACK        6

const struct cpu_msr_init cpu_boot_msrs[] = {
    /* Without FAST_STRING a CPU with FSRM looks like "FSRM=1, ERMS=0" to Linux (vmm.md 5.6). */
    {MSR_IA32_MISC_ENABLE, MISC_ENABLE_FAST_STRING, "MISC_ENABLE"},
    {MSR_IA32_SYSENTER_CS, 0, "SYSENTER_CS"},
    {MSR_IA32_SYSENTER_ESP, 0, "SYSENTER_ESP"},
    {MSR_IA32_SYSENTER_EIP, 0, "SYSENTER_EIP"},
    {MSR_STAR, 0, "STAR"},
    {MSR_LSTAR, 0, "LSTAR"},
    {MSR_CSTAR, 0, "CSTAR"},
    {MSR_SYSCALL_MASK, 0, "SFMASK"},
    {MSR_KERNEL_GS_BASE, 0, "KERNEL_GS_BASE"},
    {MSR_IA32_TSC, 0, "TSC"},
    /* MTRRs enabled, default type write-back: everything is cacheable RAM. */
    {MSR_MTRR_DEF_TYPE, MTRR_DEF_TYPE_E | MTRR_TYPE_WRBACK, "MTRRdefType"},
};
const unsigned cpu_boot_msrs_count = sizeof(cpu_boot_msrs) / sizeof(cpu_boot_msrs[0]);

struct kvm_cpuid2 *cpu_cpuid_for_vcpu(const struct kvm_cpuid2 *supported, unsigned index,
                                      unsigned nr_vcpus, struct hv_err *err)
{
    size_t bytes = sizeof(*supported) + supported->nent * sizeof(supported->entries[0]);
    struct kvm_cpuid2 *c = malloc(bytes);
    if (!c) {
        hv_errf(err, "out of memory for CPUID");
        return NULL;
    }
    memcpy(c, supported, bytes);
    for (unsigned i = 0; i < c->nent; i++) {
        struct kvm_cpuid_entry2 *e = &c->entries[i];
        switch (e->function) {
        case 1:
            /* SDM CPUID leaf 1: EBX[31:24] initial APIC id (must match the MP table),
             * EBX[23:16] max logical processors (meaningful with HTT = EDX[28]), ECX[31]
             * hypervisor present (Linux then looks for kvmclock). */
            e->ebx = (e->ebx & 0x0000ffffu) | ((index & 0xffu) << 24); /* x2APIC ids: leaf 0BH */
            if (nr_vcpus > 1) {
                e->ebx |= (nr_vcpus > 255 ? 255u : nr_vcpus) << 16;
                e->edx |= 1u << 28;
            }
            e->ecx |= 1u << 31;
            break;
        case 6:
            e->ecx &= ~(1u << 3); /* energy-performance bias MSR is not emulated */
            break;
        case 0xa:
            /* No guest PMU: hvprof samples from outside; a half-described PMU confuses guests. */
            e->eax = e->ebx = e->ecx = e->edx = 0;
            break;
        case 0xb:
        case 0x1f:
            e->edx = index; /* x2APIC id of this logical processor, every sub-leaf */
            break;
        default:
            break;
        }
    }
    return c;
}

static void append_name(char *buf, size_t len, const char *name)
{
    if (!buf || len == 0)
        return;
    size_t used = strnlen(buf, len);
    snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
}

static int set_one_msr(int fd, uint32_t index, uint64_t value)
{
    /* struct kvm_msrs ends in a flexible array: build header + one entry in a raw buffer. */
    union {
        struct kvm_msrs hdr;
        uint8_t bytes[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
    } m;
    memset(&m, 0, sizeof(m));
    m.hdr.nmsrs = 1;
    m.hdr.entries[0].index = index;
    m.hdr.entries[0].data = value;
    /* KVM_SET_MSRS returns the number of MSRs set: 0 means this one was refused (api.rst 4.19). */
    return ioctl(fd, KVM_SET_MSRS, &m) == 1 ? 0 : -1;
}

/* LVT registers in the KVM_GET_LAPIC register page (SDM 11.5.1): LINT0 at 0x350, LINT1 at 0x360,
 * delivery mode bits 10:8. ExtINT = 7 lets the 8259 reach the BSP; NMI = 4 (MP spec 5.1). */
#define APIC_LVT_LINT0   0x350
#define APIC_LVT_LINT1   0x360
#define APIC_MODE_EXTINT 7u
#define APIC_MODE_NMI    4u

static void set_lvt_mode(struct kvm_lapic_state *s, unsigned reg, unsigned mode)
{
    uint32_t v;
    memcpy(&v, &s->regs[reg], 4);
    v = (v & ~0x700u) | (mode << 8);
    memcpy(&s->regs[reg], &v, 4);
}

int cpu_setup_vcpu(int fd, const struct kvm_cpuid2 *cpuid, char *refused, size_t refused_len,
                   struct hv_err *err)
{
    if (refused && refused_len)
        refused[0] = 0;
    if (ioctl(fd, KVM_SET_CPUID2, cpuid) < 0)
        return hv_errf_errno(err, "KVM_SET_CPUID2");
    for (unsigned i = 0; i < cpu_boot_msrs_count; i++) {
        if (set_one_msr(fd, cpu_boot_msrs[i].index, cpu_boot_msrs[i].value) < 0)
            append_name(refused, refused_len, cpu_boot_msrs[i].name);
    }
    struct kvm_lapic_state lapic;
    if (ioctl(fd, KVM_GET_LAPIC, &lapic) < 0)
        return hv_errf_errno(err, "KVM_GET_LAPIC");
    set_lvt_mode(&lapic, APIC_LVT_LINT0, APIC_MODE_EXTINT);
    set_lvt_mode(&lapic, APIC_LVT_LINT1, APIC_MODE_NMI);
    if (ioctl(fd, KVM_SET_LAPIC, &lapic) < 0)
        return hv_errf_errno(err, "KVM_SET_LAPIC");
    /* x87 control word 0x37f (all exceptions masked, 64-bit precision) and MXCSR 0x1f80 (all SSE
     * exceptions masked): the FNINIT/reset values (SDM 8.1.5, 10.2.3.1). */
    struct kvm_fpu fpu;
    memset(&fpu, 0, sizeof(fpu));
    fpu.fcw = 0x37f;
    fpu.mxcsr = 0x1f80;
    if (ioctl(fd, KVM_SET_FPU, &fpu) < 0)
        return hv_errf_errno(err, "KVM_SET_FPU");
    return 0;
}
