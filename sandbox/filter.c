/* Per-kind seccomp allow lists (filter.h). */
#include "sandbox/filter.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

/* Groups of calls, each for one purpose. */
enum group {
    G_BASE,    /* memory, time, signals, threads' own business, I/O on descriptors held */
    G_KVM,     /* ioctl()s of KVM's type (0xAE, Documentation/virt/kvm/api.rst) */
    G_TIMER,   /* the per-vCPU sampling timer (POSIX timers) */
    G_FILES,   /* open and look at files (symbol files, /etc/resolv.conf for slirp) */
    G_WRITE,   /* make and replace files (snapshots), in directories already open */
    G_TTY,     /* the terminal's settings and size (top, the progress line) */
    G_THREADS, /* make threads (never processes) */
    G_SOCKETS, /* libslirp's sockets (IPv4/IPv6 only) */
    G_SANITIZER, /* ASan/LSan/UBSan's runtime in sanitizer builds (LSan stops the world
                  * with ptrace from a clone of its own at exit) */
    G_COUNT
};

static const int base_calls[] = {
    SCMP_SYS(read),          SCMP_SYS(write),         SCMP_SYS(readv),
    SCMP_SYS(writev),        SCMP_SYS(pread64),       SCMP_SYS(pwrite64),
    SCMP_SYS(preadv),        SCMP_SYS(pwritev),       SCMP_SYS(preadv2),
    SCMP_SYS(pwritev2),      SCMP_SYS(close),         SCMP_SYS(lseek),
    SCMP_SYS(fstat),         SCMP_SYS(newfstatat),    SCMP_SYS(statx),
    SCMP_SYS(fcntl),         SCMP_SYS(fsync),         SCMP_SYS(fdatasync),
    SCMP_SYS(mmap),          SCMP_SYS(munmap),        SCMP_SYS(mprotect),
    SCMP_SYS(mremap),        SCMP_SYS(madvise),       SCMP_SYS(brk),
    SCMP_SYS(futex),         SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
    SCMP_SYS(rt_sigaction),  SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sigaltstack),   SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
    SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),   SCMP_SYS(gettimeofday),
    SCMP_SYS(gettid),        SCMP_SYS(getpid),        SCMP_SYS(tgkill),
    SCMP_SYS(sched_yield),   SCMP_SYS(sched_getaffinity), SCMP_SYS(getrandom),
    SCMP_SYS(exit),          SCMP_SYS(exit_group),    SCMP_SYS(restart_syscall),
    SCMP_SYS(poll),          SCMP_SYS(ppoll),         SCMP_SYS(pselect6),
    SCMP_SYS(sysinfo),       SCMP_SYS(prlimit64),     SCMP_SYS(getrlimit),
    SCMP_SYS(getuid),        SCMP_SYS(geteuid),       SCMP_SYS(getgid),
    SCMP_SYS(getegid),       SCMP_SYS(uname),         SCMP_SYS(eventfd2),
    SCMP_SYS(mincore), /* which pages of guest RAM the host ever backed (vmcoreinfo.c) */
};

static const int timer_calls[] = {
    SCMP_SYS(timer_create), SCMP_SYS(timer_settime), SCMP_SYS(timer_gettime),
    SCMP_SYS(timer_getoverrun), SCMP_SYS(timer_delete),
};

static const int file_calls[] = {
    SCMP_SYS(openat),   SCMP_SYS(open),       SCMP_SYS(getdents64), SCMP_SYS(readlink),
    SCMP_SYS(readlinkat), SCMP_SYS(access),   SCMP_SYS(faccessat),  SCMP_SYS(faccessat2),
    SCMP_SYS(lstat),    SCMP_SYS(stat),
};

static const int write_calls[] = {
    SCMP_SYS(renameat), SCMP_SYS(renameat2), SCMP_SYS(rename), SCMP_SYS(unlinkat),
    SCMP_SYS(unlink),   SCMP_SYS(ftruncate), SCMP_SYS(copy_file_range), SCMP_SYS(flock),
};

static const int socket_calls[] = {
    SCMP_SYS(connect),     SCMP_SYS(bind),        SCMP_SYS(listen),   SCMP_SYS(accept),
    SCMP_SYS(accept4),     SCMP_SYS(setsockopt),  SCMP_SYS(getsockopt), SCMP_SYS(getsockname),
    SCMP_SYS(getpeername), SCMP_SYS(sendto),      SCMP_SYS(recvfrom), SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),     SCMP_SYS(shutdown),
};

