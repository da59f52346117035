/* Every thread of a Linux guest, as an off-CPU visit lists them (guestos/linux/threads.h), from a
 * synthetic guest (threads_guest.h): the thread groups on init_task's list and their threads on
 * signal->thread_head, each with its state as /proc/PID/stat reports it, its counters, its
 * identity as the exit path gives it, the registers it resumes with and those it entered the
 * kernel with (pt_regs with and without FRED's padding); whether it ran since; and hostile lists
 * (a cycle that misses its head, a pointer into the user half, lists past every bound). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/tests/threads_guest.h"

#define MAX_SEEN 64

struct seen {
    struct guestos_thread t[MAX_SEEN];
    unsigned n;
    unsigned stop_after; /* 0: never */
};

static int collect(void *ctx, const struct guestos_thread *t)
{
    struct seen *s = ctx;
    if (s->n < MAX_SEEN)
        s->t[s->n] = *t;
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

static long visit(struct tg *x, struct seen *s, size_t max)
{
    char why[128];
    memset(s->t, 0, sizeof(s->t));
    s->n = 0;
    return lx_threads_each(&x->t, collect, s, max, why, sizeof(why));
}

static void test_states(void **state)
{
    (void)state;
    /* include/linux/sched.h's bits, fs/proc/array.c's letters. */
    assert_int_equal(lx_thread_state(0, 0), GUESTOS_THREAD_RUNNABLE);
    assert_int_equal(lx_thread_state(1, 0), GUESTOS_THREAD_SLEEPING);
    assert_int_equal(lx_thread_state(2, 0), GUESTOS_THREAD_DISK_SLEEP);
    assert_int_equal(lx_thread_state(0x102, 0), GUESTOS_THREAD_DISK_SLEEP); /* TASK_KILLABLE */
    assert_int_equal(lx_thread_state(4, 0), GUESTOS_THREAD_STOPPED);
    assert_int_equal(lx_thread_state(8, 0), GUESTOS_THREAD_TRACED);
    assert_int_equal(lx_thread_state(0, 16), GUESTOS_THREAD_DEAD);
    assert_int_equal(lx_thread_state(0, 32), GUESTOS_THREAD_ZOMBIE);
    assert_int_equal(lx_thread_state(0x40, 0), GUESTOS_THREAD_PARKED);
    assert_int_equal(lx_thread_state(0x402, 0), GUESTOS_THREAD_IDLE);        /* TASK_IDLE */
    assert_int_equal(lx_thread_state(0x1000, 0), GUESTOS_THREAD_DISK_SLEEP); /* RTLOCK_WAIT */
    /* Bits past TASK_REPORT (TASK_WAKING, TASK_NEW) do not make a state of their own. */
    assert_int_equal(lx_thread_state(0x200, 0), GUESTOS_THREAD_RUNNABLE);
    assert_int_equal(lx_thread_state(0xffffffffu, 0), GUESTOS_THREAD_IDLE);
}

static void test_threads(void **state)
{
    (void)state;
    struct tg x;
    assert_int_equal(tg_build(&x, false), 0);
    struct seen s;
    assert_int_equal(visit(&x, &s, 100), 4);
    assert_int_equal(s.n, 4);
    const struct guestos_thread *a = &s.t[0], *b = &s.t[1], *k = &s.t[2], *z = &s.t[3];
    /* The leader and its thread: one process, each its own thread, the leader's name. */
    assert_int_equal(a->task.pid, 100);
    assert_int_equal(a->task.tid, 100);
    assert_int_equal(b->task.pid, 100);
    assert_int_equal(b->task.tid, 101);
    assert_string_equal(a->task.comm, "server");
    assert_string_equal(b->task.comm, "server-io");
    assert_string_equal(b->task.process, "server");
    assert_false(a->task.kthread);
    assert_int_equal(a->state, GUESTOS_THREAD_SLEEPING);
    assert_int_equal(b->state, GUESTOS_THREAD_DISK_SLEEP);
    assert_int_equal(b->cpu, 1);
    assert_int_equal(a->cpu_ns, 5000000);
    assert_int_equal(b->cpu_ns, 7000000);
    assert_int_equal(a->switches, 41); /* nvcsw + nivcsw */
    assert_false(a->on_cpu);
    assert_int_equal(a->handle, TG_TASK(1));
    assert_int_equal(a->resume_sp, TG_STACK(1) + 0x2000);
    /* The exit path's identity: tgid in the address space mm->pgd gives. */
    assert_int_equal(a->as.root, TG_PGD_GPA);
    assert_int_equal(a->proc_key, lx_process_key(100, TG_PGD_GPA));
    assert_int_equal(b->proc_key, a->proc_key);
    assert_int_equal(a->thread_key, 100);
    assert_int_equal(b->thread_key, 101);
    assert_int_equal(a->task.kstack, TG_STACK(1));
    /* A kernel thread: its own process, no address space. */
    assert_int_equal(k->task.tid, 2);
    assert_true(k->task.kthread);
    assert_int_equal(k->state, GUESTOS_THREAD_IDLE);
    assert_int_equal(k->as.root, 0);
    assert_int_equal(k->proc_key, GUESTOS_KEY_NOT_ROOT | 2);
    /* A zombie has no mm either: the exit path's identity for one past exit_mm(). */
    assert_int_equal(z->state, GUESTOS_THREAD_ZOMBIE);
    assert_int_equal(z->proc_key, GUESTOS_KEY_NOT_ROOT | 300);
    /* At most max, and fn stops the visit. */
    assert_int_equal(visit(&x, &s, 2), 2);
    s.stop_after = 1;
    char why[128];
    s.n = 0;
    assert_int_equal(lx_threads_each(&x.t, collect, &s, 100, why, sizeof(why)), 1);
    tg_free(&x);
}

static void check_regs(bool fred)
{
    struct tg x;
    assert_int_equal(tg_build(&x, fred), 0);
    struct seen s;
    assert_int_equal(visit(&x, &s, 100), 4);
    struct gw_regs kr, ur;
    assert_true(lx_thread_regs(&x.t, &s.t[1], &kr, &ur));
    assert_int_equal(kr.rip, TG_KERNEL_RIP);
    assert_int_equal(kr.rsp, TG_STACK(2) + 0x2000 + 0x38); /* above inactive_task_frame */
    assert_int_equal(kr.rbp, TG_STACK(2) + 0x2100);
    assert_true(ur.user);
    assert_int_equal(ur.rip, TG_USER_RIP + 2);
    assert_int_equal(ur.rsp, TG_USER_SP);
    assert_int_equal(ur.rbp, TG_USER_BP);
    /* A kernel thread has kernel registers only. */
    assert_true(lx_thread_regs(&x.t, &s.t[2], &kr, &ur));
    assert_false(ur.user);
    /* pt_regs that do not hold user selectors are not the thread's entry registers. */
    uint64_t cs_at = TG_STACK(2) + 16384 - (fred ? 16 : 0) - LX_PT_SIZE + LX_PT_CS;
    uint64_t kernel_cs = 0x10;
    memcpy(tg_at(&x, cs_at - TG_DIRECT), &kernel_cs, 8);
    assert_true(lx_thread_regs(&x.t, &s.t[1], &kr, &ur));
    assert_false(ur.user);
    /* A switch frame whose return address is not a kernel address: no registers at all. */
    uint64_t user_ret = 0x401000;
    memcpy(tg_at(&x, TG_STACK(2) + 0x2000 + 0x30 - TG_DIRECT), &user_ret, 8);
    assert_false(lx_thread_regs(&x.t, &s.t[1], &kr, &ur));
    tg_free(&x);
}

static void test_regs(void **state)
{
    (void)state;
    check_regs(false);
    check_regs(true); /* FRED's TOP_OF_KERNEL_STACK_PADDING */
}

static void test_unchanged(void **state)
{
    (void)state;
    struct tg x;
    assert_int_equal(tg_build(&x, false), 0);
    struct seen s;
    assert_int_equal(visit(&x, &s, 100), 4);
    assert_true(lx_thread_unchanged(&x.t, &s.t[0]));
    uint64_t nvcsw = 41; /* it ran: one more switch */
    memcpy(tg_at(&x, TG_TASK(1) + 0x28 - TG_DIRECT), &nvcsw, 8);
    assert_false(lx_thread_unchanged(&x.t, &s.t[0]));
    /* Read again, it is what it is now. */
    struct guestos_thread now;
    assert_true(lx_thread_reread(&x.t, &s.t[0], &now));
    assert_int_equal(now.switches, 42);
    assert_int_equal(now.task.tid, 100);
    uint32_t on_cpu = 1;
    memcpy(tg_at(&x, TG_TASK(2) + 0x60 - TG_DIRECT), &on_cpu, 4);
    assert_false(lx_thread_unchanged(&x.t, &s.t[1]));
    assert_true(lx_thread_reread(&x.t, &s.t[1], &now));
    assert_true(now.on_cpu);
    /* Another task at that address now: not the thread read before. */
    int32_t other = 555;
    memcpy(tg_at(&x, TG_TASK(2) + 0x100 - TG_DIRECT), &other, 4);
    assert_false(lx_thread_reread(&x.t, &s.t[1], &now));
    uint64_t sp = TG_STACK(3) + 0x1000; /* switched out elsewhere */
    memcpy(tg_at(&x, TG_TASK(3) + 0x68 - TG_DIRECT), &sp, 8);
    assert_false(lx_thread_unchanged(&x.t, &s.t[2]));
    tg_free(&x);
}

static void test_hostile_lists(void **state)
{
    (void)state;
    struct tg x;
    assert_int_equal(tg_build(&x, false), 0);
    struct seen s;
    /* The second thread's node points back at itself: a cycle that never reaches the head. */
    uint64_t node = TG_TASK(2) + 0x40;
    memcpy(tg_at(&x, node - TG_DIRECT), &node, 8);
    long n = visit(&x, &s, 1u << 30);
    /* Bounded: the cycle's thread again and again up to the visit's steps, then the end. */
    assert_true(n > 0 && n <= (long)LX_MAX_VISIT_STEPS);
    tg_free(&x);
    assert_int_equal(tg_build(&x, false), 0);
    /* A thread-list link into the user half: that group ends there, the others are listed. */
    uint64_t user = 0x7f0000001000ull;
    memcpy(tg_at(&x, TG_TASK(1) + 0x40 - TG_DIRECT), &user, 8);
    assert_int_equal(visit(&x, &s, 100), 3);
    assert_int_equal(s.t[0].task.tid, 100);
    assert_int_equal(s.t[1].task.tid, 2);
    /* A task-list link that is not a kernel pointer: the list cannot be read. */
    memcpy(tg_at(&x, TG_TASK(3) + 0x50 - TG_DIRECT), &user, 8);
    assert_int_equal(visit(&x, &s, 100), -1);
    tg_free(&x);
    assert_int_equal(tg_build(&x, false), 0);
    /* pids out of range and a comm without a NUL: the thread is left out, its name printable. */
    int32_t bad = -5;
    memcpy(tg_at(&x, TG_TASK(2) + 0x100 - TG_DIRECT), &bad, 4);
    memset(tg_at(&x, TG_TASK(3) + 0x80 - TG_DIRECT), 0x07, 16);
    assert_int_equal(visit(&x, &s, 100), 3);
    assert_string_equal(s.t[1].task.comm, "???????????????");
    tg_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states),        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_regs),          cmocka_unit_test(test_unchanged),
        cmocka_unit_test(test_hostile_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
