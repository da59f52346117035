#include "report/fxt_load.h"

#include <inttypes.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/files.h"
#include "common/vector.h"
#include "schema/decode.h"
#include "schema/join.h"
#include "common/hashidx.h"

struct modmap {
    uint64_t id;
    uint32_t idx;
};

/* Completed user stacks appended to partial records, in frames, at most this many per 8-byte
 * word of the file (plus a floor): a hostile recording that names one long completion from many
 * small partial records cannot make the report's memory grow beyond a fixed factor of its input
 * (docs/reliability.md, "Report cost"). Real recordings stay far below: a completion is shared
 * by the few partial records of one kernel entry. */
#define COMPLETION_FRAMES_PER_WORD 4
#define COMPLETION_FRAMES_FLOOR    (1u << 20)

struct loader {
    struct profile *p;
    uint64_t completion_budget; /* frames left for completed stacks */
    struct hashidx mod_ids;     /* l->mods.v by recorded module id */
    struct fxt_load_stats *st;
    struct hv_err *err;
    struct hvfxt_join join; /* partial records and their completions */
    VECTOR(struct modmap) mods;
    uint64_t *addr; /* scratch frame arrays */
    uint32_t *flags;
    size_t cap;
    uint64_t *jaddr; /* a joined sample's frames: its partial record's, then its completion's */
    uint32_t *jflags;
    size_t jcap;
    bool hvprof_provider;
};

/* Room for n frames in a pair of arrays indexed alike: both grow to the same capacity
 * (common/vector.h). */
static int reserve_pair(struct loader *l, uint64_t **addr, uint32_t **flags, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t cap_a = *cap, cap_f = *cap;
    uint64_t *a = hv_vec_grow(*addr, &cap_a, n, sizeof(*a));
    if (a)
        *addr = a;
    uint32_t *f = hv_vec_grow(*flags, &cap_f, n, sizeof(*f));
    if (f)
        *flags = f;
    if (!a || !f)
        return hv_errk(l->err, HV_ERR_NO_MEMORY, "out of memory");
    *cap = cap_a < cap_f ? cap_a : cap_f;
    return 0;
}

static int reserve(struct loader *l, size_t n)
{
    return reserve_pair(l, &l->addr, &l->flags, &l->cap, n);
}

/* A string of the recording, its control characters shown as '?' (a hostile guest's names must
 * not drive a terminal; profile.c does the same for every name it keeps). */
static char *str_dup(struct fxtr_string s)
{
    char *c = malloc((size_t)s.len + 1);
    if (c) {
        memcpy(c, s.ptr, s.len);
        c[s.len] = 0;
        for (size_t i = 0; i < s.len; i++)
            if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f)
                c[i] = c[i] ? '?' : c[i];
    }
    return c;
}

static bool modmap_eq(const void *ctx, uint32_t idx)
{
    const struct loader *l = ((const struct loader *const *)ctx)[0];
    const uint64_t *id = ((const uint64_t *const *)ctx)[1];
    return l->mods.v[idx].id == *id;
}

/* The profile's module for a recorded module id, or PROF_NONE. */
static uint32_t modmap_find(const struct loader *l, uint64_t id)
{
    const void *ctx[2] = {l, &id};
    uint32_t i = hashidx_find(&l->mod_ids, hashidx_u64(HASHIDX_SEED, id), modmap_eq, ctx);
    return i == HASHIDX_NONE ? PROF_NONE : l->mods.v[i].idx;
}

/* A sample joined (schema/join.h): the partial record with the completed user stack. */
static int on_joined(void *ctx, const struct hvfxt_join_sample *s, const uint64_t *addr,
                     const uint32_t *flags, uint32_t n, struct hv_err *err)
{
    struct loader *l = ctx;
    /* The completed user stack goes after the partial record's frames, within the loader's
     * budget (the sample keeps its own frames when the budget is spent; the count says how
     * many were cut). One whole stack: an aggregating profile keys samples by it. */
    if (n > l->completion_budget) {
        l->st->completions_cut++;
        n = 0;
    }
    l->completion_budget -= n;
    if (reserve_pair(l, &l->jaddr, &l->jflags, &l->jcap, (size_t)s->n + n + 1) < 0)
        return -1;
    if (s->n) /* a flushed record's completion is NULL, 0 frames */
        memcpy(l->jaddr, s->addr, s->n * sizeof(*s->addr));
    if (n)
        memcpy(l->jaddr + s->n, addr, n * sizeof(*addr));
    uint32_t k = s->cpl == PROF_CPL_KERNEL ? PROF_FRAME_KERNEL : 0;
    for (uint32_t i = 0; i < s->n; i++)
        l->jflags[i] = s->flags ? s->flags[i] : i == 0 ? k : k | PROF_FRAME_RA;
    for (uint32_t i = 0; i < n; i++)
        l->jflags[s->n + i] = flags ? flags[i] : PROF_FRAME_RA;
    int si = profile_add_sample(l->p,
                                &(struct prof_sample_in){.ts = s->ts,
                                                         .group = profile_group_of(l->p, s->cgroup),
                                                         .vcpu = s->vcpu,
                                                         .pid = s->pid,
                                                         .tid = s->tid,
                                                         .cpl = s->cpl,
                                                         .addrs = l->jaddr,
                                                         .flags = l->jflags,
                                                         .n = s->n + n,
                                                         .weight = 1},
                                err);
    if (si < 0)
        return -1;
    l->st->samples++;
    return 0;
}

