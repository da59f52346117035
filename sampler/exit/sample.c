/* One stop of one vCPU turned into records: identity, continuation completion, the user and
 * kernel walks, the sample record. Everything here reads only the
 * vCPU snapshot and guest memory (through the walker), so tests drive it with saved snapshots
 * and a synthetic guest (sampler/tests/). Exit-path rules: no allocation, no locks, no system
 * calls but clock_gettime (vDSO). */
#include "guestwalk/cfi_unwind.h"
#include "sampler/exit/continuation.h"
#include "sampler/exit/grace.h"
#include "sampler/exit/core.h"
#include "sampler/exit/runtime_stack.h"
#include "sampler/exit/stack_copy.h"

/* The walk word stores guestwalk's leaf cases as they are (schema/schema.h, enum hvfxt_caller). */
_Static_assert((int)GW_LEAF_ENTRY == (int)HVFXT_CALLER_ENTRY &&
                   (int)GW_LEAF_ENTRY_ENDBR == (int)HVFXT_CALLER_ENTRY_ENDBR &&
                   (int)GW_LEAF_AFTER_PUSH == (int)HVFXT_CALLER_AFTER_PUSH &&
                   (int)GW_LEAF_RET == (int)HVFXT_CALLER_RET &&
                   (int)GW_LEAF_AFTER_POP == (int)HVFXT_CALLER_AFTER_POP &&
                   (int)GW_LEAF_FRAMELESS == (int)HVFXT_CALLER_FRAMELESS &&
                   (int)GW_LEAF_ORC == (int)HVFXT_CALLER_ORC &&
                   (int)GW_LEAF_CFI == (int)HVFXT_CALLER_CFI,
               "caller methods out of step with enum gw_leaf");

unsigned exit_stop_code(const struct gw_stack *st)
{
    switch (st->stop) {
    case GW_STOP_CHAIN_END:
        return HVFXT_STOP_END;
    case GW_STOP_DEPTH_CAP:
        return HVFXT_STOP_MAX_DEPTH;
    case GW_STOP_UNMAPPED:
        return HVFXT_STOP_UNMAPPED;
    case GW_STOP_INVALID_FRAME:
        return st->bad == GW_BAD_NOT_INCREASING ? HVFXT_STOP_NOT_UPWARD : HVFXT_STOP_BAD_FP;
    case GW_STOP_NONE:
        return HVFXT_STOP_NONE;
    case GW_STOP_NO_UNWIND_INFO:
        return HVFXT_STOP_NO_UNWIND_INFO;
    case GW_STOP_UNWIND_RULE:
        return HVFXT_STOP_UNWIND_RULE;
    default:
        return HVFXT_STOP_ERROR;
    }
}

static void walk(struct exit_vcpu *sv, struct gw_stack *st)
{
    guestos_unwind(sv->core->os, &sv->walker, st);
    if (st->stop != GW_STOP_CHAIN_END && st->stop != GW_STOP_DEPTH_CAP)
        sv->st.walk_fail++;
}

/* A user walk's use of DWARF CFI, counted for the summary. */
static void count_cfi(struct exit_vcpu *sv, const struct gw_stack *st)
{
    sv->st.cfi_walks += st->cfi_frames > 0;
    sv->st.cfi_frames += st->cfi_frames;
    sv->st.cfi_gaps += st->cfi_gap;
    sv->st.cfi_rule_stops += st->stop == GW_STOP_UNWIND_RULE;
}

/* The walk word of a sample or completion with this user walk. */
static uint64_t user_walk_word(unsigned kstop, unsigned kcaller, const struct gw_stack *u)
{
    return hvfxt_walk_word(kstop, exit_stop_code(u), 0, 0) | hvfxt_walk_callers(kcaller, u->leaf) |
           hvfxt_walk_user_cfi(u->cfi_frames);
}

/* A stop taken for an exit event: the record says which exit and its host time. */
static void mark_event(const struct exit_vcpu *sv, struct hvfxt_sample *smp)
{
    smp->fields |= HVFXT_SF_EXIT | HVFXT_SF_EXIT_NS;
    smp->exit_site = sv->event.site;
    smp->exit_ns = sv->event.host_ns;
}

