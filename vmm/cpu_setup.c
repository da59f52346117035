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
    /* Without FAST_STRING a CPU with FSRM looks like "FSRM=1, ERMS=0" to Linux (SDM Vol. 4 Table
       2-2; docs/sources.md §2). */
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

/* ceil(log2(n)): the APIC ID bits that number n processors (0 for one). */
static unsigned id_bits(unsigned n)
{
    unsigned b = 0;
    while ((1u << b) < n)
        b++;
    return b;
}

static unsigned min_u(unsigned a, unsigned b)
{
    return a < b ? a : b;
}

/* The host's brand string (CPUID 80000002H-80000004H), for a table that lacks it: what
 * `-cpu host` shows in QEMU, and what the guest's /proc/cpuinfo "model name" reads. */
static void host_brand(uint32_t fn, struct kvm_cpuid_entry2 *e)
{
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(fn), "c"(0));
    e->eax = a;
    e->ebx = b;
    e->ecx = c;
    e->edx = d;
}

/* The processor topology every vCPU reports: one socket of `n` cores with one thread each, the
 * core's APIC ID = vCPU index (as in the ACPI MADT and the MP table). KVM's supported table
 * carries the host's topology instead (its own core and thread counts), which a guest with more
 * vCPUs than the host has CPUs turns into nonsense ("Max logical packages: 32" for 64 vCPUs on
 * a 2-CPU host). The leaves, SDM Vol. 2A "CPUID" and AMD APM Vol. 3 Appendix E: */
static void set_topology(struct kvm_cpuid_entry2 *e, unsigned index, unsigned n)
{
    switch (e->function) {
    case 1:
        /* EBX[31:24] initial APIC ID (8 bits: leaf 0BH has the whole x2APIC ID), EBX[23:16]
         * logical processors per package (HTT, EDX[28], says the field is valid). */
        e->ebx = (e->ebx & 0x0000ffffu) | ((index & 0xffu) << 24) | (min_u(n, 255) << 16);
        if (n > 1)
            e->edx |= 1u << 28;
        else
            e->edx &= ~(1u << 28);
        break;
    case 4: /* Intel deterministic cache parameters, one sub-leaf per cache */
        if ((e->eax & 0x1f) == 0)
            break; /* "no more caches" */
        e->eax &= 0x00003fffu;
        e->eax |= (min_u(n, 64) - 1) << 26; /* cores per package - 1 */
        if (((e->eax >> 5) & 7) >= 3)       /* the last level is shared by the package */
            e->eax |= (min_u(n, 4096) - 1) << 14;
        break;
    case 0xb:
    case 0x1f: /* extended topology: SMT level (1 thread), then core level (n cores) */
        e->edx = index;
        if (e->index == 0) {
            e->eax = 0;
            e->ebx = 1;
            e->ecx = (1u << 8) | 0; /* level type 1: SMT */
        } else if (e->index == 1) {
            e->eax = id_bits(n);
            e->ebx = min_u(n, 0xffff);
            e->ecx = (2u << 8) | 1; /* level type 2: core */
        } else {
            e->eax = e->ebx = 0;
            e->ecx = e->index & 0xff; /* level type 0: invalid, the end */
        }
        break;
    case 0x80000008:
        /* AMD: ECX[7:0] NC = cores - 1, ECX[15:12] ApicIdCoreIdSize (Linux takes the core and
         * package numbers from these on AMD, amd_detect_cmp). */
        e->ecx = (e->ecx & ~0xf0ffu) | (min_u(n, 256) - 1) | (id_bits(n) << 12);
        break;
    case 0x8000001e:
        /* AMD topology extensions: extended APIC ID, compute unit = core, one thread, node 0 */
        e->eax = index;
        e->ebx = index & 0xffu;
        e->ecx = 0;
        break;
    default:
        break;
    }
}

struct kvm_cpuid2 *cpu_cpuid_for_vcpu(const struct kvm_cpuid2 *supported, unsigned index,
                                      unsigned nr_vcpus, struct hv_err *err)
{
    size_t bytes = sizeof(*supported) + supported->nent * sizeof(supported->entries[0]);
    struct kvm_cpuid2 *c = malloc(bytes);
    if (!c) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for CPUID");
        return NULL;
    }
    memcpy(c, supported, bytes);
    for (unsigned i = 0; i < c->nent; i++) {
        struct kvm_cpuid_entry2 *e = &c->entries[i];
        set_topology(e, index, nr_vcpus);
        switch (e->function) {
        case 1:
            e->ecx |= 1u << 31; /* hypervisor present: Linux then looks for kvmclock */
            break;
        case 6:
            e->ecx &= ~(1u << 3); /* energy-performance bias MSR is not emulated */
            break;
        case 0xa:
            /* No guest PMU: hvprof samples from outside; a half-described PMU confuses guests. */
            e->eax = e->ebx = e->ecx = e->edx = 0;
            break;
        case 0x80000002:
        case 0x80000003:
        case 0x80000004:
            if (!e->eax && !e->ebx && !e->ecx && !e->edx)
                host_brand(e->function, e);
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