static int on_sample(struct loader *l, const struct fxtr_record *rec,
                     const struct hvfxt_sample_view *s)
{
    uint32_t n = 0;
    /* An exit event belongs to an exit profile, an off-CPU record to an off-CPU or wall-clock
     * one, a timer's sample to a timer or wall-clock profile. Completions go with the timer's
     * samples (exit events and off-CPU records carry their stacks whole). */
    bool exit_event = (s->fields & HVFXT_SF_EXIT) != 0;
    bool off_event = !exit_event && (s->fields & HVFXT_SF_OFF_CPU_NS) != 0;
    const struct profile *p = l->p;
    bool want = exit_event  ? p->exits
                : off_event ? p->off_cpu || p->wall
                            : !p->exits && !p->off_cpu;
    if (!want) {
        if (exit_event)
            l->st->exit_events_skipped++;
        else if (off_event)
            l->st->off_cpu_skipped++;
        else if (!(s->fields & HVFXT_SF_CONTINUATION_COMPLETION))
            l->st->samples_skipped++;
        return 0;
    }
    /* An off-CPU record's time, in whole microseconds (what its weight is): below one, none. */
    if (off_event && s->off_cpu_ns < 500)
        return 0;
    uint8_t cpl = (s->fields & HVFXT_SF_CPL) ? (uint8_t)s->cpl : PROF_CPL_USER;
    /* Stacks cut at the root end: the walk reached --max-depth, or frames were dropped to fit
     * the record (docs/fxt-samples.md, walk word). The report says how many. */
    if ((s->fields & HVFXT_SF_WALK) &&
        (hvfxt_walk_kernel_stop(s->walk) == HVFXT_STOP_MAX_DEPTH ||
         hvfxt_walk_user_stop(s->walk) == HVFXT_STOP_MAX_DEPTH ||
         (s->walk & (HVFXT_WALK_KERNEL_TRUNC | HVFXT_WALK_USER_TRUNC))))
        l->p->stacks_cut++;
    if (s->fields & HVFXT_SF_WALK) {
        /* Only walks that ran: a kernel walk in a kernel sample, a user walk where frames came. */
        if (s->fields & HVFXT_SF_KERNEL_STACK)
            l->p->callers[0][hvfxt_walk_kernel_caller(s->walk)]++;
        if ((s->fields & HVFXT_SF_USER_STACK) &&
            hvfxt_walk_user_stop(s->walk) != HVFXT_STOP_DEFERRED) /* not the entry PC alone */
            l->p->callers[1][hvfxt_walk_user_caller(s->walk)]++;
    }
    if (reserve(l, 3 + (size_t)s->kernel_stack.n + s->user_stack.n + s->py_stack.n +
                       s->rt_stack.n) < 0)
        return -1;
    /* Runtime frames first, as they were recorded (two entries each): profile_symbolize() has
     * their runtime merge them into the native stack (runtime/runtime.h). An older
     * recording's python_stack holds Python's. */
    struct fxtr_words rt = s->py_stack;
    unsigned runtime = HVFXT_RUNTIME_PYTHON;
    uint32_t from = 0;
    if (s->fields & HVFXT_SF_RUNTIME_STACK) {
        rt = s->rt_stack;
        runtime = (unsigned)fxtr_word(rt, 0); /* checked by the decoder */
        from = 1;
    }
    if (s->fields & (HVFXT_SF_RUNTIME_STACK | HVFXT_SF_PYTHON_STACK)) {
        uint64_t pid = (s->fields & HVFXT_SF_PID) ? s->pid : HVFXT_KOID_KERNEL_PROCESS;
        uint32_t id = PROF_FRAME_RT_RAW | PROF_FRAME_RT_ID_OF(runtime);
        for (uint32_t i = from; i + 1 < rt.n; i += 2) {
            /* Bound to the code object's record so far (its address may name another later). */
            uint64_t word = fxtr_word(rt, i);
            int64_t code = profile_code_latest(l->p, runtime, pid, word & HVFXT_RT_CODE_MASK);
            l->addr[n] = code >= 0 ? (uint64_t)code : word & HVFXT_RT_CODE_MASK;
            l->flags[n++] = id | (code >= 0 ? PROF_FRAME_RT_CODE : 0) |
                            ((word & HVFXT_RT_ENTRY) ? PROF_FRAME_RT_ENTRY : 0);
            l->addr[n] = fxtr_word(rt, i + 1);
            l->flags[n++] = id;
        }
        l->st->runtime_samples += n > 0;
    }
    if (off_event) {
        /* The leaf: the thread's state, named by the recording's HVFXT_OFF_CPU_MODULE. */
        l->addr[n] = hvfxt_off_cpu_frame((s->fields & HVFXT_SF_TASK_STATE) ? s->task_state
                                                                           : HVFXT_TASK_STATES);
        l->flags[n++] = PROF_FRAME_KERNEL;
    }
    if (s->fields & HVFXT_SF_PC) {
        l->addr[n] = s->pc;
        l->flags[n++] = cpl == PROF_CPL_KERNEL ? PROF_FRAME_KERNEL : 0;
    }
    if (s->fields & HVFXT_SF_KERNEL_STACK) {
        for (uint32_t i = 0; i < s->kernel_stack.n; i++) {
            uint64_t a = fxtr_word(s->kernel_stack, i);
            /* The sampler stores guestwalk's whole array, whose entry 0 is the exact pc. */
            if (i == 0 && (s->fields & HVFXT_SF_PC) && a == s->pc)
                continue;
            l->addr[n] = a;
            /* Past an interrupt frame the pc is exact (schema.h, walk word). */
            bool exact = (s->fields & HVFXT_SF_WALK) && hvfxt_walk_kernel_frame_exact(s->walk, i);
            l->flags[n++] = PROF_FRAME_KERNEL | (exact ? 0 : PROF_FRAME_RA);
        }
    }
    uint32_t user_from = n;
    if (s->fields & HVFXT_SF_USER_STACK) {
        for (uint32_t i = 0; i < s->user_stack.n; i++) {
            uint64_t a = fxtr_word(s->user_stack, i);
            if (i == 0 && cpl != PROF_CPL_KERNEL && (s->fields & HVFXT_SF_PC) && a == s->pc)
                continue;
            l->addr[n] = a;
            l->flags[n++] = PROF_FRAME_RA;
        }
    }
    bool completion = (s->fields & HVFXT_SF_CONTINUATION_COMPLETION) != 0;
    if (completion) {
        l->st->completions++;
        /* Append the user frames to every earlier record of this vCPU stream announcing the id;
         * the first is the interrupted user pc, since those partial records are at CPL 0. */
        if (n > 0)
            l->flags[0] &= ~PROF_FRAME_RA;
        if (hvfxt_join_complete(&l->join, s->completion, l->addr, l->flags, n, l->err) < 0)
            return -1;
        /* A completion that is also a full sample (pc present) is not expected; ignore it. */
        return 0;
    }
    if (cpl == PROF_CPL_KERNEL && n > user_from)
        l->flags[user_from] &= ~PROF_FRAME_RA; /* user pc saved at kernel entry */
    uint64_t ts = (s->fields & HVFXT_SF_BOOT_TS) ? s->ts : 0;
    uint32_t vcpu =
        (s->fields & HVFXT_SF_VCPU) ? (uint32_t)s->vcpu : (rec->provider ? rec->provider - 1 : 0);
    uint64_t pid = (s->fields & HVFXT_SF_PID) ? s->pid : HVFXT_KOID_KERNEL_PROCESS;
    uint64_t tid = (s->fields & HVFXT_SF_TID) ? s->tid : 0;
    uint64_t cgroup = (s->fields & HVFXT_SF_CGROUP) ? s->cgroup : 0;
    if (s->fields & HVFXT_SF_CONTINUATION) {
        struct hvfxt_join_sample js = {.ts = ts,
                                       .cgroup = cgroup,
                                       .pid = pid,
                                       .tid = tid,
                                       .vcpu = vcpu,
                                       .cpl = cpl,
                                       .addr = l->addr,
                                       .flags = l->flags,
                                       .n = n,
                                       /* The exact user PC is here already: a kernel
                                        * sample's at entry, or a user-mode sample's own
                                        * (its callers walked later from a copy). */
                                       .entry_pc =
                                           n > user_from || (cpl != PROF_CPL_KERNEL && n > 0)};
        return hvfxt_join_partial(&l->join, s->continuation, &js, l->err);
    }
    if (exit_event) {
        /* Rooted at its site's frame, named by the recording's HVFXT_EXIT_MODULE. */
        l->addr[n] = hvfxt_exit_frame(s->exit_site);
        l->flags[n++] = PROF_FRAME_KERNEL;
    }
    uint64_t weight = off_event ? (s->off_cpu_ns + 500) / 1000 : 1;
    int si = profile_add_sample(
        l->p,
        &(struct prof_sample_in){.ts = ts,
                                 .group = profile_group_of(l->p, cgroup),
                                 .vcpu = vcpu,
                                 .pid = pid,
                                 .tid = tid,
                                 .cpl = cpl,
                                 .addrs = l->addr,
                                 .flags = l->flags,
                                 .n = n,
                                 .weight = weight,
                                 .off_cpu_ns = off_event ? s->off_cpu_ns : 0,
                                 .exit_ns =
                                     exit_event && (s->fields & HVFXT_SF_EXIT_NS) ? s->exit_ns : 0},
        l->err);
    if (si < 0)
        return -1;
    l->st->samples++;
    return 0;
}

