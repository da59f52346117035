/* Preemptive round-robin over one locked run queue, driven by each CPU's LAPIC timer (100 Hz).
 * A thread's user state lives in its struct thread while it is off-CPU; on-CPU it lives in the
 * trap frame at the top of the CPU's kernel stack. Switching = copy the frame out, copy the next
 * thread's in, load its CR3 and FS base; trap_exit then irets into it. */
#include "kernel.h"

static struct thread *rq_head, *rq_tail;
volatile u64 first_user_tsc;

void rq_push(struct thread *t)
{
    t->next = NULL;
    t->in_rq = true;
    if (rq_tail)
        rq_tail->next = t;
    else
        rq_head = t;
    rq_tail = t;
}

static struct thread *rq_pop(void)
{
    while (rq_head) {
        struct thread *t = rq_head;
        rq_head = t->next;
        if (!rq_head)
            rq_tail = NULL;
        t->in_rq = false;
        if (t->state == T_RUNNABLE)
            return t;
    }
    return NULL;
}

static void save_current(struct cpu *c, const struct trapframe *tf)
{
    struct thread *t = c->current;
    memcpy(&t->tf, tf, sizeof(*tf));
    t->fs_base = rdmsr(MSR_FS_BASE); /* user code may have changed it (wrfsbase) */
}

static void load(struct cpu *c, struct thread *t, struct trapframe *tf)
{
    t->state = T_RUNNING;
    c->current = t;
    memcpy(tf, &t->tf, sizeof(*tf));
    if (c->loaded_cr3 != t->proc->cr3) {
        write_cr3(t->proc->cr3);
        c->loaded_cr3 = t->proc->cr3;
    }
    wrmsr(MSR_FS_BASE, t->fs_base);
    if (!first_user_tsc) {
        u64 zero = 0;
        u64 now = rdtsc();
        __atomic_compare_exchange_n(&first_user_tsc, &zero, now, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    }
}

/* Idle until a thread is runnable, then load it. Called and returns with sched_lock held.
 * Timer interrupts taken during `sti; hlt` (STI's one-instruction shadow makes the pair
 * race-free) come in at CPL 0 and only EOI. */
NOINLINE void cpu_idle_wait(void)
{
    FORCE_FRAME();
    __asm__ volatile("sti; hlt; cli" ::: "memory");
}

static void run_next(struct cpu *c, struct trapframe *tf)
{
    c->current = NULL;
    struct thread *t;
    while (!(t = rq_pop())) {
        spin_unlock(&sched_lock);
        cpu_idle_wait(); /* a profiler sees an idle CPU halted here */
        spin_lock(&sched_lock);
    }
    load(c, t, tf);
}

void sched_first(struct trapframe *tf)
{
    spin_lock(&sched_lock);
    run_next(this_cpu(), tf);
    spin_unlock(&sched_lock);
}

void sched_tick(struct cpu *c, struct trapframe *tf)
{
    spin_lock(&sched_lock);
    if (rq_head) {
        save_current(c, tf);
        c->current->state = T_RUNNABLE;
        rq_push(c->current);
        run_next(c, tf);
    }
    spin_unlock(&sched_lock);
}

void sched_yield(struct cpu *c, struct trapframe *tf)
{
    sched_tick(c, tf);
}

void sched_block(struct cpu *c, struct trapframe *tf)
{
    save_current(c, tf);
    run_next(c, tf);
}

void sched_leave(struct cpu *c, struct trapframe *tf)
{
    run_next(c, tf);
}

/* Last step of every trap from user mode: a thread whose process is exiting does not go back. */
void sched_user_return(struct cpu *c, struct trapframe *tf)
{
    if (!c->current || !c->current->proc->exiting)
        return;
    spin_lock(&sched_lock);
    thread_die(c->current);
    run_next(c, tf);
    spin_unlock(&sched_lock);
}
