/* Processes (one address space each, loaded from the boot archive) and their threads. All state
 * changes happen under sched_lock. Thread ids and process ids are never reused; their slots are
 * (docs/test-guest.md, "Processes that come and go"): a thread's once it is dead and neither on a
 * CPU nor in the run queue, a process's once it ended and, if it was spawned, gave its memory
 * back. A process's page-table root is never reused, so that every process a profiler sees has
 * an address space of its own. */
#include "kernel.h"

#include "guest_abi.h"

spinlock_t sched_lock;
static struct process procs[MAX_PROCS];
static struct thread threads[MAX_THREADS];
static int last_pid, last_tid, procs_started, procs_done, procs_failed;

static u64 stack_top(int slot)
{
    return USER_STACK_TOP - (u64)slot * USER_STACK_SLOT;
}

struct thread *thread_by_tid(int tid)
{
    for (int i = 0; i < MAX_THREADS; i++)
        if (threads[i].state != T_FREE && threads[i].tid == tid)
            return &threads[i];
    return NULL;
}

int thread_last_tid(void)
{
    return last_tid;
}

static bool on_a_cpu(const struct thread *t)
{
    for (int i = 0; i < MAX_CPUS; i++)
        if (cpu_areas[i].cpu.current == t)
            return true;
    return false;
}

/* From where the last search stopped: the slots behind it were taken then (each step is
 * emulated CPL 0 work here). */
static struct thread *free_thread_slot(void)
{
    static int cursor;
    for (int k = 0; k < MAX_THREADS; k++) {
        struct thread *t = &threads[(cursor + k) % MAX_THREADS];
        if (t->state == T_FREE || (t->state == T_DEAD && !t->in_rq && !on_a_cpu(t))) {
            cursor = (cursor + k + 1) % MAX_THREADS;
            return t;
        }
    }
    return NULL;
}

/* A new runnable thread at CPL 3: RBP = 0 ends the user frame-pointer chain at its first frame.
 * Its stack is a free slot of its process's, mapped the first time the slot is used. */
struct thread *thread_new(struct process *p, u64 rip, u64 rdi, u64 rsi, u64 fs_base)
{
    struct thread *t = free_thread_slot();
    if (!t || p->slots_used == ~0ull)
        return NULL;
    int slot = 0;
    while (p->slots_used & (1ull << slot))
        slot++;
    u64 top = stack_top(slot);
    if (!(p->slots_mapped & (1ull << slot))) {
        vm_map_stack(p->cr3, top, config.hugepages);
        p->slots_mapped |= 1ull << slot;
    }
    p->slots_used |= 1ull << slot;
    memset(t, 0, sizeof(*t));
    t->tid = ++last_tid;
    t->proc = p;
    t->fs_base = fs_base;
    t->stack_slot = slot;
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

/* NULL: no slot, or no program of that name (*why says which). The address space is built
 * outside sched_lock (copying is slow emulated CPL 0 work here); the slot is the caller's while
 * it is P_STARTING. */
static struct process *proc_new(const char *name, int instance, bool spawned, const char **why)
{
    u64 size;
    const u8 *img = archive_find(name, &size);
    if (!img)
        return *why = "not in the boot archive", NULL;
    struct process *p = NULL;
    spin_lock(&sched_lock);
    for (int i = 0; i < MAX_PROCS && !p; i++)
        if (procs[i].state == P_FREE || (procs[i].state == P_DONE && !procs[i].waiters))
            p = &procs[i];
    if (p)
        p->state = P_STARTING;
    spin_unlock(&sched_lock);
    if (!p)
        return *why = "too many processes", NULL;
    memset(p, 0, sizeof(*p));
    p->state = P_STARTING;
    p->pid = ++last_pid;
    p->instance = instance;
    p->spawned = spawned;
    size_t n = strlen(name);
    if (n >= PROC_NAME_MAX)
        n = PROC_NAME_MAX - 1;
    memcpy(p->name, name, n);
    p->cr3 = vm_new_pml4();
    u64 entry;
    if (elf_load(p->cr3, img, size, &entry, why, spawned, &p->image_lo, &p->image_hi))
        panic("program '%s': %s", name, *why);
    spin_lock(&sched_lock);
    p->state = P_LIVE;
    struct thread *t = thread_new(p, entry, 0, 0, 0);
    if (t)
        procs_started++;
    else
        p->state = P_DONE; /* its memory back with the next spawn's failure: rare, kept */
    spin_unlock(&sched_lock);
    return t ? p : (*why = "no thread slot", NULL);
}

struct process *proc_spawn(const char *name, int instance)
{
    const char *why = "";
    struct process *p = proc_new(name, instance, false, &why);
    if (!p && !archive_find(name, &(u64){0}))
        panic("program '%s' is not in the boot archive", name);
    if (!p)
        panic("program '%s': %s (max %d processes, %d threads)", name, why, MAX_PROCS,
              MAX_THREADS);
    kprintf("hvprof-guest: start pid=%d prog=%s instance=%d\n", p->pid, p->name, instance);
    return p;
}

long proc_spawn_user(const char *name, int arg)
{
    const char *why = "";
    struct process *p = proc_new(name, arg, true, &why);
    return p ? p->pid : why[0] == 'n' && why[1] == 'o' && why[2] == 't' ? GUEST_EINVAL : GUEST_EAGAIN;
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
            procs_started, procs_started - procs_failed, procs_failed, nr_cpus_online, boot_us);
    u32 status = procs_failed ? GUEST_STATUS_PROG_FAIL : GUEST_STATUS_OK;
    kprintf("hvprof-guest: status %u\n", status);
    guest_exit(status);
}