static int on_module(struct loader *l, const struct hvfxt_module_view *m)
{
    char *name = str_dup(m->name);
    if (!name)
        return hv_errk(l->err, HV_ERR_NO_MEMORY, "out of memory");
    /* A module record for an id already seen renames that module (the recorder found its path
     * after it had recorded it by soname). */
    uint32_t known = modmap_find(l, m->id);
    if (known != PROF_NONE) {
        struct prof_module *pm = &l->p->modules.v[known];
        free(pm->name);
        pm->name = name;
        return 0;
    }
    int idx = profile_add_module(l->p, name, m->build_id, m->build_id_len, false, l->err);
    free(name);
    if (idx < 0)
        return -1;
    if (!vec_reserve(&l->mods, 1))
        return hv_errk(l->err, HV_ERR_NO_MEMORY, "out of memory");
    l->mods.v[l->mods.n] = (struct modmap){m->id, (uint32_t)idx};
    if (hashidx_insert(&l->mod_ids, hashidx_u64(HASHIDX_SEED, m->id), (uint32_t)l->mods.n) < 0)
        return hv_errk(l->err, HV_ERR_NO_MEMORY, "out of memory");
    l->mods.n++;
    l->st->modules++;
    return 0;
}

/* A module's symbols carried in the recording (a guest kernel's, read from its memory at record
 * time): into the module's symbol table, which symbol files given later replace. */
