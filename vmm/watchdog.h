/* Stuck-vCPU detection. A vCPU thread inside KVM_RUN must come back out when it is kicked
 * (immediate_exit + a signal: api.rst 4.10 and 5, "immediate_exit"); one that does not is stuck
 * in the host kernel, and the guest stops making progress while timers and timeouts run on.
 * vm_run's thread checks every vCPU once a second:
 *   - in KVM_RUN for VM_WATCHDOG_KICK_S without an exit: kick it (a no-op for a healthy vCPU,
 *     which re-enters at once; hvprof run does not otherwise kick a guest that never exits);
 *   - still in that same KVM_RUN VM_WATCHDOG_STUCK_S after the kick: stuck. The VM stops with
 *     VM_STOP_VCPU_STUCK and a report: how long, the host thread's state, wait channel and
 *     kernel stack (/proc/self/task/TID/{stat,wchan,stack}; the stack needs root), and the
 *     guest registers at the vCPU's last exit (the vCPU's own registers cannot be read while
 *     its thread holds it inside KVM_RUN). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define VM_WATCHDOG_KICK_S  2
#define VM_WATCHDOG_STUCK_S 10

struct vm;
struct vcpu;

/* One check of every vCPU at `now_ns` (CLOCK_MONOTONIC). Stops the VM when one is stuck. */
void vm_watchdog_check(struct vm *vm, uint64_t now_ns);

/* Append "registers at the last exit (N ms before)" of v to buf (bounded). */
void vcpu_dump_last_exit(const struct vcpu *v, uint64_t now_ns, char *buf, size_t len);
