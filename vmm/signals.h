/* HV_SIG_KICK / HV_SIG_TICK handlers (docs/sources.md §2): the only state they touch is the calling
 * thread's vCPU, reached through a thread-local pointer that is set only on vCPU threads. */
#pragma once

struct vcpu;

/* Install both handlers process-wide (once; no SA_RESTART, so KVM_RUN returns EINTR). */
int hv_signals_install(void);
/* On a vCPU thread: publish v to the handlers and unblock both signals. */
void hv_signals_enter_vcpu(struct vcpu *v);
/* On a vCPU thread leaving its loop: block both signals again, then forget v. */
void hv_signals_leave_vcpu(void);
