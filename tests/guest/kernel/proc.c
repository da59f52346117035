/* Processes (one address space each, loaded from the boot archive) and their threads. All state
 * changes happen under sched_lock. Thread ids and process ids are never reused. */
#include "kernel.h"

#include "guest_abi.h"

spinlock_t sched_lock;
static struct process procs[MAX_PROCS];
static struct thread threads[MAX_THREADS];
static int nprocs, nthreads, procs_done, procs_failed;

static u64 stack_top(int slot)
{
    return USER_STACK_TOP - (u64)slot * USER_STACK_SLOT;
}

struct thread *thread_by_tid(int tid)
{
    return tid >= 1 && tid <= nthreads ? &threads[tid - 1] : NULL;
}

/* A new runnable thread at CPL 3: RBP = 0 ends the user frame-pointer chain at its first frame. */
struct thread *thread_new(struct process *p, u64 rip, u64 rdi, u64 rsi, u64 fs_base)
{
    if (nthreads == MAX_THREADS || (u64)p->stack_slots * USER_STACK_SLOT >= 0x10000000000ull)
        return NULL;
    struct thread *t = &threads[nthreads];
    u64 top = stack_top(p->stack_slots++);
    vm_map_stack(p->cr3, top, config.hugepages);
    memset(t, 0, sizeof(*t));
    t->tid = ++nthreads;
    t->proc = p;
    t->fs_base = fs_base;
    t->tf.rip = rip;
    t->tf.rdi = rdi;
    t->tf.rsi = rsi;
    t->tf.cs = SEL_UCODE;
    t->tf.ss = SEL_UDATA;
    t->tf.rflags = 0x202; /* IF */
    t->tf.rsp = top;      /* 16-byte aligned, as at a process entry (psABI 3.4.1) */
    p->live_threads++;
    t->state = T_RUNNABLE;
    rq_push(t);
    return t;
}

struct process *proc_spawn(const char *name, int instance)
{
    if (nprocs == MAX_PROCS)
        panic("too many processes (max %d)", MAX_PROCS);
    u64 size;
    const u8 *img = archive_find(name, &size);
    if (!img)
        panic("program '%s' is not in the boot archive", name);
    struct process *p = &procs[nprocs];
    p->pid = ++nprocs;
    p->instance = instance;
    size_t n = strlen(name);
    if (n >= PROC_NAME_MAX)
        n = PROC_NAME_MAX - 1;
    memcpy(p->name, name, n);
    p->cr3 = vm_new_pml4();
    u64 entry;
    const char *why;
    if (elf_load(p->cr3, img, size, &entry, &why))
        panic("program '%s': %s", name, why);
    p->state = P_LIVE;
    spin_lock(&sched_lock);
    if (!thread_new(p, entry, 0, 0, 0))
        panic("program '%s': no thread slot", name);
    spin_unlock(&sched_lock);
    kprintf("hvprof-guest: start pid=%d prog=%s instance=%d\n", p->pid, p->name, instance);
    return p;
}

int thread_create_user(struct thread *cur, u64 fn, u64 arg, u64 fs_base, u64 entry)
{
    /* User code must be canonical lower-half; FS base must be canonical (wrmsr would #GP). */
    if (entry >= 0x800000000000ull || fs_base >= 0x800000000000ull)
        return GUEST_EINVAL;
    spin_lock(&sched_lock);
    /* No new threads once exit() has begun: they could outlive the process's last exit line. */
    struct thread *t = cur->proc->exiting ? NULL : thread_new(cur->proc, entry, fn, arg, fs_base);
    spin_unlock(&sched_lock);
    return t ? t->tid : GUEST_EAGAIN;
}

static _Noreturn void all_done(void)
{
    /* The guest TSC does not start at 0 on every KVM (it does not here): measure from the
     * kernel's first instruction. */
    u64 boot_us = (first_user_tsc - kernel_entry_tsc) * 1000000 / tsc_hz;
    kprintf("hvprof-guest: summary programs=%d ok=%d failed=%d cpus=%u "
            "kernel_entry_to_user_us=%lu\n",
            nprocs, nprocs - procs_failed, procs_failed, nr_cpus_online, boot_us);
    u32 status = procs_failed ? GUEST_STATUS_PROG_FAIL : GUEST_STATUS_OK;
    kprintf("hvprof-guest: status %u\n", status);
    guest_exit(status);
}

static void proc_done(struct process *p)
{
    p->state = P_DONE;
    procs_done++;
    if (p->status)
        procs_failed++;
    kprintf("hvprof-guest: exit pid=%d prog=%s status=%d\n", p->pid, p->name, p->status);
    if (procs_done == nprocs) {
        spin_unlock(&sched_lock);
        all_done();
    }
}

void thread_die(struct thread *t)
{
    if (t->state == T_DEAD)
        return;
    t->state = T_DEAD;
    for (int i = 0; i < nthreads; i++) {
        struct thread *w = &threads[i];
        if (w->state == T_BLOCKED && w->join_tid == t->tid) {
            w->tf.rax = 0;
            w->state = T_RUNNABLE;
            rq_push(w);
        }
    }
    if (--t->proc->live_threads == 0)
        proc_done(t->proc);
}

/* The whole process ends: threads waiting in the run queue or blocked die now (the run queue
 * skips dead threads), threads running on other CPUs die at their next kernel entry. */
void proc_exit(struct thread *cur, int status)
{
    struct process *p = cur->proc;
    if (!p->exiting) {
        p->exiting = true;
        p->status = status;
    }
    for (int i = 0; i < nthreads; i++) {
        struct thread *t = &threads[i];
        if (t->proc == p && t != cur && (t->state == T_RUNNABLE || t->state == T_BLOCKED))
            thread_die(t);
    }
    thread_die(cur);
}
