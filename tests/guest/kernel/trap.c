/* Where every interrupt and exception lands (from trap.S). */
#include "kernel.h"

#include "guest_abi.h"

static const char *const vec_names[32] = {
    "#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", "#09", "#TS",
    "#NP", "#SS", "#GP", "#PF", "#15", "#MF", "#AC", "#MC", "#XM", "#VE", "#CP",
};

static u64 read_cr2(void)
{
    u64 v;
    __asm__ volatile("mov %%cr2, %0" : "=r"(v));
    return v;
}

/* A CPU exception at CPL 3 ends the process (status 128 + vector), never the kernel. */
static void user_fault(struct cpu *c, struct trapframe *tf)
{
    struct thread *t = c->current;
    const char *name = vec_names[tf->vector & 31] ? vec_names[tf->vector & 31] : "#??";
    kprintf("hvprof-guest: pid=%d prog=%s tid=%d killed by %s err=%#lx rip=%#lx rsp=%#lx "
            "cr2=%#lx\n",
            t->proc->pid, t->proc->name, t->tid, name, tf->error, tf->rip, tf->rsp,
            tf->vector == 14 ? read_cr2() : 0);
    spin_lock(&sched_lock);
    proc_exit(t, GUEST_FAULT_STATUS_BASE + (int)tf->vector);
    sched_leave(c, tf);
    spin_unlock(&sched_lock);
}

void trap_dispatch(struct trapframe *tf)
{
    struct cpu *c = this_cpu();
    bool from_user = (tf->cs & 3) == 3;

    if (tf->vector == VEC_TIMER) {
        lapic_eoi();
        c->ticks++;
        if (from_user)
            sched_tick(c, tf);
    } else if (tf->vector == VEC_SPURIOUS) {
        /* SDM Vol. 3A 10.9: no EOI for a spurious interrupt. */
    } else if (!from_user) {
        panic("cpu %u: %s (vector %lu) in the kernel: err=%#lx rip=%#lx rsp=%#lx cr2=%#lx",
              c->index, tf->vector < 32 && vec_names[tf->vector] ? vec_names[tf->vector] : "?",
              tf->vector, tf->error, tf->rip, tf->rsp, read_cr2());
    } else if (tf->vector == VEC_BREAKPOINT) {
        syscall_dispatch(c, tf);
    } else {
        user_fault(c, tf);
    }
    if (from_user)
        sched_user_return(c, tf);
}
