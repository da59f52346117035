#include "guestos/linux/threads.h"

#include <stdio.h>
#include <string.h>

#include "guestos/linux/orc_unwind.h"
#include "guestos/linux/task.h"

static bool member(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t *off,
                   uint64_t want)
{
    uint64_t size;
    return lx_btf_member(b, sid, path, off, &size) && (!want || size == want);
}

bool lx_thread_layout_of(const struct lx_kernel *k, struct lx_thread_layout *out, char *why,
                         size_t why_len)
{
    memset(out, 0, sizeof(*out));
    const struct lx_btf *b = &k->btf;
    uint32_t task = k->btf_types ? lx_btf_find_struct(b, "task_struct") : 0,
             sig = k->btf_types ? lx_btf_find_struct(b, "signal_struct") : 0;
    if (!task || !sig || !k->task.known) {
        snprintf(why, why_len, "BTF: no task_struct or signal_struct");
        return false;
    }
    /* 5.14 renamed `volatile long state` to `unsigned int __state`. */
    if (!lx_btf_member(b, task, "__state", &out->state, &out->state_size) &&
        !lx_btf_member(b, task, "state", &out->state, &out->state_size)) {
        snprintf(why, why_len, "BTF: no task_struct.__state or .state");
        return false;
    }
    if (out->state_size != 4 && out->state_size != 8) {
        snprintf(why, why_len, "BTF: task_struct's state is %llu bytes",
                 (unsigned long long)out->state_size);
        return false;
    }
    if (!member(b, task, "exit_state", &out->exit_state, 4) ||
        !member(b, task, "se.sum_exec_runtime", &out->exec_ns, 8) ||
        !member(b, task, "nvcsw", &out->nvcsw, 8) || !member(b, task, "nivcsw", &out->nivcsw, 8) ||
        !member(b, task, "signal", &out->signal, 8) ||
        !member(b, task, "thread_node", &out->thread_node, 16) ||
        !member(b, sig, "thread_head", &out->thread_head, 16)) {
        snprintf(why, why_len,
                 "BTF: no task_struct.exit_state, se.sum_exec_runtime, nvcsw, nivcsw, signal or "
                 "thread_node, or no signal_struct.thread_head");
        return false;
    }
    out->has_on_cpu = member(b, task, "on_cpu", &out->on_cpu, 4);
    /* The CPU moved into thread_info in 5.16 (CONFIG_THREAD_INFO_IN_TASK). */
    out->has_cpu =
        member(b, task, "thread_info.cpu", &out->cpu, 4) || member(b, task, "cpu", &out->cpu, 4);
    out->known = true;
    return true;
}

bool lx_threads_init(struct lx_threads *t, const struct lx_kernel *k, struct lx_kread *kr,
                     const struct lx_proc_layout *pl, struct lx_switch_layout *sl, char *why,
                     size_t why_len)
{
    *t = (struct lx_threads){.k = k, .kr = kr, .pl = pl, .sl = sl};
    if (!pl->known) {
        snprintf(why, why_len, "no task list");
        return false;
    }
    if (!lx_thread_layout_of(k, &t->tl, why, why_len))
        return false;
    char ignored[160];
    if (!lx_switch_layout_of(k, sl, ignored, sizeof(ignored)))
        sl->known = false;
    t->la57 = kr->mmu.va_bits == 57;
    t->kernel_root = kr->mmu.root_kernel;
    return true;
}

enum guestos_thread_state lx_thread_state(uint32_t state, uint32_t exit_state)
{
    uint32_t report = (state | exit_state) & LX_TASK_REPORT;
    if ((state & LX_TASK_IDLE) == LX_TASK_IDLE)
        return GUESTOS_THREAD_IDLE;
    if (state & LX_TASK_RTLOCK_WAIT)
        return GUESTOS_THREAD_DISK_SLEEP;
    /* fls(): the highest bit reported, 1-based; 0 for TASK_RUNNING. */
    unsigned i = 0;
    while (report) {
        i++;
        report >>= 1;
    }
    return (enum guestos_thread_state)i;
}

static bool kernel_pointer(uint64_t p)
{
    return (p >> 56) == 0xff && (p & 7) == 0;
}

static bool rd(struct lx_threads *t, uint64_t va, void *dst, size_t len)
{
    return lx_kread(t->kr, va, dst, len);
}