/* A spawned process's memory back to the pools: its pages (not its program's shared ones),
 * then its page tables. Its root stays (never reused), its user half empty. */
static void proc_free_memory(struct process *p)
{
    vm_unmap_range(p->cr3, p->image_lo, p->image_hi);
    for (int slot = 0; slot < PROC_STACK_SLOTS; slot++)
        if (p->slots_mapped & (1ull << slot))
            vm_unmap_range(p->cr3, stack_top(slot) - USER_STACK_SIZE, stack_top(slot));
    vm_free_tables(p->cr3, p->image_lo, p->image_hi);
    for (int slot = 0; slot < PROC_STACK_SLOTS; slot++)
        if (p->slots_mapped & (1ull << slot))
            vm_free_tables(p->cr3, stack_top(slot) - USER_STACK_SIZE, stack_top(slot));
    p->slots_mapped = 0;
}

static void proc_done(struct process *p)
{
    p->state = P_DONE;
    procs_done++;
    if (p->status)
        procs_failed++;
    /* A spawned process says nothing unless it failed: thousands of them come and go. */
    if (!p->spawned || p->status)
        kprintf("hvprof-guest: exit pid=%d prog=%s status=%d\n", p->pid, p->name, p->status);
    for (int i = 0; i < MAX_THREADS && p->waiters; i++) {
        struct thread *w = &threads[i];
        if (w->state == T_BLOCKED && w->wait_pid == p->pid) {
            w->wait_pid = 0;
            w->tf.rax = (u64)(long)p->status;
            w->state = T_RUNNABLE;
            p->waiters--;
            rq_push(w);
        }
    }
    if (p->spawned)
        proc_free_memory(p);
    if (procs_done == procs_started) {
        spin_unlock(&sched_lock);
        all_done();
    }
}

bool proc_wait(struct thread *cur, int pid, int *status)
{
    for (int i = 0; i < MAX_PROCS; i++) {
        struct process *p = &procs[i];
        if (p->pid != pid || p->state == P_FREE)
            continue;
        if (p->state == P_DONE) {
            *status = p->status;
            return false;
        }
        cur->state = T_BLOCKED;
        cur->wait_pid = pid;
        p->waiters++;
        return true;
    }
    *status = 0;
    return false;
}

void thread_die(struct thread *t)
{
    if (t->state == T_DEAD)
        return;
    /* Killed while blocked (its process exits): it no longer waits for anyone. */
    if (t->state == T_BLOCKED && t->join_tid) {
        struct thread *w = thread_by_tid(t->join_tid);
        if (w && w->joiners)
            w->joiners--;
    }
    for (int i = 0; t->state == T_BLOCKED && t->wait_pid && i < MAX_PROCS; i++)
        if (procs[i].pid == t->wait_pid && procs[i].waiters)
            procs[i].waiters--;
    t->state = T_DEAD;
    t->proc->slots_used &= ~(1ull << t->stack_slot);
    for (int i = 0; i < MAX_THREADS && t->joiners; i++) {
        struct thread *w = &threads[i];
        if (w->state == T_BLOCKED && w->join_tid == t->tid) {
            w->join_tid = 0;
            w->tf.rax = 0;
            w->state = T_RUNNABLE;
            t->joiners--;
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
    for (int i = 0; i < MAX_THREADS && p->live_threads > 1; i++) {
        struct thread *t = &threads[i];
        if (t->proc == p && t != cur && (t->state == T_RUNNABLE || t->state == T_BLOCKED))
            thread_die(t);
    }
    thread_die(cur);
}