static int on_symbols(struct loader *l, const struct hvfxt_symbols_view *v)
{
    uint32_t idx = modmap_find(l, v->module_id);
    if (idx == PROF_NONE)
        return hv_errk(l->err, HV_ERR_CORRUPT, "symbol record names unknown module %" PRIu64,
                       v->module_id);
    struct prof_module *m = &l->p->modules.v[idx];
    uint32_t i = 0, pos = 0;
    uint64_t addr;
    char type;
    const char *name;
    size_t len;
    while (hvfxt_symbols_next(v, &i, &pos, &addr, &type, &name, &len)) {
        /* Aliases: a global name wins over a weak one, a weak one over a local (symtab.h). */
        uint8_t strength = type == 'T' ? 2 : (type == 'W' || type == 'w') ? 1 : 0;
        if (sym_source_add(&m->src, addr, name, len, strength, l->err) < 0)
            return -1;
    }
    l->st->symbols += v->count;
    return 0;
}

static int on_mapping(struct loader *l, const struct hvfxt_mapping *m)
{
    uint32_t idx = modmap_find(l, m->module_id);
    if (idx == PROF_NONE)
        return hv_errk(l->err, HV_ERR_CORRUPT,
                       "mapping at 0x%" PRIx64 " names unknown module %" PRIu64, m->start,
                       m->module_id);
    /* Guest address space 0 is the guest kernel's (docs/fxt-samples.md section 4): its mappings
     * apply to kernel frames of every process. */
    bool kernel = m->pid == HVFXT_KOID_KERNEL_PROCESS;
    if (kernel)
        l->p->modules.v[idx].kernel = true;
    l->st->mappings++;
    /* Without the recorder's file offset it is fixed up once all mappings of the module are
     * known. */
    int at = profile_add_mapping(l->p, kernel ? PROF_PID_ANY : m->pid, m->start, m->size,
                                 m->start - m->vaddr,
                                 m->has_file_offset ? m->file_offset : m->vaddr, idx, l->err);
    if (at < 0)
        return -1;
    l->p->mappings.v[at].file_offset_known = m->has_file_offset;
    return 0;
}

