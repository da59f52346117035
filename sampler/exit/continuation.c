/* RFC-0274 continuations on the exit path. Each guest thread has one shared slot (id_table.h):
 * a kernel-mode sample of a user thread opens a continuation there (or reuses the open one),
 * and the first exit on ANY vCPU that finds the thread back in user mode takes the slot (CAS)
 * and writes the completion. Each vCPU also keeps a local list of the continuations its own
 * samples carried: it re-checks often while the list is not empty, and abandons what stays
 * open too long. Whoever wins the CAS on the slot writes the single completion (with a stack,
 * or abandoned). */
#include "sampler/exit/continuation.h"

static void pending_drop(struct exit_vcpu *sv, struct exit_pending *p)
{
    p->used = false;
    sv->npend--;
}

static struct exit_pending *pending_find(struct exit_vcpu *sv, uint64_t id)
{
    for (unsigned i = 0; i < EXIT_MAX_PENDING; i++)
        if (sv->pend[i].used && sv->pend[i].id == id)
            return &sv->pend[i];
    return NULL;
}

/* A completion record without a stack: the thread never came back to user mode in time. */
static void write_abandoned(struct exit_vcpu *sv, const struct exit_pending *p, uint64_t now,
                            unsigned why)
{
    struct hvfxt_sample c = {
        .fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_PID | HVFXT_SF_TID |
                  HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_WALK,
        .completion = p->id,
        .pid = hvfxt_koid_guest_process(id_proc_number(sv->core->ids, p->proc)),
        .tid = hvfxt_koid_guest_thread(id_thread_number(sv->core->ids, p->thread)),
        .ts = now,
        .vcpu = sv->index,
        .walk = hvfxt_walk_word(HVFXT_STOP_NONE, why, 0, 0),
    };
    exit_emit(sv, &c);
    sv->st.abandoned++;
    if (why == HVFXT_STOP_ABANDONED_TIMEOUT)
        sv->st.abandoned_timeout++;
    else if (why == HVFXT_STOP_ABANDONED_END)
        sv->st.abandoned_end++;
    else
        sv->st.abandoned_full++;
}

/* Abandon p if it is still open (nobody completed it elsewhere), then forget it locally. */
static void pending_abandon(struct exit_vcpu *sv, struct exit_pending *p, uint64_t now,
                            unsigned why)
{
    _Atomic uint64_t *slot = id_thread_cont(sv->core->ids, p->thread);
    uint64_t expected = p->id;
    if (slot && atomic_compare_exchange_strong(slot, &expected, 0))
        write_abandoned(sv, p, now, why);
    pending_drop(sv, p);
}

/* Forget local entries completed elsewhere; abandon those open longer than the bound. The
 * bound counts this vCPU's ticks, not wall time: when the host does not run the vCPU thread
 * (missed ticks), the guest does not run either, and its threads get no older. */
void exit_conts_expire(struct exit_vcpu *sv, uint64_t now)
{
    uint64_t bound = sv->abandon_ticks;
    for (unsigned i = 0; i < EXIT_MAX_PENDING && sv->npend; i++) {
        struct exit_pending *p = &sv->pend[i];
        if (!p->used)
            continue;
        _Atomic uint64_t *slot = id_thread_cont(sv->core->ids, p->thread);
        if (!slot || atomic_load(slot) != p->id)
            pending_drop(sv, p);
        else if (sv->ticks_taken - p->opened_tick > bound)
            pending_abandon(sv, p, now, HVFXT_STOP_ABANDONED_TIMEOUT);
    }
}

/* The session ends with these threads still in the kernel: every continuation still open is
 * completed as abandoned, so no partial record is left without its completion. */
void exit_conts_end(struct exit_vcpu *sv, uint64_t now)
{
    for (unsigned i = 0; i < EXIT_MAX_PENDING && sv->npend; i++) {
        if (sv->pend[i].used)
            pending_abandon(sv, &sv->pend[i], now, HVFXT_STOP_ABANDONED_END);
    }
}

uint64_t exit_cont_take(struct exit_vcpu *sv, uint32_t thread)
{
    _Atomic uint64_t *slot = id_thread_cont(sv->core->ids, thread);
    uint64_t cont = slot ? atomic_load(slot) : 0;
    /* One winner if several vCPUs race for the same thread's return. */
    if (cont && !atomic_compare_exchange_strong(slot, &cont, 0))
        cont = 0;
    return cont;
}

void exit_cont_complete(struct exit_vcpu *sv, uint64_t cont, uint64_t pid, uint64_t tid,
                        uint64_t now, const struct gw_stack *ustack, uint64_t walk)
{
    /* RFC-0274 continuation_completion: this user stack completes every partial record that
     * carried `cont`, on whichever vCPU they were taken. */
    struct hvfxt_sample c = {
        .fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_PID | HVFXT_SF_TID |
                  HVFXT_SF_BOOT_TS | HVFXT_SF_USER_STACK | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_WALK,
        .completion = cont,
        .pid = pid,
        .tid = tid,
        .ts = now,
        .user_stack = ustack->pc,
        .n_user = ustack->count,
        .vcpu = sv->index,
        .cpl = 3,
        .walk = walk,
    };
    exit_emit(sv, &c);
    sv->st.completed++;
    struct exit_pending *p = pending_find(sv, cont);
    if (p)
        pending_drop(sv, p);
}

uint64_t exit_cont_fresh(struct exit_vcpu *sv)
{
    return ((uint64_t)sv->index << 56) | (++sv->cont_counter & ((1ull << 56) - 1));
}

void exit_cont_handed_off(struct exit_vcpu *sv, uint64_t cont)
{
    sv->st.completed++;
    struct exit_pending *p = pending_find(sv, cont);
    if (p)
        pending_drop(sv, p);
}

uint64_t exit_cont_open(struct exit_vcpu *sv, uint32_t proc, uint32_t thread, uint64_t now)
{
    sv->recheck_paused = false; /* a thread of ours is in the kernel here: look for its return */
    _Atomic uint64_t *slot = id_thread_cont(sv->core->ids, thread);
    if (!slot)
        return 0;
    uint64_t id = atomic_load(slot);
    if (id == 0) {
        uint64_t fresh = exit_cont_fresh(sv);
        uint64_t expected = 0;
        id = atomic_compare_exchange_strong(slot, &expected, fresh) ? fresh : expected;
    }
    if (id == 0)
        return 0;
    struct exit_pending *p = pending_find(sv, id);
    if (p) {
        p->samples++;
        return id;
    }
    struct exit_pending *free_slot = NULL, *oldest = NULL;
    for (unsigned i = 0; i < EXIT_MAX_PENDING; i++) {
        struct exit_pending *q = &sv->pend[i];
        if (!q->used) {
            if (!free_slot)
                free_slot = q;
        } else if (!oldest || q->opened_ns < oldest->opened_ns) {
            oldest = q;
        }
    }
    if (!free_slot) { /* every local slot busy: the oldest gives way, abandoned with the reason */
        pending_abandon(sv, oldest, now, HVFXT_STOP_ABANDONED_FULL);
        free_slot = oldest;
    }
    *free_slot = (struct exit_pending){
        .used = true,
        .id = id,
        .proc = proc,
        .thread = thread,
        .opened_ns = now,
        .opened_tick = sv->ticks_taken,
        .samples = 1,
    };
    sv->npend++;
    return id;
}
