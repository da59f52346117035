/* churn: processes and threads that come and go while others work (docs/test-guest.md,
 * "Processes that come and go"). Its main thread spawns churn_procs (default 2000) processes of
 * churn_child, keeping churn_live (default 4) alive at once, each waited for; beside it, thread
 * T creates churn_threads (default 2000) short-lived threads, churn_live at once, each with an
 * FS base of its own (0x100000000000 + k * 4096: a key of its own for an OS layer that knows
 * threads by their FS base, never dereferenced), each working in thread_work for churn_us
 * microseconds (default 300) before it exits. At the end one line:
 *   churn: pid=P procs=N threads=M failed=F elapsed_us=U
 * (failed: children that exited non-zero or could not be spawned after retries). */
#include "libc.h"
#include "work.h"

#define MAX_LIVE 16
#define FS_BASE0 0x100000000000ull

static uint64_t work_us;

NOINLINE uint64_t thread_leaf(uint64_t x)
{
    x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE void thread_work(void *arg)
{
    uint64_t until = now_us() + work_us, x = (uint64_t)arg;
    do
        x = thread_leaf(x);
    while (now_us() < until);
    KEEP(x);
}

struct threader {
    long total, live, made, failed;
};

/* Creates the short-lived threads, churn_live at a time, and joins each. */
NOINLINE void threader(void *arg)
{
    struct threader *t = arg;
    long tids[MAX_LIVE] = {0};
    for (long k = 0; k < t->total + t->live; k++) {
        long slot = k % t->live;
        if (tids[slot] > 0)
            thread_join(tids[slot]);
        tids[slot] = 0;
        if (k >= t->total)
            continue;
        long tid = -1;
        for (int tries = 0; tries < 1000 && tid < 0; tries++)
            if ((tid = thread_create(thread_work, (void *)k,
                                     (void *)(FS_BASE0 + (uint64_t)k * 4096))) < 0)
                yield();
        if (tid < 0)
            t->failed++;
        else
            t->made++;
        tids[slot] = tid;
    }
}

int main(void)
{
    long procs = param("churn_procs", 2000), live = param("churn_live", 4);
    work_us = (uint64_t)param("churn_us", 300);
    if (live < 1)
        live = 1;
    if (live > MAX_LIVE)
        live = MAX_LIVE;
    uint64_t t0 = now_us();
    struct threader th = {.total = param("churn_threads", 2000), .live = live};
    long ttid = thread_create(threader, &th, &th);
    long pids[MAX_LIVE] = {0}, made = 0, failed = 0;
    for (long k = 0; k < procs + live; k++) {
        long slot = k % live;
        if (pids[slot] > 0 && wait_pid(pids[slot]) != 0)
            failed++;
        pids[slot] = 0;
        if (k >= procs)
            continue;
        long pid = -1;
        for (int tries = 0; tries < 1000 && pid < 0; tries++)
            if ((pid = spawn("churn_child", k)) < 0)
                yield();
        if (pid < 0)
            failed++;
        else
            made++;
        pids[slot] = pid;
    }
    if (ttid > 0)
        thread_join(ttid);
    printf("churn: pid=%ld procs=%ld threads=%ld failed=%ld elapsed_us=%lu\n", getpid(), made,
           th.made, failed + th.failed + (ttid < 0), now_us() - t0);
    return failed + th.failed + (ttid < 0) ? 1 : 0;
}
