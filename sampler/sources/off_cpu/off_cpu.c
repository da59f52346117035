/* Off-CPU time of every guest thread (`record --off-cpu`, docs/off-cpu.md), on the drain thread:
 * at cfg.off_cpu_hz it visits the guest's threads (guestos threads op) and accounts, per thread,
 * the time since its last visit that it did not spend on a CPU: the visit's interval less the
 * CPU time the guest's own scheduler counted for it meanwhile. So a thread's total is exactly
 * what the guest says it spent off its CPU between two visits, whatever the visit rate; the rate
 * only decides which stack gets the time when a thread ran and slept again between visits (the
 * one it sleeps in now, or the last one when it runs now).
 *
 * A thread's stacks are walked once per sleep: at the first visit that finds it switched out at
 * another point (its switch count or resume point changed), its kernel stack from its switch
 * frame and its user stack from the registers it entered the kernel with. Both are copied first
 * and the thread checked not to have run meanwhile; the walks run on the copies. The time a sleep
 * accumulates is written as one record when the thread runs again, when it goes (exits), at most
 * every OFF_CPU_FLUSH_NS, and at the recording's end. Records are kept in a buffer until the drain
 * pass named the threads they refer to (REC_STAGE_NAMED). Never at an exit: the vCPUs do not
 * wait for it. The recorder source "off-cpu", with `record --off-cpu`. */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/vector.h"
#include "guestos/guestos.h"
#include "sampler/exit/core.h"
#include "sampler/parts/drain_walker.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/parts/module_registry.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

#define OFF_CPU_MAX_THREADS 8192          /* threads a visit follows (a power of two: the table) */
#define OFF_CPU_FLUSH_NS    1000000000ull /* a long sleep is written at least every second */
/* Stacks walked per visit at most: a guest whose every thread sleeps somewhere new at every
 * visit costs the drain thread no more than this (the others keep their time, and are walked
 * at a later visit if they still sleep there). */
#define OFF_CPU_WALKS_PER_VISIT 512
#define OFF_CPU_REREADS         2 /* looks again at a thread that ran while it was read */
/* The user stack copied from its entry's RSP (perf's --call-graph dwarf copies 8 KiB), its
 * frames above read from the guest, where they change last: the smaller the copy, the shorter
 * the window in which the thread's running spoils it. */
#define OFF_CPU_USER_COPY  (8u << 10)
#define OFF_CPU_DENY_BELOW (64u << 10) /* below a copy the stack is the guest's of now */

struct off_thread {
    uint64_t handle; /* 0: empty slot */
    bool moved;      /* moved to the next visit's table: a tombstone that keeps probes going */
    int32_t tid;
    uint32_t proc, thread, vcpu;
    /* Their koids when identified: the time is written under them even if the identities end
     * (and their slots go to others) before it is (docs/identities.md). */
    uint64_t pid_koid, tid_koid;
    uint64_t cpu_ns, switches, resume_sp;
    uint64_t group; /* its control group set at the last visit (guestos_task.group), 0 */
    bool off;       /* off its CPU at the last visit */
    bool walked;    /* frames hold the stacks of the sleep it is in */
    uint8_t state;
    uint64_t seen_ns; /* the last visit that saw it */
    uint64_t pending_ns, pending_since;
    uint64_t walk;
    uint32_t nk, nu;
    uint64_t *frames; /* nk kernel frames, then nu user frames */
};

struct off_cpu {
    const struct rec_env *env;
    uint64_t period_ns, next_ns;
    struct off_thread *cur, *next; /* tables of OFF_CPU_MAX_THREADS * 2 slots */
    size_t cap;
    struct drain_walker dw;
    uint64_t *kframes, *uframes;
    uint8_t kcopy[32u << 10]; /* the kernel stack of the thread walked (THREAD_SIZE at most) */
    uint8_t ucopy[OFF_CPU_USER_COPY];
    VECTOR(uint64_t) buf; /* records waiting for their names: [provider << 32 | words], words */
    struct hv_err last_err;
    /* for the summary */
    uint64_t visits, failed, threads, walks, races, unread, records, off_ns, ns, max_ns, cut;
    uint64_t deferred, unnamed, ran_kept;
    unsigned walks_left; /* this visit's */
    bool names_recorded;
};