/* This stop's runtime frames (exit_take read them), on its sample. */
static void add_runtime(const struct exit_vcpu *sv, struct hvfxt_sample *smp)
{
    if (!sv->n_rt)
        return;
    smp->fields |= HVFXT_SF_RUNTIME_STACK;
    smp->rt_stack = sv->rt;
    smp->n_rt = sv->n_rt;
}

/* This stop's control group (exit_take looked it up), on its sample. */
static void add_group(const struct exit_vcpu *sv, struct hvfxt_sample *smp)
{
    if (!sv->group)
        return;
    smp->fields |= HVFXT_SF_CGROUP;
    smp->cgroup = hvfxt_koid_group(sv->group);
}

/* A user walk that may be done again later from a copy of its stack: whose, with which map,
 * from where, and what it found now. */
struct copy_request {
    uint64_t now;
    uint32_t proc, thread;
    uint64_t pid, tid;
    const struct gw_cfi_map *map;
    const struct gw_regs *regs;
    const struct gw_stack *st;
    uint64_t walk; /* its walk word */
    uint64_t id;   /* the continuation the copy completes, 0: a fresh one */
};

/* Copy the user stack just walked for a walk later, when the walk met code the process's map
 * has no tables for (stack_copy.h); the copy completes continuation r->id (0: a fresh one).
 * Returns that id, or 0 with no copy taken. */
static uint64_t copy_for_later(struct exit_vcpu *sv, const struct copy_request *r)
{
    uint64_t now = r->now, id = r->id;
    uint32_t proc = r->proc;
    const struct gw_cfi_map *map = r->map;
    const struct gw_stack *st = r->st;
    if (!exit_copy_wanted(sv, map, st))
        return 0;
    struct exit_stack_copy *c = exit_copy_take(sv, proc, map, r->regs, st, r->walk);
    if (!c)
        return 0;
    c->id = id ? id : exit_cont_fresh(sv);
    /* A continuation of its own: completed (by the drain thread), and counted so, as a handed
     * off thread continuation is (exit_cont_handed_off). */
    if (!id)
        sv->st.completed++;
    c->thread = r->thread;
    c->pid = r->pid;
    c->tid = r->tid;
    c->ts = now;
    exit_copy_commit(sv);
    /* Its code has no tables yet: ask the drain thread to look soon
     * (sampler/sources/user_modules/user_modules.c). */
    id_proc_unknown_code(sv->core->ids, proc, now);
    return c->id;
}

/* A user-mode stop: complete the thread's open continuation with this user stack, and on a
 * due tick write the sample (one walk for both records). A walk that met code without tables
 * is done again later from a copy of the stack (stack_copy.h): then the completion and the
 * sample's own user stack come from that walk, through one continuation. Returns the time the
 * walk and the completion were done (the stage times' walk/push split). */
