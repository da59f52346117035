#include "vmm/watchdog.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vmm/vm.h"

#define NS 1000000000ull

/* A small /proc file into buf (NUL-terminated, newlines kept), "" if unreadable. */
static void read_proc(pid_t tid, const char *what, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, what);
    buf[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
}

/* The state letter of /proc/.../stat: the field after the parenthesised command name. */
static char thread_state(const char *stat)
{
    const char *p = strrchr(stat, ')');
    return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

void vcpu_dump_last_exit(const struct vcpu *v, uint64_t now_ns, char *buf, size_t len)
{
    size_t used = strnlen(buf, len);
    uint64_t at = atomic_load_explicit(&v->last_exit_ns, memory_order_acquire);
    if (!at) {
        snprintf(buf + used, len - used, "\n  (vcpu%d never exited to user space)", v->index);
        return;
    }
    if (!v->use_sync_regs) {
        snprintf(buf + used, len - used,
                 "\n  vcpu%d's last exit was %.1f ms earlier (reason %u); its registers are kept "
                 "only with KVM_CAP_SYNC_REGS, which this host lacks",
                 v->index, (double)(now_ns - at) / 1e6, v->last_exit_reason);
        return;
    }
    const struct kvm_regs *r = &v->last_regs;
    snprintf(buf + used, len - used,
             "\n  vcpu%d at its last exit, %.1f ms earlier (reason %u):"
             "\n  RIP=%016llx RSP=%016llx RBP=%016llx RFLAGS=%08llx"
             "\n  RAX=%016llx RBX=%016llx RCX=%016llx RDX=%016llx"
             "\n  CS=%04x CR0=%08llx CR3=%016llx CR4=%08llx EFER=%llx",
             v->index, (double)(now_ns - at) / 1e6, v->last_exit_reason, (unsigned long long)r->rip,
             (unsigned long long)r->rsp, (unsigned long long)r->rbp, (unsigned long long)r->rflags,
             (unsigned long long)r->rax, (unsigned long long)r->rbx, (unsigned long long)r->rcx,
             (unsigned long long)r->rdx, v->last_sregs.cs.selector,
             (unsigned long long)v->last_sregs.cr0, (unsigned long long)v->last_sregs.cr3,
             (unsigned long long)v->last_sregs.cr4, (unsigned long long)v->last_sregs.efer);
}

static void report_stuck(struct vm *vm, struct vcpu *v, uint64_t now, uint64_t entered,
                         uint64_t kicked)
{
    char stat[512], wchan[128], stack[1024];
    read_proc(v->tid, "stat", stat, sizeof(stat));
    read_proc(v->tid, "wchan", wchan, sizeof(wchan));
    read_proc(v->tid, "stack", stack, sizeof(stack));
    /* The kernel stack on one line: "[<0>] func+0x1/0x2" entries joined with " < ". */
    for (char *p = stack; *p; p++)
        if (*p == '\n')
            *p = p[1] ? ';' : 0;
    char msg[sizeof(vm->result.detail)];
    snprintf(msg, sizeof(msg),
             "vcpu%d is stuck: it has not returned from KVM_RUN for %.1f s, %.1f s after it "
             "was kicked. Host thread %d: state %c, wait channel '%s', kernel stack: %s",
             v->index, (double)(now - entered) / NS, (double)(now - kicked) / NS, (int)v->tid,
             thread_state(stat), wchan[0] ? wchan : "?",
             stack[0] ? stack : "(unavailable: /proc/self/task/TID/stack needs root)");
    vcpu_dump_last_exit(v, now, msg, sizeof(msg));
    vm_request_stop(vm, VM_STOP_VCPU_STUCK, 1, v->index, msg);
}

void vm_watchdog_check(struct vm *vm, uint64_t now)
{
    for (unsigned i = 0; i < vm->cfg.nr_vcpus; i++) {
        struct vcpu *v = &vm->vcpus[i];
        if (!v->thread_started)
            continue;
        uint64_t entered = atomic_load_explicit(&v->run_enter_ns, memory_order_acquire);
        if (!entered || now < entered) {
            v->kicked_at = 0;
            continue;
        }
        if (v->kicked_for != entered) {
            v->kicked_for = entered; /* a new KVM_RUN since the last look */
            v->kicked_at = 0;
        }
        if (v->kicked_at == 0) {
            if (now - entered >= VM_WATCHDOG_KICK_S * NS) {
                v->kicked_at = now;
                vcpu_kick(v);
            }
        } else if (now - v->kicked_at >= VM_WATCHDOG_STUCK_S * NS) {
            report_stuck(vm, v, now, entered, v->kicked_at);
            return;
        }
    }
}