static size_t slot_of(const struct off_cpu *o, uint64_t handle, int32_t tid)
{
    uint64_t h = (handle ^ ((uint64_t)(uint32_t)tid << 17)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 40) & (o->cap - 1);
}

/* The entry of (handle, tid) in table t: a live one (`live`), or any with the key, tombstone
 * included, else the empty slot where it goes (NULL: the table is full). */
static struct off_thread *find(struct off_thread *t, const struct off_cpu *o, uint64_t handle,
                               int32_t tid, bool live)
{
    for (size_t i = slot_of(o, handle, tid), n = 0; n < o->cap; i = (i + 1) & (o->cap - 1), n++) {
        if (t[i].handle == handle && t[i].tid == tid && !(live && t[i].moved))
            return &t[i];
        if (!t[i].handle)
            return live ? NULL : &t[i];
    }
    return NULL;
}

static bool off_cpu_wanted(const struct sampler_config *cfg)
{
    return cfg->off_cpu_hz != 0;
}

static int off_cpu_create(const struct rec_env *env, void **st, struct hv_err *err)
{
    struct off_cpu *o = calloc(1, sizeof(*o));
    if (!o)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    *st = o;
    o->env = env;
    o->period_ns = 1000000000ull / env->cfg->off_cpu_hz;
    o->cap = 2 * OFF_CPU_MAX_THREADS;
    o->cur = calloc(o->cap, sizeof(*o->cur));
    o->next = calloc(o->cap, sizeof(*o->next));
    o->kframes = calloc(env->cfg->max_depth, sizeof(uint64_t));
    o->uframes = calloc(env->cfg->max_depth, sizeof(uint64_t));
    if (!o->cur || !o->next || !o->kframes || !o->uframes)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    return 0;
}

static void off_cpu_destroy(void *st)
{
    struct off_cpu *o = st;
    if (!o)
        return;
    for (size_t i = 0; i < o->cap; i++) {
        free(o->cur ? o->cur[i].frames : NULL);
        free(o->next ? o->next[i].frames : NULL); /* a visit cut short by a write error */
    }
    drain_walker_close(&o->dw);
    free(o->cur);
    free(o->next);
    free(o->kframes);
    free(o->uframes);
    vec_free(&o->buf);
    free(o);
}

/* The states' names, as the symbols of HVFXT_OFF_CPU_MODULE (the frame a report puts at the
 * leaf of an off-CPU stack), once the file is open. */
static int record_names(struct off_cpu *o, struct hv_err *err)
{
    struct hvfxt_symbol syms[2 * HVFXT_TASK_STATES];
    char names[HVFXT_TASK_STATES][32];
    size_t k = 0;
    for (unsigned i = 0; i < HVFXT_TASK_STATES; i++) {
        int len = snprintf(names[i], sizeof(names[i]), "[off-cpu:%s]", hvfxt_task_state_letter(i));
        syms[k++] = (struct hvfxt_symbol){.addr = hvfxt_off_cpu_frame(i),
                                          .type = 'T',
                                          .name = names[i],
                                          .name_len = (uint16_t)len};
    }
    /* Each name spans its 4 bytes (schema.h), then an end marker. */
    syms[k++] = (struct hvfxt_symbol){.addr = hvfxt_off_cpu_frame(HVFXT_TASK_STATES), .name = ""};
    struct discover_module m = {
        .header_va = HVFXT_OFF_CPU_FRAME_BASE,
        .start = HVFXT_OFF_CPU_FRAME_BASE,
        .end = HVFXT_OFF_CPU_FRAME_BASE + HVFXT_OFF_CPU_FRAME_SIZE,
        .e_type = ET_EXEC,
        .nseg = 1,
        .seg = {{.start = HVFXT_OFF_CPU_FRAME_BASE,
                 .size = HVFXT_OFF_CPU_FRAME_SIZE,
                 .flags = PF_R}},
    };
    snprintf(m.name, sizeof(m.name), "%s", HVFXT_OFF_CPU_MODULE);
    int64_t id = discover_record_module(o->env->w, o->env->modules, hvfxt_koid_guest_process(0), &m,
                                        o->env->start_ns, err);
    if (id == -1)
        return -1;
    if (id < 0)
        return 0; /* no room in the metadata budget: counted there */
    return hvfxt_write_symbols(o->env->w, (uint64_t)id, syms, k, err);
}

