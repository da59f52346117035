/* vcpu_snapshot: KVM's register structures turned into the profiler's vCPU snapshot. The only
 * place above the VMM's own run loop that asks KVM about a vCPU's state. */
#include <string.h>
#include <sys/ioctl.h>

#include "vmm/vm.h"

#define MSR_LSTAR          0xc0000082u /* SDM Vol. 4, Table 2-2 */
#define MSR_KERNEL_GS_BASE 0xc0000102u

/* Is the vCPU idle: halted in HLT, or an AP still waiting for INIT/SIPI (api.rst 4.38)? */
static int read_halted(struct vcpu *v, bool *halted)
{
    struct kvm_mp_state mp;
    if (ioctl(v->fd, KVM_GET_MP_STATE, &mp) < 0)
        return -1;
    *halted = mp.mp_state != KVM_MP_STATE_RUNNABLE;
    return 0;
}

static int read_msrs(struct vcpu *v, uint64_t *lstar, uint64_t *kernel_gs_base)
{
    /* struct kvm_msrs ends in a flexible array: two entries right behind it (api.rst 4.18). */
    union {
        struct kvm_msrs m;
        uint8_t bytes[sizeof(struct kvm_msrs) + 2 * sizeof(struct kvm_msr_entry)];
    } u;
    memset(&u, 0, sizeof(u));
    u.m.nmsrs = 2;
    u.m.entries[0].index = MSR_LSTAR;
    u.m.entries[1].index = MSR_KERNEL_GS_BASE;
    /* It returns how many MSRs it read, stopping at the first it cannot: LSTAR alone is still
     * worth having (the KASLR slide). */
    int n = ioctl(v->fd, KVM_GET_MSRS, &u.m);
    if (n < 1)
        return -1;
    *lstar = u.m.entries[0].data;
    *kernel_gs_base = n >= 2 ? u.m.entries[1].data : 0;
    return 0;
}

int vcpu_snapshot(struct vcpu *v, struct gw_snapshot *s, unsigned want)
{
    struct kvm_regs r;
    struct kvm_sregs sr;
    if (vcpu_get_regs(v, &r, &sr) < 0)
        return -1;
    *s = (struct gw_snapshot){
        .rip = r.rip,
        .rsp = r.rsp,
        .rbp = r.rbp,
        .rflags = r.rflags,
        .rcx = r.rcx,
        .cr0 = sr.cr0,
        .cr3 = sr.cr3,
        .cr4 = sr.cr4,
        .efer = sr.efer,
        .fs_base = sr.fs.base,
        .gs_base = sr.gs.base,
        .cpl = (uint8_t)(sr.cs.selector & 3),
    };
    if ((want & GW_SNAP_HALTED) && s->cpl == 0 && read_halted(v, &s->halted) == 0)
        s->have |= GW_SNAP_HALTED;
    if ((want & GW_SNAP_MSRS) && read_msrs(v, &s->lstar, &s->kernel_gs_base) == 0)
        s->have |= GW_SNAP_MSRS;
    return 0;
}