static uint64_t take_user(struct exit_vcpu *sv, uint64_t now, bool due, uint32_t proc,
                          uint32_t thread, uint64_t pid, uint64_t tid)
{
    struct exit_core *core = sv->core;
    id_thread_mark_user(core->ids, thread);
    uint64_t cont = exit_cont_take(sv, thread);
    struct gw_stack ustack = GW_STACK_INIT(sv->frames_u, core->cfg.max_depth);
    uint64_t later = 0;
    if (cont || due) {
        const struct gw_cfi_map *map = exit_cfi_map(core->cfi, proc);
        sv->walker.cfi = map;
        walk(sv, &ustack);
        count_cfi(sv, &ustack);
        /* Code no look has found yet: ask the drain thread to look soon
         * (sampler/sources/user_modules/user_modules.c). */
        if (due && !gw_cfi_map_find(map, sv->walker.snap.rip))
            id_proc_unknown_code(core->ids, proc, now);
        struct gw_regs regs = gw_regs_of(&sv->walker.snap);
        if (!sv->event.on) /* an exit event's stacks are whole in its record (docs/exits.md) */
            later = copy_for_later(
                sv, &(struct copy_request){now, proc, thread, pid, tid, map, &regs, &ustack,
                                           user_walk_word(HVFXT_STOP_NONE, 0, &ustack), cont});
    }
    if (cont && later)
        exit_cont_handed_off(sv, cont);
    else if (cont)
        exit_cont_complete(sv, cont, pid, tid, now, &ustack,
                           user_walk_word(HVFXT_STOP_NONE, 0, &ustack));
    if (sv->npend)
        exit_conts_expire(sv, now);
    uint64_t walked = hv_now_ns();
    if (!due)
        return walked;
    struct hvfxt_sample smp = {
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_PC | HVFXT_SF_WALK | HVFXT_SF_USER_STACK,
        .pid = pid,
        .tid = tid,
        .ts = now,
        .vcpu = sv->index,
        .cpl = 3,
        .pc = sv->walker.snap.rip,
        .user_stack = ustack.pc,
        .n_user = ustack.count,
        .walk = user_walk_word(HVFXT_STOP_NONE, 0, &ustack),
    };
    if (later) {
        /* The exact PC now, the callers from the copy's walk (docs/fxt-samples.md). */
        smp.fields |= HVFXT_SF_CONTINUATION;
        smp.continuation = later;
        smp.n_user = 1;
        smp.walk = hvfxt_walk_word(HVFXT_STOP_NONE, HVFXT_STOP_DEFERRED, 0, 0);
    }
    add_runtime(sv, &smp);
    add_group(sv, &smp);
    if (sv->event.on)
        mark_event(sv, &smp);
    else
        sv->st.user++;
    exit_emit(sv, &smp);
    return walked;
}

/* A kernel-mode tick: the kernel half is always mapped, so walk it now. The user stack is walked
 * now too from the registers the thread entered the kernel with, when the OS layer knows them
 * (Linux ORC, docs/orc.md); else it waits for the return to user mode (a continuation). An idle
 * (halted) vCPU never returns to a user thread from here, so it opens none; in cpu mode it is
 * not sampled at all. */