/* Queue the record of the time thread e spent off its CPU since pending_since. */
static int flush(struct off_cpu *o, struct off_thread *e, uint64_t now)
{
    if (!e->pending_ns) {
        e->pending_since = now;
        return 0;
    }
    if (!e->proc || !e->thread) {
        o->unnamed++; /* the id tables were full: no identity to give it */
        e->pending_ns = 0;
        e->pending_since = now;
        return 0;
    }
    struct hvfxt_sample smp = {
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_OFF_CPU_NS | HVFXT_SF_TASK_STATE,
        .pid = e->pid_koid,
        .tid = e->tid_koid,
        .ts = now,
        .vcpu = e->vcpu,
        .cpl = 0,
        .off_cpu_ns = e->pending_ns,
        .task_state = e->state,
    };
    /* Its control group, as the samples carry it (the containers source publishes the table
     * and writes the group's record before this one). */
    uint32_t group = o->env->core->groups && e->group
                         ? group_table_number(o->env->core->groups, e->group, now)
                         : 0;
    if (group) {
        smp.fields |= HVFXT_SF_CGROUP;
        smp.cgroup = hvfxt_koid_group(group);
    }
    if (e->walked) {
        smp.fields |= HVFXT_SF_WALK;
        smp.walk = e->walk;
        if (e->nk) {
            smp.fields |= HVFXT_SF_KERNEL_STACK;
            smp.kernel_stack = e->frames;
            smp.n_kernel = e->nk;
        }
        if (e->nu) {
            smp.fields |= HVFXT_SF_USER_STACK;
            smp.user_stack = e->frames + e->nk;
            smp.n_user = e->nu;
        }
    }
    size_t n = hvfxt_sample_words(&smp);
    if (n > FXT_MAX_RECORD_WORDS)
        n = FXT_MAX_RECORD_WORDS;
    if (!vec_reserve(&o->buf, n + 1))
        return hv_errk(&o->last_err, HV_ERR_NO_MEMORY, "out of memory");
    size_t words = hvfxt_enc_sample(o->buf.v + o->buf.n + 1, n, &smp);
    if (!words) {
        o->cut++;
    } else {
        o->buf.v[o->buf.n] = (uint64_t)hvfxt_vcpu_provider(e->vcpu) << 32 | words;
        o->buf.n += words + 1;
        o->records++;
        o->off_ns += e->pending_ns;
    }
    e->pending_ns = 0;
    e->pending_since = now;
    return 0;
}

/* Copy up to `max` bytes of the stack from va through the walker's current address space,
 * page by page up to the first page it cannot read. Returns the bytes copied. */
static uint32_t copy_stack(struct gw_walker *w, uint64_t va, uint8_t *dst, uint32_t max)
{
    uint32_t len = 0;
    while (len < max && va + len >= va) {
        uint32_t chunk = 4096 - (uint32_t)((va + len) & 4095);
        if (chunk > max - len)
            chunk = max - len;
        if (gw_read_virt(w, va + len, dst + len, chunk, false, NULL) != 0)
            break;
        len += chunk;
    }
    return len;
}

/* Run the unwinder u from r on a copy of the stack [lo, lo + len): reads there come from the
 * copy, reads below it (down to lo - OFF_CPU_DENY_BELOW) fail, as they would be the guest's of
 * now (sampler/exit/stack_copy.c does the same for exit-time copies); above it, the guest's. */
static void walk_copy(struct gw_walker *w, const struct gw_unwinder *u, const struct gw_regs *r,
                      uint64_t lo, const uint8_t *bytes, uint32_t len, struct gw_stack *st)
{
    struct gw_tlb_pin pin = {.lo = lo,
                             .hi = lo + len,
                             .deny_lo = lo > OFF_CPU_DENY_BELOW ? lo - OFF_CPU_DENY_BELOW : 0,
                             .deny_hi = lo,
                             .bytes = bytes};
    w->tlb.pin = len ? &pin : NULL;
    gw_unwinder_run(u, w, r, st);
    w->tlb.pin = NULL;
    gw_tlb_flush(&w->tlb); /* what was read through the pin is not the guest's of now */
}

