/* The stuck-vCPU watchdog (vmm/watchdog.h) with its clock driven by the test: a vCPU in KVM_RUN
 * past the kick delay is kicked once; if it is still in the same KVM_RUN past the stuck delay the
 * VM stops with VM_STOP_VCPU_STUCK and a report that names the host thread and the registers of
 * its last exit. The "vCPU" is a real thread that blocks the kick signal, as a thread stuck in
 * the kernel would ignore it. */
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/signals.h"
#include "vmm/vm.h"
#include "vmm/watchdog.h"

#define S 1000000000ull

struct fake {
    struct vm vm;
    struct vcpu v;
    struct kvm_run run;
    pthread_t th;
    sem_t started, quit;
    pid_t tid;
};

static void *deaf_thread(void *arg)
{
    struct fake *f = arg;
    hv_signals_block(); /* the kick never reaches this thread: like one stuck in KVM */
    f->tid = gettid();
    sem_post(&f->started);
    sem_wait(&f->quit);
    return NULL;
}

static void setup_fake(struct fake *f)
{
    memset(f, 0, sizeof(*f));
    sem_init(&f->started, 0, 0);
    sem_init(&f->quit, 0, 0);
    sem_init(&f->vm.wake, 0, 0);
    assert_int_equal(hv_signals_install(), 0);
    assert_int_equal(pthread_create(&f->th, NULL, deaf_thread, f), 0);
    sem_wait(&f->started);
    f->vm.cfg.nr_vcpus = 1;
    f->vm.vcpus = &f->v;
    f->v.vm = &f->vm;
    f->v.run = &f->run;
    f->v.thread = f->th;
    f->v.thread_started = true;
    f->v.tid = f->tid;
    f->v.last_regs.rip = 0xffffffff81234567ull;
    f->v.last_sregs.cr3 = 0x1234000;
    f->v.last_exit_reason = KVM_EXIT_IO;
    f->v.use_sync_regs = true;
}

static void teardown_fake(struct fake *f)
{
    sem_post(&f->quit);
    pthread_join(f->th, NULL);
    sem_destroy(&f->vm.wake);
}

static void test_stuck_vcpu_is_reported(void **state)
{
    (void)state;
    struct fake *f = malloc(sizeof(*f));
    setup_fake(f);
    uint64_t t0 = 1000 * S;
    atomic_store(&f->v.last_exit_ns, t0 - S / 2);
    atomic_store(&f->v.run_enter_ns, t0);

    vm_watchdog_check(&f->vm, t0 + 1 * S); /* in KVM_RUN for 1 s: nothing yet */
    assert_int_equal(f->v.kicked_at, 0);
    assert_int_equal(f->run.immediate_exit, 0);
    vm_watchdog_check(&f->vm, t0 + VM_WATCHDOG_KICK_S * S); /* kicked */
    assert_int_equal(f->v.kicked_at, t0 + VM_WATCHDOG_KICK_S * S);
    assert_int_equal(f->run.immediate_exit, 1);
    vm_watchdog_check(&f->vm, t0 + (VM_WATCHDOG_KICK_S + VM_WATCHDOG_STUCK_S - 1) * S);
    assert_false(atomic_load(&f->vm.stopping));
    vm_watchdog_check(&f->vm, t0 + (VM_WATCHDOG_KICK_S + VM_WATCHDOG_STUCK_S) * S);
    assert_true(atomic_load(&f->vm.stopping));
    assert_int_equal(f->vm.result.reason, VM_STOP_VCPU_STUCK);
    assert_int_equal(f->vm.result.status, 1);
    assert_int_equal(f->vm.result.vcpu, 0);
    const char *d = f->vm.result.detail;
    assert_non_null(strstr(d, "vcpu0 is stuck: it has not returned from KVM_RUN for 12.0 s, "
                              "10.0 s after it was kicked"));
    /* The state letter is whatever the scheduler says now (S once the thread waits). */
    char host[64];
    snprintf(host, sizeof(host), "Host thread %d: state ", (int)f->tid);
    const char *h = strstr(d, host);
    assert_non_null(h);
    assert_non_null(strchr("RSD", h[strlen(host)]));
    assert_non_null(strstr(d, "RIP=ffffffff81234567"));
    assert_non_null(strstr(d, "CR3=0000000001234000"));
    teardown_fake(f);
    free(f);
}

static void test_healthy_vcpu_is_left_alone(void **state)
{
    (void)state;
    struct fake *f = malloc(sizeof(*f));
    setup_fake(f);
    uint64_t t = 1000 * S;
    for (unsigned i = 0; i < 100; i++, t += S) {
        /* A vCPU that keeps coming back: a new KVM_RUN every 1.5 s, kicks or not. */
        if (i % 3 == 0)
            atomic_store(&f->v.run_enter_ns, t);
        vm_watchdog_check(&f->vm, t);
    }
    assert_false(atomic_load(&f->vm.stopping));
    /* Outside KVM_RUN: never kicked. */
    atomic_store(&f->v.run_enter_ns, 0);
    f->run.immediate_exit = 0;
    vm_watchdog_check(&f->vm, t + 100 * S);
    assert_int_equal(f->run.immediate_exit, 0);
    teardown_fake(f);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_vcpu_is_reported),
        cmocka_unit_test(test_healthy_vcpu_is_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