static void take_kernel(struct exit_vcpu *sv, const struct gw_snapshot *snap, uint64_t now,
                        uint32_t proc, uint32_t thread, uint64_t pid, uint64_t tid,
                        const struct guestos_ident *who)
{
    struct exit_core *core = sv->core;
    bool halted = (snap->have & GW_SNAP_HALTED) && snap->halted;
    if (halted && core->cfg.mode == SAMPLER_MODE_CPU) {
        sv->st.idle++;
        return;
    }
    struct gw_stack kstack = GW_STACK_INIT(sv->frames_k, core->cfg.max_depth);
    walk(sv, &kstack);
    /* The thread's own user registers at kernel entry (the walk's, or where the OS keeps them)
     * show a user thread, even at its first sample. */
    bool entry =
        !halted && who->as_root && guestos_user_entry(core->os, &sv->os, &sv->walker, who, &kstack);
    if (entry)
        id_thread_mark_user(core->ids, thread);
    bool user_thread = !halted && id_thread_is_user(core->ids, thread);
    /* The kernel walk reached the registers the thread entered the kernel with: its user stack
     * starts at that exact PC, and its pages were in use a moment ago, so walk it now. Only a
     * walk that met a page not present falls back to the continuation (the page may be back
     * when the thread is); any other end would be the same later (docs/orc.md). */
    struct gw_stack ustack = GW_STACK_INIT(sv->frames_u, core->cfg.max_depth);
    bool user_now = false;
    uint64_t later = 0; /* the continuation a copy of the user stack completes */
    if (user_thread && entry) {
        sv->st.user_entry++;
        /* No stack pointer: only the PC is known (Linux: in the system-call entry before its
         * pt_regs are pushed); the rest of the stack through the continuation. */
        if (!core->cfg.defer_user_stacks && kstack.user_regs.rsp) {
            if (who->as_root != who->cr3_root) { /* mid-switch: CR3 is the next task's */
                struct gw_snapshot own = *snap;
                own.cr3 = who->as_root;
                gw_walker_begin(&sv->walker, &own);
            }
            sv->walker.cfi = exit_cfi_map(core->cfi, proc);
            gw_unwinder_run(core->os->user_unwinder, &sv->walker, &kstack.user_regs, &ustack);
            count_cfi(sv, &ustack);
            user_now = ustack.stop != GW_STOP_UNMAPPED && ustack.stop != GW_STOP_NONE;
            sv->st.user_at_entry += user_now;
            /* Its frames need the process's modules: as a user sample does, this asks the
             * drain thread to look at the address space
             * (sampler/sources/user_modules/user_modules.c). */
            if (user_now) {
                id_proc_seen_user(core->ids, proc, now);
                if (!sv->event.on)
                    later = copy_for_later(
                        sv, &(struct copy_request){now, proc, thread, pid, tid, sv->walker.cfi,
                                                   &kstack.user_regs, &ustack,
                                                   user_walk_word(HVFXT_STOP_NONE, 0, &ustack), 0});
            }
        }
    }
    struct hvfxt_sample smp = {
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_PC | HVFXT_SF_WALK | HVFXT_SF_KERNEL_STACK,
        .pid = pid,
        .tid = tid,
        .ts = now,
        .vcpu = sv->index,
        .cpl = snap->cpl,
        .pc = snap->rip,
        .kernel_stack = kstack.pc,
        .n_kernel = kstack.count,
    };
    /* Only a thread known to run in user mode will come back there: kernel threads (and a
     * thread's very first sample, if it is in the kernel) carry the kernel stack alone. */
    unsigned ustop = HVFXT_STOP_NONE, ucaller = 0;
    if (later) {
        /* The exact user PC at entry now, the callers from the copy's walk. */
        smp.fields |= HVFXT_SF_CONTINUATION | HVFXT_SF_USER_STACK;
        smp.continuation = later;
        smp.user_stack = &kstack.user_regs.rip;
        smp.n_user = 1;
        ustop = HVFXT_STOP_DEFERRED;
        user_now = false;
    } else if (user_now) {
        smp.fields |= HVFXT_SF_USER_STACK;
        smp.user_stack = ustack.pc;
        smp.n_user = ustack.count;
        ustop = exit_stop_code(&ustack);
        ucaller = ustack.leaf;
    } else if (user_thread && !sv->event.on) {
        smp.continuation = exit_cont_open(sv, proc, thread, now);
        if (smp.continuation) {
            smp.fields |= HVFXT_SF_CONTINUATION;
            ustop = HVFXT_STOP_DEFERRED;
            /* The exact user PC at entry, known now: the reader puts it first and takes only
             * the callers from the completion (docs/fxt-samples.md). */
            if (entry) {
                smp.fields |= HVFXT_SF_USER_STACK;
                smp.user_stack = &kstack.user_regs.rip;
                smp.n_user = 1;
            }
        }
    }
    smp.walk = hvfxt_walk_word(exit_stop_code(&kstack), ustop, 0, 0) |
               hvfxt_walk_callers(kstack.leaf, ucaller) | hvfxt_walk_kernel_exact(kstack.exact) |
               (user_now ? hvfxt_walk_user_cfi(ustack.cfi_frames) : 0);
    add_runtime(sv, &smp);
    add_group(sv, &smp);
    if (sv->event.on)
        mark_event(sv, &smp);
    else if (halted)
        sv->st.idle++;
    else
        sv->st.kernel++;
    exit_emit(sv, &smp);
}

/* The guest's own pid, tid and names on the identities. A process takes the name of the first
 * of its threads seen until a stop tells its own (its leader's). */
static void label(struct exit_vcpu *sv, const struct guestos_task *t, uint32_t proc,
                  uint32_t thread)
{
    struct id_label *pl = id_proc_label(sv->core->ids, proc),
                    *tl = id_thread_label(sv->core->ids, thread);
    /* A thread's first stop: its pid namespace ids, read now (a few reads, once per thread)
     * so that a thread that exits before the drain thread names it still has them. */
    if (tl && !t->kthread && t->handle &&
        atomic_load_explicit(&tl->seq, memory_order_relaxed) == 0 &&
        sv->core->os->ops->task_ns_exit) {
        struct guestos_ns ns;
        if (sv->core->os->ops->task_ns_exit(sv->core->os, &sv->os, &sv->walker, t->handle, t->tid,
                                            &ns))
            id_thread_set_ns(sv->core->ids, thread, ns.ns_tid, ns.ns_pid, ns.pidns, ns.level);
    }
    if (tl)
        id_label_set(tl, t->tid, t->kthread, t->comm);
    _Atomic uint64_t *handle = id_thread_handle(sv->core->ids, thread);
    if (handle && t->handle && atomic_load_explicit(handle, memory_order_relaxed) != t->handle)
        atomic_store_explicit(handle, t->handle, memory_order_relaxed);
    if (pl && t->process[0])
        id_label_set(pl, t->pid, t->kthread, t->process);
    else if (pl && atomic_load_explicit(&pl->seq, memory_order_relaxed) == 0)
        id_label_set(pl, t->pid, t->kthread, t->comm);
}