/* One thread: false when it cannot be read (it is left out: it may be exiting). */
static bool read_thread(struct lx_threads *t, uint64_t task, const char *leader_comm,
                        struct guestos_thread *out)
{
    const struct lx_task_layout *l = &t->k->task;
    const struct lx_thread_layout *tl = &t->tl;
    struct guestos_thread th = {.handle = task, .cpu = UINT32_MAX, .kernel_root = t->kernel_root};
    int32_t pid, tgid;
    uint32_t flags, exit_state, on_cpu = 0, cpu = 0;
    uint64_t state = 0, nv, niv;
    if (!rd(t, task + l->pid, &pid, 4) || !rd(t, task + l->tgid, &tgid, 4) ||
        !rd(t, task + l->flags, &flags, 4) || !rd(t, task + tl->state, &state, tl->state_size) ||
        !rd(t, task + tl->exit_state, &exit_state, 4) ||
        !rd(t, task + tl->exec_ns, &th.cpu_ns, 8) || !rd(t, task + tl->nvcsw, &nv, 8) ||
        !rd(t, task + tl->nivcsw, &niv, 8) ||
        (tl->has_on_cpu && !rd(t, task + tl->on_cpu, &on_cpu, 4)) ||
        (tl->has_cpu && !rd(t, task + tl->cpu, &cpu, 4)) ||
        !rd(t, task + l->comm, th.task.comm, GUESTOS_COMM_LEN))
        return false;
    if (pid <= 0 || pid > LX_PID_MAX_LIMIT || tgid <= 0 || tgid > LX_PID_MAX_LIMIT)
        return false;
    if (l->comm_size < GUESTOS_COMM_LEN)
        memset(th.task.comm + l->comm_size, 0, GUESTOS_COMM_LEN - l->comm_size);
    lx_comm_clean(th.task.comm);
    th.state = lx_thread_state((uint32_t)state, exit_state);
    th.on_cpu = on_cpu != 0;
    th.cpu = tl->has_cpu && cpu < LX_MAX_CPUS ? cpu : UINT32_MAX;
    th.switches = nv + niv;
    if (t->sl->known)
        (void)rd(t, task + t->sl->thread_sp, &th.resume_sp, 8);
    th.task.known = true;
    th.task.pid = tgid;
    th.task.tid = pid;
    th.task.kthread = (flags & LX_PF_KTHREAD) != 0;
    memcpy(th.task.process, leader_comm ? leader_comm : th.task.comm, GUESTOS_COMM_LEN);
    if (l->stack &&
        (!rd(t, task + l->stack, &th.task.kstack, 8) || !kernel_pointer(th.task.kstack)))
        th.task.kstack = 0;
    if (t->cgroups &&
        (!rd(t, task + t->cgroups, &th.task.group, 8) || !kernel_pointer(th.task.group)))
        th.task.group = 0;
    th.task.handle = task;
    uint64_t root = 0, mm;
    if (!th.task.kthread) {
        root = lx_task_root(t->kr, l, task, &mm);
        /* A user task past exit_mm() is as the exit path sees it: its own process, no
         * address space. */
    }
    th.thread_key = (uint64_t)pid;
    th.proc_key = root ? lx_process_key(tgid, root) : GUESTOS_KEY_NOT_ROOT | (uint64_t)tgid;
    th.as = (struct guestos_as){
        .cr0 = PT_CR0_PE | PT_CR0_PG,
        .root = root,
        .cr4 = PT_CR4_PAE | (t->la57 ? PT_CR4_LA57 : 0),
        .efer = PT_EFER_LME | PT_EFER_LMA | PT_EFER_NXE,
        .pid = tgid,
    };
    *out = th;
    return true;
}

struct each {
    struct lx_threads *t;
    guestos_thread_fn fn;
    void *ctx;
    size_t max, given;
    unsigned steps;
    int stop;
};