static const int sanitizer_calls[] = {
    SCMP_SYS(ptrace),   SCMP_SYS(wait4),     SCMP_SYS(waitid), SCMP_SYS(prctl),
    SCMP_SYS(getppid),  SCMP_SYS(kill),      SCMP_SYS(mincore), SCMP_SYS(openat),
    SCMP_SYS(getdents64), SCMP_SYS(getdents), SCMP_SYS(readlink), SCMP_SYS(clone),
    SCMP_SYS(sched_setaffinity),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int add_all(scmp_filter_ctx f, const int *calls, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (calls[i] >= 0 && seccomp_rule_add(f, SCMP_ACT_ALLOW, calls[i], 0) < 0)
            return -1;
    return 0;
}

static int add_group(scmp_filter_ctx f, enum group g)
{
    switch (g) {
    case G_BASE:
        /* A thread narrows its own set with one more filter (sandbox_thread_enter): only
         * that form of seccomp(). */
        if (seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(seccomp), 2,
                             SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER),
                             SCMP_A1(SCMP_CMP_EQ, 0)) < 0)
            return -1;
        /* A signal to this process only (top's q stops the recording as Ctrl-C would). */
        if (seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
                             SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid())) < 0)
            return -1;
        /* Naming itself (pthread_setname_np on its own thread is PR_SET_NAME); nothing else
         * of prctl. */
        if (seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                             SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME)) < 0 ||
            seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                             SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME)) < 0)
            return -1;
        return add_all(f, base_calls, N(base_calls));
    case G_KVM:
        return seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00, 0xae00));
    case G_TIMER:
        return add_all(f, timer_calls, N(timer_calls));
    case G_FILES:
        return add_all(f, file_calls, N(file_calls));
    case G_WRITE:
        return add_all(f, write_calls, N(write_calls));
    case G_TTY: {
        static const unsigned long tty[] = {TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ};
        for (size_t i = 0; i < N(tty); i++)
            if (seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                 SCMP_A1(SCMP_CMP_EQ, tty[i])) < 0)
                return -1;
        return 0;
    }
    case G_THREADS:
        /* A thread shares everything with its process (CLONE_THREAD); a process of its own
         * (fork, posix_spawn) is refused. clone3's flags lie in memory a filter cannot read:
         * ENOSYS, and glibc falls back to clone. */
        if (seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)) < 0)
            return -1;
        return 0;
    case G_SOCKETS: {
        static const int families[] = {AF_INET, AF_INET6};
        for (size_t i = 0; i < N(families); i++)
            if (seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                 SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i])) < 0)
                return -1;
        /* FIONREAD (slirp's UDP receive), FIONBIO. */
        if (seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                             SCMP_A1(SCMP_CMP_EQ, FIONREAD)) < 0 ||
            seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                             SCMP_A1(SCMP_CMP_EQ, FIONBIO)) < 0)
            return -1;
        return add_all(f, socket_calls, N(socket_calls));
    }
    case G_SANITIZER:
        return add_all(f, sanitizer_calls, N(sanitizer_calls));
    default:
        return -1;
    }
}

/* Each kind's groups (G_SOCKETS only with a network card). */
static const unsigned kind_groups[SANDBOX_KINDS] = {
    [SANDBOX_MAIN] = 1u << G_BASE | 1u << G_KVM | 1u << G_TIMER | 1u << G_FILES | 1u << G_WRITE |
                     1u << G_TTY | 1u << G_THREADS | 1u << G_SOCKETS,
    /* The devices it emulates: the console, a disk's requests where KVM gives no ioeventfd,
     * the network card's frames into slirp (which may open a socket for a new connection). */
    [SANDBOX_VCPU] = 1u << G_BASE | 1u << G_KVM | 1u << G_TIMER | 1u << G_SOCKETS,
    [SANDBOX_DISK] = 1u << G_BASE | 1u << G_KVM,
    [SANDBOX_NET] = 1u << G_BASE | 1u << G_KVM | 1u << G_FILES | 1u << G_SOCKETS,
    [SANDBOX_DRAIN] = 1u << G_BASE | 1u << G_KVM | 1u << G_FILES | 1u << G_WRITE | 1u << G_TTY,
    [SANDBOX_UI] = 1u << G_BASE | 1u << G_FILES | 1u << G_TTY,
};

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

scmp_filter_ctx sandbox_filter_new(enum sandbox_thread kind, bool net)
{
    if ((unsigned)kind >= SANDBOX_KINDS) {
        errno = EINVAL;
        return NULL;
    }
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_TRAP);
    if (!f)
        return NULL;
    unsigned groups = kind_groups[kind];
    if (!net)
        groups &= ~(1u << G_SOCKETS);
#ifdef SANITIZED
    /* LeakSanitizer's check runs at exit, from the main thread (a clone of its own that
     * ptrace()s every thread); the other kinds keep their sets as in a normal build. */
    if (kind == SANDBOX_MAIN)
        groups |= 1u << G_SANITIZER;
#endif
    for (unsigned g = 0; g < G_COUNT; g++)
        if ((groups >> g) & 1 && add_group(f, (enum group)g) < 0)
            goto fail;
    if (seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0)
        goto fail;
    /* The calls of every forced exit first (KVM_RUN's ioctl, the tick's signal return, the
     * rings' futex), then a binary tree for the rest: the filter's cost at an exit is a few
     * comparisons (bench/side-by-side/issue-46-sandbox.md). */
    static const int hot[] = {SCMP_SYS(ioctl), SCMP_SYS(rt_sigreturn), SCMP_SYS(futex),
                              SCMP_SYS(clock_gettime), SCMP_SYS(write), SCMP_SYS(read)};
    for (size_t i = 0; i < N(hot); i++)
        seccomp_syscall_priority(f, hot[i], 255);
    seccomp_attr_set(f, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    return f;
fail:
    seccomp_release(f);
    errno = EINVAL;
    return NULL;
}