static void on_kobj(struct loader *l, const struct fxtr_record *rec)
{
    uint64_t koid = rec->u.kobj.koid;
    char *name = str_dup(rec->u.kobj.name);
    if (!name)
        return;
    /* The guest's own pid / tid (docs/fxt-samples.md section 4): a signed 64-bit argument in
     * the range of Linux pids; anything else is ignored. */
    int64_t guest_id = -1, ns_tid = -1, ns_pid = -1;
    uint64_t process = 0, pid_ns = 0;
    char hostname[72] = "";
    for (unsigned i = 0; i < rec->u.kobj.nargs; i++) {
        const struct fxtr_arg *a = &rec->u.kobj.args[i];
        bool id = a->type == FXTR_ARG_I64 && a->v.i >= 0 && a->v.i <= INT32_MAX;
        if (a->type == FXTR_ARG_KOID && fxtr_str_is(a->name, "process"))
            process = a->v.u;
        else if (id && fxtr_str_is(a->name, HVFXT_ARG_NS_TID))
            ns_tid = a->v.i;
        else if (id && fxtr_str_is(a->name, HVFXT_ARG_NS_PID))
            ns_pid = a->v.i;
        else if (a->type == FXTR_ARG_U64 && fxtr_str_is(a->name, HVFXT_ARG_PID_NS))
            pid_ns = a->v.u;
        else if (a->type == FXTR_ARG_STRING && fxtr_str_is(a->name, HVFXT_ARG_HOSTNAME))
            snprintf(hostname, sizeof(hostname), "%.*s", (int)(a->v.s.len < 64 ? a->v.s.len : 64),
                     a->v.s.ptr);
        else if (a->type == FXTR_ARG_I64 && a->v.i >= 0 && a->v.i <= INT32_MAX &&
                 (fxtr_str_is(a->name, HVFXT_ARG_GUEST_PID) ||
                  fxtr_str_is(a->name, HVFXT_ARG_GUEST_TID)))
            guest_id = a->v.i;
    }
    if (rec->u.kobj.obj_type == 1 && hvfxt_koid_is_guest_process(koid))
        profile_set_name(l->p, koid, 0, name, guest_id, NULL);
    else if (rec->u.kobj.obj_type == 2 && hvfxt_koid_is_guest_thread(koid) && process &&
             profile_set_name(l->p, process, koid, name, guest_id, NULL) == 0 && ns_tid >= 0 &&
             ns_pid >= 0 && pid_ns)
        profile_set_ns(l->p, process, koid, ns_tid, ns_pid, pid_ns, hostname, NULL);
    else if (rec->u.kobj.obj_type == 17 /* ZX_OBJ_TYPE_JOB: a cgroup */ &&
             hvfxt_koid_is_group(koid))
        profile_add_group(l->p, koid, name, NULL);
    free(name);
}

/* A string argument into a fixed buffer, cut to fit and made printable. */
static void header_str(char *dst, size_t cap, const struct fxtr_arg *a)
{
    size_t n = a->v.s.len < cap - 1 ? a->v.s.len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)a->v.s.ptr[i];
        dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    dst[n] = 0;
}

/* What the recording says of itself (profile.header, `report --header`). */
static void on_header(struct prof_header *h, const struct fxtr_record *rec)
{
    bool start = fxtr_str_is(rec->u.event.name, HVFXT_SESSION_START);
    bool info = fxtr_str_is(rec->u.event.name, HVFXT_SESSION_INFO);
    bool kernel = fxtr_str_is(rec->u.event.name, HVFXT_GUEST_KERNEL);
    if (fxtr_str_is(rec->u.event.name, HVFXT_SESSION_STOP))
        h->stop_ts = rec->u.event.ts;
    for (unsigned i = 0; i < rec->u.event.nargs; i++) {
        const struct fxtr_arg *a = &rec->u.event.args[i];
        bool str = a->type == FXTR_ARG_STRING;
        uint64_t v = a->type == FXTR_ARG_I32 || a->type == FXTR_ARG_I64 ? (uint64_t)a->v.i : a->v.u;
        if (start && str && fxtr_str_is(a->name, "guest"))
            header_str(h->guest, sizeof(h->guest), a);
        else if (start && str && fxtr_str_is(a->name, "mode"))
            header_str(h->mode, sizeof(h->mode), a);
        else if (start && !str && fxtr_str_is(a->name, HVFXT_ARG_HZ))
            h->hz = v;
        else if (start && !str && fxtr_str_is(a->name, "vcpus"))
            h->vcpus = (uint32_t)v;
        else if (start && fxtr_str_is(a->name, "exit_stacks_every"))
            h->exit_events = true;
        else if (start && fxtr_str_is(a->name, "off_cpu_hz"))
            h->off_cpu = true;
        else if (info && str && fxtr_str_is(a->name, HVFXT_ARG_VERSION))
            header_str(h->version, sizeof(h->version), a);
        else if (info && str && fxtr_str_is(a->name, HVFXT_ARG_COMMAND))
            header_str(h->command, sizeof(h->command), a);
        else if (info && !str && fxtr_str_is(a->name, HVFXT_ARG_START_UNIX_NS))
            h->start_unix_ns = v;
        else if (kernel && str && fxtr_str_is(a->name, HVFXT_ARG_OSRELEASE))
            header_str(h->osrelease, sizeof(h->osrelease), a);
    }
}

