/* threads: two threads with their own FS bases (each pointing at its own struct tls, whose first
 * word points to itself, as x86-64 TLS does) doing distinct known chains until `seconds` pass:
 *   thread A: thread_start -> thread_a -> a_work -> a_leaf
 *   thread B: thread_start -> thread_b -> b_work -> b_leaf
 * while main blocks in thread_join. Each round checks %fs:0 == its own struct tls, which
 * fails if the kernel does not switch FS base with the thread. */
#include "libc.h"
#include "work.h"

struct tls {
    struct tls *self;
    uint64_t rounds;
    uint64_t fs_bad;
    uint64_t deadline_us;
};

static struct tls tls_a = {&tls_a, 0, 0, 0};
static struct tls tls_b = {&tls_b, 0, 0, 0};

NOINLINE uint64_t a_leaf(uint64_t x)
{
    x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t a_work(uint64_t x)
{
    x = a_leaf(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t b_leaf(uint64_t x)
{
    x = work_unit(x ^ 0x5a5a);
    KEEP(x);
    return x;
}

NOINLINE uint64_t b_work(uint64_t x)
{
    x = b_leaf(x);
    KEEP(x);
    return x;
}

NOINLINE void thread_a(void *arg)
{
    struct tls *me = arg;
    uint64_t x = 1;
    do { /* one round at least: on a slow host the thread may start after the deadline */
        x = a_work(x);
        me->rounds++;
        if (fs_read64(0) != (uint64_t)me)
            me->fs_bad++;
    } while (now_us() < me->deadline_us);
    KEEP(x);
}

NOINLINE void thread_b(void *arg)
{
    struct tls *me = arg;
    uint64_t x = 2;
    do { /* one round at least: on a slow host the thread may start after the deadline */
        x = b_work(x);
        me->rounds++;
        if (fs_read64(0) != (uint64_t)me)
            me->fs_bad++;
    } while (now_us() < me->deadline_us);
    KEEP(x);
}

int main(void)
{
    uint64_t deadline = now_us() + (uint64_t)param("seconds", 1) * 1000000;
    tls_a.deadline_us = tls_b.deadline_us = deadline;
    long ta = thread_create(thread_a, &tls_a, &tls_a);
    long tb = thread_create(thread_b, &tls_b, &tls_b);
    if (ta < 0 || tb < 0) {
        printf("threads: thread_create failed: %ld %ld\n", ta, tb);
        return 1;
    }
    long ja = thread_join(ta), jb = thread_join(tb);
    long seconds = param("seconds", 1);
    int ok = ja == 0 && jb == 0 && !tls_a.fs_bad && !tls_b.fs_bad &&
             ((tls_a.rounds && tls_b.rounds) || !seconds);
    printf("threads: pid=%ld a_rounds=%lu b_rounds=%lu fs_bad=%lu join=%ld,%ld ok=%d\n", getpid(),
           tls_a.rounds, tls_b.rounds, tls_a.fs_bad + tls_b.fs_bad, ja, jb, ok);
    return ok ? 0 : 1;
}
