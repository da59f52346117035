#include "vmm/kvm_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int cap(int fd, long c)
{
    int r = ioctl(fd, KVM_CHECK_EXTENSION, c);
    return r < 0 ? 0 : r;
}

/* KVM_GET_SUPPORTED_CPUID answers E2BIG when the array is too small (api.rst 4.46); grow it. */
static struct kvm_cpuid2 *get_supported_cpuid(int fd, struct hv_err *err)
{
    for (unsigned n = 64; n <= 4096; n *= 2) {
        struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
        if (!c) {
            hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for CPUID");
            return NULL;
        }
        c->nent = n;
        if (ioctl(fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
            return c;
        int e = errno;
        free(c);
        if (e != E2BIG) {
            errno = e;
            hv_errf_errno(err, "KVM_GET_SUPPORTED_CPUID");
            return NULL;
        }
    }
    hv_errk(err, HV_ERR_LIMIT, "KVM_GET_SUPPORTED_CPUID: more than 4096 entries");
    return NULL;
}

/* On a PVM host (software virtualization, module kvm_pvm: docs/sources.md §1) guest CPL 0 code is
 * emulated, and the emulator rejects cmpxchg16b and VEX-encoded (AVX) instructions with an
 * emulation failure. A guest kernel that sees CX16 (CPUID.01H:ECX[13]) uses cmpxchg16b (Linux's
 * SLUB does, and stops there); hide it and AVX/AVX2/AVX-512 so guests pick their fallbacks.
 * Hardware KVM keeps the full CPUID (x86-64-v2 distributions require CX16). */
static bool host_is_pvm(void)
{
    return access("/sys/module/kvm_pvm", F_OK) == 0;
}

static void hide_unemulated_features(struct kvm_cpuid2 *c)
{
    for (unsigned i = 0; i < c->nent; i++) {
        struct kvm_cpuid_entry2 *e = &c->entries[i];
        if (e->function == 1)
            e->ecx &= ~((1u << 13) | (1u << 28)); /* CX16, AVX (SDM Vol. 2A, CPUID leaf 01H) */
        else if (e->function == 7 && e->index == 0)
            e->ebx &= ~((1u << 5) | (1u << 16)); /* AVX2, AVX512F (leaf 07H sub-leaf 0) */
    }
}

int kvm_sys_open(struct kvm_sys *k, struct hv_err *err)
{
    memset(k, 0, sizeof(*k));
    k->fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (k->fd < 0) {
        /* Every way of not having KVM is the platform's: callers (and tests) branch on it. */
        int e = errno;
        if (e == EACCES || e == EPERM)
            return hv_errk(err, HV_ERR_PLATFORM,
                           "cannot open /dev/kvm: %s (are you in the kvm group / root?)",
                           strerror(e));
        if (e == ENOENT)
            return hv_errk(err, HV_ERR_PLATFORM,
                           "cannot open /dev/kvm: No such file or directory (KVM is not "
                           "available on this host: no kvm module loaded?)");
        hv_errf_errno(err, "cannot open /dev/kvm");
        return hv_err_as(err, HV_ERR_PLATFORM);
    }
    int version = ioctl(k->fd, KVM_GET_API_VERSION, 0);
    if (version < 0) {
        /* Something else at that path (a file, another driver): it answers no KVM ioctl. */
        int e = errno;
        kvm_sys_close(k);
        errno = e;
        hv_errf_errno(err, "/dev/kvm is not a KVM device (KVM_GET_API_VERSION failed)");
        return hv_err_as(err, HV_ERR_PLATFORM);
    }
    if (version != KVM_API_VERSION) {
        kvm_sys_close(k);
        return hv_errk(err, HV_ERR_PLATFORM, "/dev/kvm speaks API version %d, hvprof needs %d",
                       version, KVM_API_VERSION);
    }
    k->vcpu_mmap_size = ioctl(k->fd, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (k->vcpu_mmap_size < (int)sizeof(struct kvm_run)) {
        hv_errf_errno(err, "KVM_GET_VCPU_MMAP_SIZE");
        kvm_sys_close(k);
        return -1;
    }
    /* api.rst 4.7 / KVM_CAP_MAX_VCPUS: "If the KVM_CAP_MAX_VCPUS does not exist, you should
     * assume that max_vcpus is the same value as returned by KVM_CAP_NR_VCPUS"; "if
     * KVM_CAP_NR_VCPUS does not exist, you should assume that max_vcpus is 4 cpus max." */
    k->max_vcpus = cap(k->fd, KVM_CAP_MAX_VCPUS);
    if (k->max_vcpus <= 0)
        k->max_vcpus = cap(k->fd, KVM_CAP_NR_VCPUS);
    if (k->max_vcpus <= 0)
        k->max_vcpus = 4;
    int max_id = cap(k->fd, KVM_CAP_MAX_VCPU_ID); /* api.rst 4.7: absent = max_vcpus */
    if (max_id > 0 && max_id < k->max_vcpus)
        k->max_vcpus = max_id;
    k->x2apic_api = cap(k->fd, KVM_CAP_X2APIC_API) > 0;
    k->sync_regs = cap(k->fd, KVM_CAP_SYNC_REGS);
    k->immediate_exit = cap(k->fd, KVM_CAP_IMMEDIATE_EXIT) > 0;
    k->pit2 = cap(k->fd, KVM_CAP_PIT2) > 0;
    k->irqchip = cap(k->fd, KVM_CAP_IRQCHIP) > 0;
    k->set_identity_map = cap(k->fd, KVM_CAP_SET_IDENTITY_MAP_ADDR) > 0;
    k->set_tss = cap(k->fd, KVM_CAP_SET_TSS_ADDR) > 0;
    k->vcpu_events = cap(k->fd, KVM_CAP_VCPU_EVENTS) > 0;
    k->xsave = cap(k->fd, KVM_CAP_XSAVE) > 0;
    k->one_reg = cap(k->fd, KVM_CAP_ONE_REG) > 0;
    k->tsc_deadline = cap(k->fd, KVM_CAP_TSC_DEADLINE_TIMER) > 0;
    k->cpuid = get_supported_cpuid(k->fd, err);
    if (!k->cpuid) {
        kvm_sys_close(k);
        return -1;
    }
    k->pvm = host_is_pvm();
    if (k->pvm)
        hide_unemulated_features(k->cpuid);
    return 0;
}

void kvm_sys_close(struct kvm_sys *k)
{
    if (k->fd > 0)
        close(k->fd);
    k->fd = -1;
    free(k->cpuid);
    k->cpuid = NULL;
}