/* Session settings travel as arguments of the session markers. */
static void on_event(struct loader *l, const struct fxtr_record *rec)
{
    on_header(&l->p->header, rec);
    /* session_start carries the settings; session_stop what is known only at the end (the
     * guest's MSR_LSTAR, for a Linux guest's KASLR slide). */
    if (fxtr_str_is(rec->u.event.name, HVFXT_SESSION_STOP))
        l->st->session_stop = true;
    if (fxtr_str_is(rec->u.event.name, HVFXT_GUEST_PANIC) && !l->st->panic) {
        l->st->panic = true;
        l->st->panic_ts = rec->u.event.ts;
        for (unsigned i = 0; i < rec->u.event.nargs; i++)
            if (fxtr_str_is(rec->u.event.args[i].name, HVFXT_ARG_CPU))
                l->st->panic_cpu = (uint32_t)rec->u.event.args[i].v.u;
        return;
    }
    if (fxtr_str_is(rec->u.event.name, HVFXT_IDENTITY_ENDED)) {
        for (unsigned i = 0; i < rec->u.event.nargs; i++)
            if (fxtr_str_is(rec->u.event.args[i].name, HVFXT_ARG_THREAD))
                l->st->threads_ended++;
            else if (fxtr_str_is(rec->u.event.args[i].name, HVFXT_ARG_PROCESS) &&
                     rec->u.event.nargs == 1)
                l->st->processes_ended++;
        return;
    }
    if (fxtr_str_is(rec->u.event.name, HVFXT_VCPU_STEAL)) {
        struct prof_steal st = {.ts = rec->u.event.ts, .vcpu = UINT32_MAX};
        bool have_ns = false;
        for (unsigned i = 0; i < rec->u.event.nargs; i++) {
            const struct fxtr_arg *a = &rec->u.event.args[i];
            if (fxtr_str_is(a->name, HVFXT_ARG_VCPU) && a->type == FXTR_ARG_U32)
                st.vcpu = (uint32_t)a->v.u;
            else if (fxtr_str_is(a->name, HVFXT_ARG_STEAL_NS) && a->type == FXTR_ARG_U64) {
                st.steal_ns = a->v.u;
                have_ns = true;
            }
        }
        /* One without both is not hvprof's: left out, as an unknown record would be. Out of
         * memory, the timeline lacks its steal counters and nothing else. */
        if (st.vcpu < HVFXT_MAX_VCPUS && have_ns)
            (void)vec_append(&l->p->steal, st);
        return;
    }
    if (fxtr_str_is(rec->u.event.name, HVFXT_SESSION_START) && !l->p->start_ts)
        l->p->start_ts = rec->u.event.ts;
    if (!fxtr_str_is(rec->u.event.name, HVFXT_SESSION_START) &&
        !fxtr_str_is(rec->u.event.name, HVFXT_SESSION_STOP))
        return;
    for (unsigned i = 0; i < rec->u.event.nargs; i++) {
        const struct fxtr_arg *a = &rec->u.event.args[i];
        if (a->type == FXTR_ARG_STRING && fxtr_str_is(a->name, HVFXT_ARG_SYMBOL_DIR) &&
            a->v.s.len > 0 && a->v.s.len < sizeof(l->p->symbol_dir)) {
            memcpy(l->p->symbol_dir, a->v.s.ptr, a->v.s.len);
            l->p->symbol_dir[a->v.s.len] = '\0';
            continue;
        }
        if (a->type < FXTR_ARG_I32 || a->type > FXTR_ARG_U64) /* integer arguments only */
            continue;
        uint64_t v = a->type == FXTR_ARG_I32 || a->type == FXTR_ARG_I64 ? (uint64_t)a->v.i : a->v.u;
        if (fxtr_str_is(a->name, HVFXT_ARG_PERIOD_NS))
            l->p->period_ns = v;
        else if (fxtr_str_is(a->name, HVFXT_ARG_HZ) && v && !l->p->period_ns)
            l->p->period_ns = 1000000000ull / v; /* the sampler's setting (sampler/sampler.c) */
        else if ((fxtr_str_is(a->name, HVFXT_ARG_LSTAR) || fxtr_str_is(a->name, "msr_lstar")) && v)
            l->p->kernel_lstar = v;
    }
}

/* pprof wants the file offset of each mapping's start: the module's lowest mapped vaddr is its
 * ELF header (file offset 0), so offset = vaddr - that. */
static int fix_file_offsets(struct profile *p, struct hv_err *err)
{
    /* One pass for every module's lowest link address, one to apply it: O(mappings). */
    uint64_t *lo = malloc((p->modules.n ? p->modules.n : 1) * sizeof(*lo));
    if (!lo)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < p->modules.n; i++)
        lo[i] = UINT64_MAX;
    for (size_t j = 0; j < p->mappings.n; j++) {
        const struct prof_mapping *m = &p->mappings.v[j];
        if (m->start - m->bias < lo[m->module])
            lo[m->module] = m->start - m->bias;
    }
    for (size_t i = 0; i < p->mappings.n; i++)
        if (!p->mappings.v[i].file_offset_known)
            p->mappings.v[i].file_offset -= lo[p->mappings.v[i].module];
    free(lo);
    return 0;
}