static uint64_t take(struct exit_vcpu *sv, struct gw_snapshot *snap, uint64_t now, bool due);

uint64_t exit_take(struct exit_vcpu *sv, struct gw_snapshot *snap, uint64_t now, bool due)
{
    exit_grace_enter(sv);
    uint64_t walked = take(sv, snap, now, due);
    exit_grace_leave(sv);
    return walked;
}

static uint64_t take(struct exit_vcpu *sv, struct gw_snapshot *snap, uint64_t now, bool due)
{
    struct exit_core *core = sv->core;
    struct guestos_ident who;
    guestos_identify(core->os, &sv->os, &sv->walker, snap, &who);
    struct id_proc_info info = {snap->cr0, who.as_root, snap->cr4, snap->efer, now};
    uint32_t proc = id_proc_get(core->ids, who.proc_key, &info);
    /* No slot for its process: no thread under it either (id 0 is no identity). */
    uint32_t thread = proc ? id_thread_get(core->ids, proc, who.thread_key, now) : 0;
    if (who.task.known)
        label(sv, &who.task, proc, thread);
    else if (who.task_unreadable)
        sv->st.task_unknown++;
    /* Its cgroup: a lookup in the published table, no guest read (the key came with the task). */
    sv->group = core->groups && who.task.known && who.task.group
                    ? group_table_number(core->groups, who.task.group, now)
                    : 0;
    /* A full table's sample goes to the unattributed identity, which says so, never to guest
     * address space 0 (the kernel's). */
    uint64_t pid = proc ? hvfxt_koid_guest_process(id_proc_number(core->ids, proc))
                        : HVFXT_KOID_UNATTRIBUTED_PROCESS;
    uint64_t tid = thread ? hvfxt_koid_guest_thread(id_thread_number(core->ids, thread))
                          : HVFXT_KOID_UNATTRIBUTED_THREAD;
    if (due)
        id_seen(core->ids, proc, thread, now);
    if (!proc || !thread) {
        sv->st.unattributed++;
        if (!atomic_load_explicit(&core->ids->unattributed, memory_order_relaxed))
            atomic_store_explicit(&core->ids->unattributed, true, memory_order_relaxed);
    }

    /* The runtime frames of a user thread, read while its address space is the one CR3 holds
     * (not mid-switch): they stand still while it is in the kernel, so a kernel sample gets
     * them at once. */
    sv->n_rt = 0;
    if (due && core->rt && who.task.known && !who.task.kthread && who.as_root &&
        who.as_root == who.cr3_root)
        sv->n_rt = exit_runtime_stack(sv, proc, who.task.tid);
    uint64_t walked;
    if (snap->cpl == 3) {
        if (due)
            id_proc_seen_user(core->ids, proc, now);
        walked = take_user(sv, now, due, proc, thread, pid, tid);
    } else {
        if (sv->npend)
            exit_conts_expire(sv, now);
        walked = hv_now_ns();
        if (due)
            take_kernel(sv, snap, now, proc, thread, pid, tid, &who);
    }
    /* A re-check that finds another thread in user mode means ours is not on this vCPU (it
     * waits in the guest's run queue, or migrated): stop re-checking until a tick sees one of
     * our threads in the kernel again, instead of paying an exit every re-check period. */
    if (!due && snap->cpl == 3 && sv->npend > 0)
        sv->recheck_paused = true;
    return walked;
}