/* Walk the stacks of the sleep thread t is in now into e (e->walked false when they cannot be
 * read, or the thread ran while they were copied: then true). Both stacks are copied first and
 * the thread checked not to have run since it was read; the walks then run on the copies, so
 * the window in which its running can tear them is the copy's, not the walks'. */
static bool walk(struct off_cpu *o, struct off_thread *e, const struct guestos_thread *t)
{
    e->walked = false;
    e->nk = e->nu = 0;
    struct gw_regs kr, ur;
    if (!o->env->os->ops->thread_regs || !drain_walker_open(&o->dw, o->env->mem, o->env->cfg))
        return false;
    if (!o->walks_left) {
        o->deferred++;
        return false;
    }
    o->walks_left--;
    if (!o->env->os->ops->thread_regs(o->env->os, o->env->mem, t, &kr, &ur)) {
        o->unread++;
        return false;
    }
    o->walks++;
    struct gw_snapshot ksnap = {
        .cr0 = t->as.cr0,
        .cr3 = t->as.root ? t->as.root : t->kernel_root,
        .cr4 = t->as.cr4,
        .efer = t->as.efer,
        .rip = kr.rip,
        .rsp = kr.rsp,
        .rbp = kr.rbp,
        .cpl = 0,
    };
    bool user = ur.user && t->as.root && !t->task.kthread;
    struct gw_snapshot usnap = ksnap;
    usnap.cr3 = t->as.root;
    usnap.cpl = 3;
    usnap.rip = ur.rip;
    usnap.rsp = ur.rsp;
    usnap.rbp = ur.rbp;
    /* The kernel stack from where it resumes to the top of its THREAD_SIZE (16 KiB, 32 KiB with
     * KASAN), the user stack from its entry's RSP. */
    uint64_t base = t->task.kstack, klo = kr.rsp & ~7ull;
    uint64_t top = base && klo >= base && klo < base + 16384 ? base + 16384 : klo + 16384;
    if (base && klo >= base + 16384 && klo < base + 32768)
        top = base + 32768;
    gw_walker_begin(&o->dw.w, &ksnap);
    uint32_t klen = copy_stack(&o->dw.w, klo, o->kcopy, (uint32_t)(top - klo));
    uint32_t ulen = 0;
    if (user) {
        gw_walker_begin(&o->dw.w, &usnap);
        ulen = copy_stack(&o->dw.w, ur.rsp, o->ucopy, OFF_CPU_USER_COPY);
    }
    /* The thread may have run (and its stacks changed) while they were copied. */
    bool ran = o->env->os->ops->thread_unchanged &&
               !o->env->os->ops->thread_unchanged(o->env->os, o->env->mem, t);
    gw_walker_begin(&o->dw.w, &ksnap);
    o->dw.w.cfi = NULL;
    struct gw_stack ks = GW_STACK_INIT(o->kframes, o->env->cfg->max_depth);
    walk_copy(&o->dw.w, o->env->os->kernel_unwinder, &kr, klo, o->kcopy, klen, &ks);
    if (ran) {
        /* Its copy holds together if the kernel walk went from the switch frame the thread was
         * read with, frame by frame, to the very entry registers it was read with (a user
         * thread), or to the end of its chain (a kernel thread): a thread that resumes writes
         * its stack from where it was switched out, and a walk over what it wrote would not
         * arrive there. Else the copy is dropped. */
        bool whole = user
                         ? ks.user_entry && ks.user_regs.rip == ur.rip && ks.user_regs.rsp == ur.rsp
                         : ks.stop == GW_STOP_CHAIN_END && ks.count > 1;
        if (!whole) {
            o->races++;
            return true;
        }
        o->ran_kept++;
    }
    struct gw_stack us = GW_STACK_INIT(o->uframes, o->env->cfg->max_depth);
    if (user) {
        gw_walker_begin(&o->dw.w, &usnap);
        const struct exit_cfi_maps *maps = o->env->core->cfi;
        o->dw.w.cfi = maps && e->proc ? exit_cfi_current(maps, e->proc) : NULL;
        walk_copy(&o->dw.w, o->env->os->user_unwinder, &ur, ur.rsp, o->ucopy, ulen, &us);
        o->dw.w.cfi = NULL;
    }
    uint64_t *f = realloc(e->frames, ((size_t)ks.count + us.count + 1) * sizeof(*f));
    if (!f)
        return false;
    e->frames = f;
    memcpy(f, ks.pc, ks.count * sizeof(*f));
    memcpy(f + ks.count, us.pc, us.count * sizeof(*f));
    e->nk = ks.count;
    e->nu = us.count;
    e->walk =
        hvfxt_walk_word(exit_stop_code(&ks), user ? exit_stop_code(&us) : HVFXT_STOP_NONE, 0, 0) |
        hvfxt_walk_callers(ks.leaf, user ? us.leaf : 0) | hvfxt_walk_kernel_exact(ks.exact) |
        (user ? hvfxt_walk_user_cfi(us.cfi_frames) : 0);
    e->walked = true;
    return false;
}

