#include "vmm/signals.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "vmm/vm.h"

/* The one global this module needs: signal handlers have no other way to find their vCPU. */
static __thread struct vcpu *volatile tls_vcpu;

static void on_kick(int sig)
{
    (void)sig;
    struct vcpu *v = tls_vcpu;
    if (v)
        __atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_RELAXED);
}

static void on_tick(int sig)
{
    (void)sig;
    struct vcpu *v = tls_vcpu;
    if (v) {
        atomic_fetch_add_explicit(&v->ticks, 1, memory_order_relaxed);
        __atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_RELAXED);
    }
}

static void signal_set(sigset_t *s)
{
    sigemptyset(s);
    sigaddset(s, HV_SIG_KICK);
    sigaddset(s, HV_SIG_TICK);
}

static int install_result = -1;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    signal_set(&sa.sa_mask); /* the two handlers never nest */
    sa.sa_handler = on_kick;
    if (sigaction(HV_SIG_KICK, &sa, NULL) < 0)
        return;
    sa.sa_handler = on_tick;
    if (sigaction(HV_SIG_TICK, &sa, NULL) < 0)
        return;
    install_result = 0;
}

int hv_signals_install(void)
{
    pthread_once(&install_once, install);
    return install_result;
}

void hv_signals_block(void)
{
    sigset_t s;
    signal_set(&s);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
}

void hv_signals_enter_vcpu(struct vcpu *v)
{
    tls_vcpu = v;
    atomic_signal_fence(memory_order_seq_cst);
    sigset_t s;
    signal_set(&s);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

void hv_signals_leave_vcpu(void)
{
    hv_signals_block();
    atomic_signal_fence(memory_order_seq_cst);
    tls_vcpu = NULL;
}
