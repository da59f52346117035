/* The names of the guest's processes and threads in the recording (drain thread): each new
 * identity of the exit core's tables gets its kernel object record before any sample that uses
 * it is written, and another when its label changes (the guest renamed it, or its leader was
 * seen); each new user address space then gets every source's first look (process_named: its
 * modules), while the pass's slice lasts. Samples whose identity found no slot (a full table)
 * have one of their own, named HVFXT_UNATTRIBUTED_NAME here once. */
#include <inttypes.h>
#include <stdio.h>

#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"

#define NAME_RECORD_COST 128u /* a kernel object record with a 64-byte name */

/* A process's name and guest pid: what its label says, else its address space. */
static void proc_name(const struct id_proc *p, uint32_t id, char *name, size_t len, int64_t *pid,
                      uint32_t *seq)
{
    struct id_label_value v;
    bool labelled = id_label_get(&p->label, &v);
    *seq = labelled ? v.seq : 0;
    *pid = labelled ? v.guest_id : -1;
    if (labelled && v.comm[0])
        snprintf(name, len, "%s", v.comm);
    else if (!p->info.cr3)
        /* No page tables: the guest before it turns paging on (its firmware or a bootloader's
         * first steps), not a process. */
        snprintf(name, len, "[no paging]");
    else
        snprintf(name, len, "as%u cr3=0x%" PRIx64, id, p->info.cr3);
}

static void thread_name(const struct id_thread *t, uint32_t id, char *name, size_t len,
                        int64_t *tid, uint32_t *seq)
{
    struct id_label_value v;
    bool labelled = id_label_get(&t->label, &v);
    *seq = labelled ? v.seq : 0;
    *tid = labelled ? v.guest_id : -1;
    if (labelled && v.comm[0])
        snprintf(name, len, "%s", v.comm);
    else
        snprintf(name, len, "t%u fs=0x%" PRIx64, id, t->thread_key);
}

/* Label changed since the last record named it (read without the full copy first). */
static bool relabelled(const struct id_label *l, uint32_t named_seq)
{
    uint32_t seq = atomic_load_explicit(&l->seq, memory_order_acquire);
    return seq != named_seq && !(seq & 1);
}

/* New identities get their kernel object record; one whose label changed (the guest renamed it,
 * or its leader was seen) gets another, which replaces the name from there on. */
int sampler_name_identities(struct sampler *s, struct hv_err *err)
{
    char name[64];
    /* Samples of a full table's identity: named once, as what they are. */
    if (!s->unattributed_named &&
        atomic_load_explicit(&s->core.ids->unattributed, memory_order_relaxed)) {
        uint32_t proc = (uint32_t)(HVFXT_KOID_UNATTRIBUTED_PROCESS - HVFXT_KOID_PROCESS_BASE);
        uint32_t thread = (uint32_t)(HVFXT_KOID_UNATTRIBUTED_THREAD - HVFXT_KOID_THREAD_BASE);
        if (hvfxt_write_guest_process(&s->w, proc, HVFXT_UNATTRIBUTED_NAME, -1, err) < 0 ||
            hvfxt_write_guest_thread(&s->w, thread, proc, HVFXT_UNATTRIBUTED_NAME, -1, NULL, err) <
                0)
            return -1;
        s->unattributed_named = true;
    }
    for (uint32_t id = 1; id <= ID_MAX_PROCS; id++) {
        uint8_t state = s->proc_named[id - 1];
        const struct id_proc *p = id_proc_at(s->core.ids, id);
        if (!p)
            continue;
        if (!state || relabelled(&p->label, s->proc_seq[id - 1])) {
            int64_t pid;
            uint32_t number = id_proc_number(s->core.ids, id); /* this incarnation's */
            proc_name(p, number, name, sizeof(name), &pid, &s->proc_seq[id - 1]);
            /* A first name always (samples refer to it); a new name within the budget. */
            if ((!state || meta_budget_allows(&s->meta, NAME_RECORD_COST)) &&
                hvfxt_write_guest_process(&s->w, number, name, pid, err) < 0)
                return -1;
            if (!state)
                s->proc_named[id - 1] = state = 1;
        }
        if (state != 1)
            continue;
        /* Every source's first look at it (its modules): a guest showing a thousand new
         * address spaces at once is looked at over many passes. */
        int done = 1;
        for (size_t i = 0; i < s->nsrc && done == 1; i++) {
            const struct rec_source_ops *ops = s->src[i].ops;
            if (ops->process_named &&
                (done = ops->process_named(s->src[i].st, &s->env, id, p, err)) < 0) {
                hv_err_prefix(err, "recorder source %s", ops->name);
                return -1;
            }
        }
        if (done == 1)
            s->proc_named[id - 1] = 2;
    }
    for (uint32_t id = 1; id <= ID_MAX_THREADS; id++) {
        const struct id_thread *t = id_thread_at(s->core.ids, id);
        if (!t || (s->thread_named[id - 1] && !relabelled(&t->label, s->thread_seq[id - 1])))
            continue;
        int64_t tid;
        uint32_t number = id_thread_number(s->core.ids, id);
        thread_name(t, number, name, sizeof(name), &tid, &s->thread_seq[id - 1]);
        if (s->thread_named[id - 1] && !meta_budget_allows(&s->meta, NAME_RECORD_COST))
            continue;
        /* Its ids in its own pid namespace, where that is not the initial one (a container's):
         * as the exit path read them at its first stop, else from the task it saw it as, if
         * that is still this thread; its hostname and mount namespace from the task too. */
        struct guestos_ns ns = {0};
        uint64_t handle = atomic_load_explicit(&t->handle, memory_order_relaxed);
        bool read =
            tid >= 0 && s->mem && guestos_task_ns(&s->os, s->mem, handle, (int32_t)tid, &ns);
        int32_t ns_tid, ns_pid;
        uint32_t pidns, level;
        if (id_thread_ns(t, &ns_tid, &ns_pid, &pidns, &level)) {
            if (!read || ns.pidns != pidns)
                ns = (struct guestos_ns){.ns_tid = ns_tid, .ns_pid = ns_pid, .pidns = pidns};
            ns.level = level;
            read = true;
        }
        bool in_ns = read && ns.level > 0;
        struct hvfxt_thread_ns rec_ns = {ns.ns_tid, ns.ns_pid, ns.pidns, ns.mntns, ns.hostname};
        if (hvfxt_write_guest_thread(&s->w, number, id_proc_number(s->core.ids, t->proc), name, tid,
                                     in_ns ? &rec_ns : NULL, err) < 0)
            return -1;
        s->thread_named[id - 1] = 1;
    }
    return 0;
}