/* A thread group: its leader's name, then each thread on signal->thread_head. */
static int group(void *ctx, uint64_t leader)
{
    struct each *e = ctx;
    struct lx_threads *t = e->t;
    const struct lx_thread_layout *tl = &t->tl;
    if (++e->steps > LX_MAX_VISIT_STEPS)
        return 1;
    char comm[GUESTOS_COMM_LEN];
    uint64_t sig, at;
    if (!rd(t, leader + t->k->task.comm, comm, sizeof(comm)) ||
        !rd(t, leader + tl->signal, &sig, 8))
        return 0; /* an exiting leader: its threads are going too */
    if (t->k->task.comm_size < GUESTOS_COMM_LEN)
        memset(comm + t->k->task.comm_size, 0, GUESTOS_COMM_LEN - t->k->task.comm_size);
    lx_comm_clean(comm);
    if (!kernel_pointer(sig))
        return 0;
    uint64_t head = sig + tl->thread_head;
    if (!rd(t, head, &at, 8))
        return 0;
    for (unsigned n = 0; at != head && n < LX_MAX_THREADS_PER_GROUP; n++) {
        if (!kernel_pointer(at) || at < tl->thread_node)
            return 0; /* a list changing under us, or not a list: the next visit */
        if (e->given >= e->max || ++e->steps > LX_MAX_VISIT_STEPS)
            return 1;
        struct guestos_thread th;
        uint64_t task = at - tl->thread_node;
        if (read_thread(t, task, comm, &th)) {
            e->given++;
            if ((e->stop = e->fn(e->ctx, &th)) != 0)
                return 1;
        }
        if (!rd(t, at, &at, 8)) /* thread_node.next */
            return 0;
    }
    return 0;
}

long lx_threads_each(struct lx_threads *t, guestos_thread_fn fn, void *ctx, size_t max, char *why,
                     size_t why_len)
{
    if (!t->tl.known || !t->pl->known) {
        snprintf(why, why_len, "the thread layout is not known");
        return -1;
    }
    struct each e = {.t = t, .fn = fn, .ctx = ctx, .max = max};
    if (lx_tasks_each(t->kr, t->pl, t->k->sym.init_task, group, &e) < 0) {
        snprintf(why, why_len, "the task list (init_task.tasks) cannot be read");
        return -1;
    }
    return (long)e.given;
}

bool lx_thread_regs(struct lx_threads *t, const struct guestos_thread *th, struct gw_regs *kernel,
                    struct gw_regs *user)
{
    *user = (struct gw_regs){0};
    if (!lx_task_switched_regs(t->kr, t->sl, th->handle, kernel))
        return false;
    if (th->task.kthread || !th->as.root || !th->task.kstack)
        return true;
    /* struct pt_regs at the top of the stack: THREAD_SIZE is 16 KiB (32 KiB with KASAN,
     * arch/x86/include/asm/page_64_types.h), less TOP_OF_KERNEL_STACK_PADDING (16 bytes with
     * FRED from 6.9, else 0; arch/x86/include/asm/thread_info.h). The one that holds user-mode
     * selectors is it. */
    static const uint64_t tops[] = {16384, 16384 - 16, 32768, 32768 - 16};
    for (unsigned i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
        uint8_t r[LX_PT_SIZE];
        uint64_t ip, cs, sp, bp, ss;
        if (!rd(t, th->task.kstack + tops[i] - LX_PT_SIZE, r, sizeof(r)))
            continue;
        memcpy(&ip, r + LX_PT_IP, 8);
        memcpy(&cs, r + LX_PT_CS, 8);
        memcpy(&sp, r + LX_PT_SP, 8);
        memcpy(&ss, r + LX_PT_SP + 8, 8);
        memcpy(&bp, r + LX_PT_BP, 8);
        /* FRED keeps more in the selector words' upper bits (csx, ssx): the selector is the
         * low 16. */
        if ((cs & 0xffff) != LX_USER_CS || (ss & 0xffff) != LX_USER_DS || !ip || (ip >> 56) ||
            (sp >> 56))
            continue;
        *user = (struct gw_regs){.rip = ip, .rsp = sp, .rbp = bp, .user = true};
        return true;
    }
    return true;
}

bool lx_thread_reread(struct lx_threads *t, const struct guestos_thread *th,
                      struct guestos_thread *now)
{
    lx_kread_forget(t->kr);
    return read_thread(t, th->handle, th->task.process, now) && now->task.tid == th->task.tid &&
           now->task.pid == th->task.pid;
}

bool lx_thread_unchanged(struct lx_threads *t, const struct guestos_thread *th)
{
    const struct lx_thread_layout *tl = &t->tl;
    uint64_t nv, niv, sp = 0;
    uint32_t on_cpu = 0;
    lx_kread_forget(t->kr);
    if (!rd(t, th->handle + tl->nvcsw, &nv, 8) || !rd(t, th->handle + tl->nivcsw, &niv, 8) ||
        (tl->has_on_cpu && !rd(t, th->handle + tl->on_cpu, &on_cpu, 4)) ||
        (t->sl->known && !rd(t, th->handle + t->sl->thread_sp, &sp, 8)))
        return false;
    return nv + niv == th->switches && !on_cpu && sp == th->resume_sp;
}
