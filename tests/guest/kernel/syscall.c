/* System calls: int3 from CPL 3 (guest_abi.h). Number in RAX, arguments in RDI, RSI, RDX, R10,
 * result in RAX. User pointers are checked against the caller's page tables before use. */
#include "kernel.h"

#include "guest_abi.h"

/* "Kernel busy": spins at CPL 0 for the requested time through three nested noinline functions
 * with frame pointers, so a profiler's samples land here with a known kernel chain
 * (ksys_kbusy -> kbusy_level1 -> kbusy_level2 -> kbusy_spin) above a known waiting user stack. */
NOINLINE u64 kbusy_spin(u64 until)
{
    u64 n = 0;
    FORCE_FRAME();
    while (rdtsc() < until)
        n++;
    __asm__ volatile("" ::: "memory");
    return n;
}

NOINLINE u64 kbusy_level2(u64 until)
{
    u64 n = kbusy_spin(until);
    __asm__ volatile("" ::: "memory");
    return n + 1;
}

NOINLINE u64 kbusy_level1(u64 until)
{
    u64 n = kbusy_level2(until);
    __asm__ volatile("" ::: "memory");
    return n + 1;
}

static NOINLINE long ksys_kbusy(u64 us)
{
    if (us > 1000000)
        return GUEST_EINVAL;
    kbusy_level1(rdtsc() + us * (tsc_hz / 1000000));
    __asm__ volatile("" ::: "memory");
    return 0;
}

static long sys_write(struct thread *t, u64 buf, u64 len)
{
    char kbuf[256];
    if (len > 4096)
        return GUEST_EINVAL;
    if (!vm_user_range_ok(t->proc->cr3, buf, len, false))
        return GUEST_EFAULT;
    /* One console_write per chunk keeps lines from different CPUs whole (up to 256 bytes). */
    for (u64 off = 0; off < len; off += sizeof(kbuf)) {
        u64 n = len - off < sizeof(kbuf) ? len - off : sizeof(kbuf);
        memcpy(kbuf, (const void *)(buf + off), n);
        console_write(kbuf, n);
    }
    return (long)len;
}

/* A NUL-terminated user string into out[n]: the page checked once, not each byte (each check
 * is a page walk of emulated CPL 0 work). 0, GUEST_EFAULT or GUEST_EINVAL (too long). */
static long copy_user_str(struct thread *t, u64 va, char *out, u64 n)
{
    for (u64 i = 0; i < n; i++) {
        if ((i == 0 || ((va + i) & 0xfff) == 0) && !vm_user_range_ok(t->proc->cr3, va + i, 1, false))
            return GUEST_EFAULT;
        out[i] = *(const char *)(va + i);
        if (!out[i])
            return 0;
    }
    return GUEST_EINVAL;
}

static long sys_param(struct thread *t, u64 name, long def)
{
    char key[32];
    long r = copy_user_str(t, name, key, sizeof(key));
    return r ? r : cmdline_int(key, def);
}

static long sys_spawn(struct thread *t, u64 name, long arg)
{
    char prog[PROC_NAME_MAX];
    long r = copy_user_str(t, name, prog, sizeof(prog));
    if (r)
        return r;
    if (arg < 0 || arg > 0x7fffffff)
        return GUEST_EINVAL;
    return proc_spawn_user(prog, (int)arg);
}

void syscall_dispatch(struct cpu *c, struct trapframe *tf)
{
    struct thread *t = c->current;
    long r;
    switch (tf->rax) {
    case GUEST_SYS_WRITE:
        r = sys_write(t, tf->rdi, tf->rsi);
        break;
    case GUEST_SYS_EXIT:
        spin_lock(&sched_lock);
        proc_exit(t, (int)tf->rdi);
        sched_leave(c, tf);
        spin_unlock(&sched_lock);
        return;
    case GUEST_SYS_THREAD_EXIT:
        spin_lock(&sched_lock);
        thread_die(t);
        sched_leave(c, tf);
        spin_unlock(&sched_lock);
        return;
    case GUEST_SYS_YIELD:
        tf->rax = 0;
        sched_yield(c, tf);
        return;
    case GUEST_SYS_THREAD_CREATE:
        r = thread_create_user(t, tf->rdi, tf->rsi, tf->rdx, tf->r10);
        break;
    case GUEST_SYS_THREAD_JOIN: {
        struct thread *w = thread_by_tid((int)tf->rdi);
        if (!w && tf->rdi >= 1 && tf->rdi <= (u64)thread_last_tid()) {
            r = 0; /* ended long ago: its slot is another thread's now */
            break;
        }
        if (!w || w->proc != t->proc || w == t) {
            r = GUEST_EINVAL;
            break;
        }
        spin_lock(&sched_lock);
        if (w->state == T_DEAD) {
            spin_unlock(&sched_lock);
            r = 0;
            break;
        }
        t->state = T_BLOCKED;
        t->join_tid = w->tid;
        w->joiners++;
        sched_block(c, tf);
        spin_unlock(&sched_lock);
        return;
    }
    case GUEST_SYS_KBUSY:
        r = ksys_kbusy(tf->rdi);
        break;
    case GUEST_SYS_TSC_HZ:
        r = (long)tsc_hz;
        break;
    case GUEST_SYS_PARAM:
        r = sys_param(t, tf->rdi, (long)tf->rsi);
        break;
    case GUEST_SYS_GETPID:
        r = t->proc->pid;
        break;
    case GUEST_SYS_INSTANCE:
        r = t->proc->instance;
        break;
    case GUEST_SYS_HOSTILE:
        /* A spawned process gives its memory back by its known ranges: none of these. */
        r = t->proc->spawned ? GUEST_EINVAL : sys_hostile(t, tf);
        break;
    case GUEST_SYS_SPAWN:
        r = sys_spawn(t, tf->rdi, (long)tf->rsi);
        break;
    case GUEST_SYS_WAIT: {
        int status;
        spin_lock(&sched_lock);
        if (proc_wait(t, (int)tf->rdi, &status)) {
            sched_block(c, tf);
            spin_unlock(&sched_lock);
            return;
        }
        spin_unlock(&sched_lock);
        r = status;
        break;
    }
    case GUEST_SYS_SET_FS:
        if (tf->rdi >= 0x800000000000ull) {
            r = GUEST_EINVAL;
            break;
        }
        wrmsr(MSR_FS_BASE, tf->rdi);
        r = 0;
        break;
    default:
        r = GUEST_ENOSYS;
        break;
    }
    tf->rax = (u64)r;
}