/* The thread's ids in the recording (as the exit path would give them) and its labels. */
static void identify(struct off_cpu *o, struct off_thread *e, const struct guestos_thread *t,
                     uint64_t now)
{
    struct id_proc_info info = {t->as.cr0, t->as.root, t->as.cr4, t->as.efer, now};
    e->proc = id_proc_get(o->env->core->ids, t->proc_key, &info);
    e->thread = e->proc ? id_thread_get(o->env->core->ids, e->proc, t->thread_key, now) : 0;
    e->pid_koid = hvfxt_koid_guest_process(id_proc_number(o->env->core->ids, e->proc));
    e->tid_koid = hvfxt_koid_guest_thread(id_thread_number(o->env->core->ids, e->thread));
    struct id_label *pl = id_proc_label(o->env->core->ids, e->proc),
                    *tl = id_thread_label(o->env->core->ids, e->thread);
    if (tl)
        id_label_set(tl, t->task.tid, t->task.kthread, t->task.comm);
    if (pl)
        id_label_set(pl, t->task.pid, t->task.kthread, t->task.process);
    if (e->thread && !t->task.kthread && t->as.root)
        id_thread_mark_user(o->env->core->ids, e->thread);
}

struct visit {
    struct off_cpu *o;
    uint64_t now;
    int rc;
};