/* A recording read part by part (docs/report.md, "Memory"): a window of the file, the whole
 * records at its start given to the reader, the rest moved to the front when it gets there, so
 * that a report holds its profile, not the file. */
#define WINDOW_BYTES (64u << 20)

struct window {
    int fd;
    uint8_t *buf;
    size_t cap, len;   /* bytes held: buf[0..len) */
    size_t base;       /* the file offset of buf[0] */
    size_t whole;      /* buf[0..whole) is whole records */
    size_t file_bytes; /* the file's size when opened (progress, budgets) */
    bool eof;
    struct hv_err *err;
};

/* More of the file after the reader consumed `used` bytes of the window; -1 on a read error. */
static int window_refill(struct window *w, struct fxtr_reader *r, size_t used)
{
    size_t keep = w->len - used;
    memmove(w->buf, w->buf + used, keep);
    w->base += used;
    w->len = keep;
    /* A record longer than the window (its header says how long) gets a window of its size. */
    if (keep >= 8) {
        uint64_t h;
        memcpy(&h, w->buf, 8);
        uint64_t words = (h & 0xf) == 15 ? (h >> 4) & 0xffffffffull : (h >> 4) & 0xfff;
        size_t need = (size_t)(words * 8 < w->file_bytes ? words * 8 : w->file_bytes);
        if (need > w->cap) {
            uint8_t *nb = realloc(w->buf, need);
            if (!nb)
                return hv_errk(w->err, HV_ERR_NO_MEMORY, "out of memory");
            w->buf = nb;
            w->cap = need;
        }
    }
    while (!w->eof && w->len < w->cap) {
        ssize_t n = read(w->fd, w->buf + w->len, w->cap - w->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return hv_errf_errno(w->err, "read");
        if (n == 0)
            w->eof = true; /* a file that shrank reads as its prefix */
        w->len += (size_t)n;
    }
    w->whole = fxtr_whole_records(w->buf, w->len);
    if (w->eof)
        w->whole = w->len; /* the reader reports what is cut at the end */
    fxtr_rebase(r, w->buf, w->len, w->base);
    return 0;
}

static int load(const void *buf, size_t len, struct window *w, struct profile *p,
                struct fxt_load_stats *st, void (*progress)(void *ctx, size_t done, size_t total),
                void *ctx, struct hv_err *err);

int fxt_load_profile(const void *buf, size_t len, struct profile *p, struct fxt_load_stats *st,
                     void (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                     struct hv_err *err)
{
    return load(buf, len, NULL, p, st, progress, ctx, err);
}

/* buf[0..len): the whole recording, or (w) the window's first part, len then the file's size. */
static int load(const void *buf, size_t len, struct window *w, struct profile *p,
                struct fxt_load_stats *st, void (*progress)(void *ctx, size_t done, size_t total),
                void *ctx, struct hv_err *err)
{
    static const uint8_t magic[8] = {0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00};
    struct fxt_load_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof(*st));
    if ((w ? w->len : len) < 8 || memcmp(buf, magic, 8))
        return hv_errk(err, HV_ERR_CORRUPT,
                       "not an hvprof recording: no FXT magic record at the start "
                       "(hvprof record writes Fuchsia Trace Format files)");
    struct loader l = {.p = p,
                       .st = st,
                       .err = err,
                       .completion_budget = COMPLETION_FRAMES_PER_WORD * (uint64_t)(len / 8) +
                                            COMPLETION_FRAMES_FLOOR};
    hashidx_init(&l.mod_ids);
    if (hvfxt_join_init(&l.join, on_joined, &l, err) < 0)
        return -1;
    struct fxtr_reader r;
    fxtr_init(&r, buf, w ? w->len : len);
    struct hvfxt_record *x = malloc(sizeof(*x));
    if (!x) {
        hvfxt_join_free(&l.join);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    const struct fxtr_record *rec = &x->fxt;
    int rc, out = -1;
    size_t next_progress = 0;
    for (;;) {
        if (w && r.off >= w->whole && !w->eof && window_refill(w, &r, r.off) < 0)
            goto done;
        if ((rc = hvfxt_next(&r, x, err)) != 1)
            break;
        st->records++;
        if (progress && rec->offset >= next_progress) {
            progress(ctx, rec->offset, len);
            next_progress = rec->offset + (len / 100 > 1 ? len / 100 : 1);
        }
        if (rec->unknown)
            continue;
        switch (x->kind) {
        case HVFXT_REC_SAMPLE:
            if (on_sample(&l, rec, &x->u.sample) < 0)
                goto done;
            continue;
        case HVFXT_REC_MODULE:
            if (on_module(&l, &x->u.module) < 0)
                goto done;
            continue;
        case HVFXT_REC_MAPPING:
            if (on_mapping(&l, &x->u.mapping) < 0)
                goto done;
            continue;
        case HVFXT_REC_SYMBOLS:
            if (on_symbols(&l, &x->u.symbols) < 0)
                goto done;
            continue;
        case HVFXT_REC_CODE:
            if (profile_add_code(p, &x->u.code, l.err) < 0)
                goto done;
            st->runtime_codes++;
            continue;
        case HVFXT_REC_LOSS:
            st->loss_records++;
            st->dropped += x->u.loss.dropped;
            continue;
        case HVFXT_REC_OVERWRITE:
            st->overwritten += x->u.loss.dropped;
            continue;
        default:
            break;
        }
        switch (rec->type) {
        case FXTR_METADATA:
            if (rec->u.meta.mtype == 1 && rec->u.meta.provider_id == HVFXT_CONTROL_PROVIDER &&
                fxtr_str_is(rec->u.meta.name, HVFXT_CONTROL_PROVIDER_NAME))
                l.hvprof_provider = true;
            break;
        case FXTR_INIT:
            p->ticks_per_sec = rec->u.init.ticks_per_second;
            break;
        case FXTR_KOBJ:
            on_kobj(&l, rec);
            break;
        case FXTR_EVENT:
            on_event(&l, rec);
            break;
        default:
            break;
        }
    }
    st->cut = r.cut;
    st->cut_offset = r.cut_offset;
    st->cut_have = r.cut_have;
    st->cut_need = r.cut_need;
    st->file_bytes = r.cut ? r.cut_offset + r.cut_have : 0;
    if (rc < 0) {
        hv_err_prefix(err, "malformed recording");
        goto done;
    }
    if (!l.hvprof_provider && r.cut) {
        hv_errk(err, HV_ERR_CORRUPT,
                "cut at byte %zu, inside its first records (before hvprof's provider record): "
                "nothing to report",
                r.cut_offset + r.cut_have);
        goto done;
    }
    if (!l.hvprof_provider) {
        hv_errk(err, HV_ERR_CORRUPT,
                "not an hvprof recording: an FXT file without hvprof's provider 0 'hvprof'");
        goto done;
    }
    /* Partial records whose completion never came keep their kernel part. */
    if (hvfxt_join_flush(&l.join, err) < 0)
        goto done;
    st->partial_without_completion = l.join.unjoined;
    /* A wall-clock profile weighs each sample taken on the CPU by the sampling period, in
     * microseconds as its off-CPU records are. */
    p->weight_us = p->off_cpu || p->wall;
    if (p->wall) {
        uint64_t us = p->period_ns ? (p->period_ns + 500) / 1000 : 1;
        for (size_t i = 0; i < p->samples.n; i++)
            if (!p->samples.v[i].off_cpu_ns)
                p->samples.v[i].weight *= us ? us : 1;
    }
    if (fix_file_offsets(p, err) < 0)
        goto done;
    /* Address space 0 is the guest kernel's (docs/fxt-samples.md section 4). */
    for (size_t i = 0; i < p->modules.n; i++)
        sym_source_finish(&p->modules.v[i].src);
    if (!strcmp(profile_process_name(p, HVFXT_KOID_KERNEL_PROCESS), "[unknown]") &&
        profile_set_name(p, HVFXT_KOID_KERNEL_PROCESS, 0, "[kernel]", -1, err) < 0)
        goto done;
    if (profile_link_processes(p, err) < 0)
        goto done;
    if (progress)
        progress(ctx, len, len);
    out = 0;
done:
    hvfxt_join_free(&l.join);
    vec_free(&l.mods);
    hashidx_free(&l.mod_ids);
    free(l.addr);
    free(l.jaddr);
    free(l.jflags);
    free(l.flags);
    free(x);
    fxtr_free(&r);
    return out;
}

int fxt_load_profile_file(const char *path, struct profile *p, struct fxt_load_stats *st,
                          void (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                          struct hv_err *err)
{
    struct window w = {.fd = hv_open_input(path, err), .err = err};
    struct stat sb;
    if (w.fd < 0)
        return -1;
    if (fstat(w.fd, &sb) < 0) {
        hv_errf_errno(err, "%s: stat", path);
        close(w.fd);
        return -1;
    }
    /* A block device says no size: a record may then take up to 1 GiB of window. */
    w.file_bytes = S_ISREG(sb.st_mode) ? (size_t)sb.st_size : (size_t)1 << 30;
    w.cap = WINDOW_BYTES;
    w.buf = malloc(w.cap);
    struct fxtr_reader probe; /* window_refill rebases a reader: this one only fills it */
    fxtr_init(&probe, NULL, 0);
    int rc = -1;
    if (!w.buf)
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    else if (window_refill(&w, &probe, 0) == 0)
        rc =
            load(w.buf, w.file_bytes > w.len ? w.file_bytes : w.len, &w, p, st, progress, ctx, err);
    fxtr_free(&probe);
    free(w.buf);
    close(w.fd);
    if (rc < 0)
        hv_err_prefix(err, "%s", path);
    return rc;
}