static int visit_thread(void *ctx, const struct guestos_thread *t)
{
    struct visit *v = ctx;
    struct off_cpu *o = v->o;
    if (t->state == GUESTOS_THREAD_DEAD || t->state == GUESTOS_THREAD_ZOMBIE)
        return 0; /* no stack to tell, and no CPU to come back to */
    struct off_thread *e = find(o->next, o, t->handle, t->task.tid, false);
    if (!e || e->handle)
        return 0; /* the same task twice in one visit (a list changing under us) */
    struct off_thread *old = find(o->cur, o, t->handle, t->task.tid, true);
    o->threads++;
    bool is_new = !old;
    if (old) {
        *e = *old;
        old->moved = true; /* what is left in cur afterwards is gone */
        old->frames = NULL;
    } else {
        *e = (struct off_thread){.handle = t->handle, .tid = t->task.tid, .pending_since = v->now};
    }
    /* Ids every visit: a process that exec'd has a new address space, hence new ids. */
    uint32_t proc = e->proc, thread = e->thread;
    uint64_t old_pid = e->pid_koid, old_tid = e->tid_koid;
    identify(o, e, t, v->now);
    if (!is_new && (old_pid != e->pid_koid || old_tid != e->tid_koid)) {
        /* The time so far is its old identity's. */
        uint32_t np = e->proc, nt = e->thread;
        uint64_t npk = e->pid_koid, ntk = e->tid_koid;
        e->proc = proc;
        e->thread = thread;
        e->pid_koid = old_pid;
        e->tid_koid = old_tid;
        if (flush(o, e, v->now) < 0)
            return v->rc = -1;
        e->proc = np;
        e->thread = nt;
        e->pid_koid = npk;
        e->tid_koid = ntk;
        e->walked = false;
    }
    e->vcpu = t->cpu < o->env->cfg->nvcpus ? t->cpu : 0;
    e->group = t->task.group;
    uint64_t ran = t->cpu_ns >= e->cpu_ns ? t->cpu_ns - e->cpu_ns : 0;
    uint64_t elapsed = v->now > e->seen_ns ? v->now - e->seen_ns : 0;
    uint64_t off = is_new ? 0 : elapsed > ran ? elapsed - ran : 0;
    bool same_sleep = !is_new && e->off && !t->on_cpu && t->switches == e->switches &&
                      t->resume_sp == e->resume_sp;
    /* A walk the thread's running spoiled (or one that could not be read) is tried again while
     * it has not run since: the time of its sleep then has its stacks. */
    if (same_sleep && !e->walked)
        walk(o, e, t);
    if (same_sleep && t->state != e->state) {
        /* Woken (R, waiting for a CPU) or otherwise changed: the time so far was the old
         * state's, the interval's goes to the new one. */
        if (flush(o, e, v->now) < 0)
            return v->rc = -1;
        e->pending_ns = off;
        e->state = (uint8_t)t->state;
    } else if (same_sleep) {
        e->pending_ns += off;
    } else if (t->on_cpu) {
        /* It woke and runs: the time off its CPU was the sleep it was in. */
        e->pending_ns += off;
        if (flush(o, e, v->now) < 0)
            return v->rc = -1;
        e->off = false;
    } else {
        /* Another sleep than the last visit's (or the first seen): it gets the time. */
        if (flush(o, e, v->now) < 0)
            return v->rc = -1;
        e->pending_ns = off;
        e->off = true;
        e->state = (uint8_t)t->state;
        /* It ran while its stacks were read: the visit looks again, as if it came a little
         * later, and the interval goes to the sleep it is in then (if it sleeps). Its CPU time
         * stays counted from the first look. */
        struct guestos_thread again;
        for (int tries = 0; walk(o, e, t) && tries < OFF_CPU_REREADS; tries++) {
            if (!o->env->os->ops->thread_reread ||
                !o->env->os->ops->thread_reread(o->env->os, o->env->mem, t, &again) ||
                again.on_cpu || again.state == GUESTOS_THREAD_DEAD ||
                again.state == GUESTOS_THREAD_ZOMBIE)
                break;
            again.cpu_ns = t->cpu_ns;
            t = &again;
            e->state = (uint8_t)t->state;
        }
    }
    e->seen_ns = v->now;
    e->cpu_ns = t->cpu_ns;
    e->switches = t->switches;
    e->resume_sp = t->resume_sp;
    if (e->pending_ns && v->now - e->pending_since >= OFF_CPU_FLUSH_NS && flush(o, e, v->now) < 0)
        return v->rc = -1;
    return 0;
}

/* Write what every thread of `t` has pending, and forget them. */
static int flush_all(struct off_cpu *o, struct off_thread *t, uint64_t now)
{
    for (size_t i = 0; i < o->cap; i++) {
        if (!t[i].handle)
            continue;
        if (!t[i].moved && flush(o, &t[i], now) < 0)
            return -1;
        free(t[i].frames);
        t[i] = (struct off_thread){0};
    }
    return 0;
}

/* A visit of the guest's threads, before the names (it may meet threads no exit showed). */
static int visit(struct off_cpu *o, uint64_t now, bool final, struct hv_err *err)
{
    if (!o->env->mem || o->env->kernel->state != REC_KERNEL_FOUND)
        return 0;
    if (!o->names_recorded) {
        o->names_recorded = true;
        if (record_names(o, err) < 0)
            return -1;
    }
    if (!final && now < o->next_ns)
        return 0;
    o->next_ns = now + o->period_ns;
    uint64_t t0 = hv_now_ns();
    struct visit v = {.o = o, .now = now};
    o->walks_left = OFF_CPU_WALKS_PER_VISIT;
    struct hv_err e = {0};
    long n = guestos_threads(o->env->os, o->env->mem, visit_thread, &v, OFF_CPU_MAX_THREADS, &e);
    if (v.rc < 0) {
        *err = o->last_err;
        return -1;
    }
    if (n < 0) {
        /* The list changed under the visit, or cannot be read: the threads visited are
         * accounted up to now, the others from their last visit at the next. */
        o->failed++;
        o->last_err = e;
        for (size_t i = 0; i < o->cap; i++)
            if (o->next[i].handle) {
                /* Back where it was (its tombstone), or where it goes. */
                struct off_thread *d = find(o->cur, o, o->next[i].handle, o->next[i].tid, false);
                if (d) {
                    *d = o->next[i];
                } else {
                    free(o->next[i].frames);
                }
                o->next[i] = (struct off_thread){0};
            }
    } else {
        o->visits++;
        /* Threads not seen this time have exited: their time is written now. */
        if (flush_all(o, o->cur, now) < 0) {
            *err = o->last_err;
            return -1;
        }
        struct off_thread *t = o->cur;
        o->cur = o->next;
        o->next = t;
    }
    if (final && flush_all(o, o->cur, now) < 0) {
        *err = o->last_err;
        return -1;
    }
    uint64_t took = hv_now_ns() - t0;
    o->ns += took;
    if (took > o->max_ns)
        o->max_ns = took;
    return 0;
}

/* The visits' records, once the names they refer to are written. */
static int emit(struct off_cpu *o, struct hv_err *err)
{
    for (size_t i = 0; i < o->buf.n;) {
        uint32_t provider = (uint32_t)(o->buf.v[i] >> 32);
        size_t words = (size_t)(uint32_t)o->buf.v[i];
        o->env->meta->not_meta += words * 8;
        if (fxt_writer_emit(o->env->w, provider, o->buf.v + i + 1, words, err) < 0)
            return -1;
        i += words + 1;
    }
    o->buf.n = 0;
    return 0;
}

static int off_cpu_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                        bool final, struct hv_err *err)
{
    (void)env;
    return stage == REC_STAGE_VISIT ? visit(st, now, final, err) : emit(st, err);
}

static void off_cpu_summary(const void *st, const struct rec_env *env, FILE *out)
{
    (void)env;
    const struct off_cpu *o = st;
    if (!o->visits && o->env->kernel->state != REC_KERNEL_FOUND) {
        fprintf(out, "  off-CPU: no visits: the guest kernel was not described (off-CPU time needs "
                     "a Linux guest's own description of itself, docs/off-cpu.md)\n");
        return;
    }
    double wall = (double)(hv_now_ns() - o->env->start_ns);
    fprintf(out,
            "  off-CPU: %" PRIu64 " visits of the guest's threads at %" PRIu64 " Hz (%.0f threads "
            "each), %" PRIu64 " records of %.3f s off-CPU, %" PRIu64 " stacks walked (%" PRIu64
            " threads ran while copied and were dropped, %" PRIu64
            " ran and were kept whole, %" PRIu64
            " switch frames unreadable), %.2f ms a visit (max %.2f) on the drain thread: %.2f%% "
            "of the recording's time (report --off-cpu)",
            o->visits, o->env->cfg->off_cpu_hz,
            o->visits ? (double)o->threads / (double)o->visits : 0.0, o->records,
            (double)o->off_ns / 1e9, o->walks, o->races, o->ran_kept, o->unread,
            o->visits ? (double)o->ns / (double)o->visits / 1e6 : 0.0, (double)o->max_ns / 1e6,
            wall > 0 ? 100.0 * (double)o->ns / wall : 0.0);
    if (o->deferred)
        fprintf(out, "; %" PRIu64 " walks left to a later visit (over %u a visit)", o->deferred,
                OFF_CPU_WALKS_PER_VISIT);
    if (o->unnamed)
        fprintf(out, "; %" PRIu64 " records left out (the identity tables were full)", o->unnamed);
    if (o->failed)
        fprintf(out, "; %" PRIu64 " visits failed (last: %s)", o->failed, o->last_err.msg);
    fputc('\n', out);
}

const struct rec_source_ops rec_source_off_cpu = {
    .name = "off-cpu",
    .wanted = off_cpu_wanted,
    .create = off_cpu_create,
    .stages = REC_STAGE_BIT(REC_STAGE_VISIT) | REC_STAGE_BIT(REC_STAGE_NAMED),
    .poll = off_cpu_poll,
    .summary = off_cpu_summary,
    .destroy = off_cpu_destroy,
};
