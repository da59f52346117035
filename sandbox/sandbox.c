/* Confinement after set-up: the user, capabilities, no_new_privs, seccomp; the SIGSYS handler
 * that turns a refused call into a clean stop (sandbox.h). */
#include "sandbox/sandbox.h"

#include <cap-ng.h>
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <errno.h>
#include <pwd.h>
#include <seccomp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "sandbox/filter.h"

/* The handler's state (conventions: globals only for signal handlers), and whether the
 * process is confined (read by every thread's sandbox_thread_enter). */
static atomic_bool confined;
static atomic_int refused_nr = -1;
static atomic_int refused_kind = -1;
static void (*volatile stop_hook)(void *);
static void *volatile stop_ctx;
static _Thread_local enum sandbox_thread my_kind = SANDBOX_MAIN;
/* Where the first refused call was made: its return addresses, for the report (the call is
 * hvprof's bug, and this says where it is). */
#define REFUSED_FRAMES 16
static void *refused_stack[REFUSED_FRAMES];
static atomic_int refused_depth;
/* Each thread kind's filter as a BPF program, made before confinement (libseccomp's own
 * loading needs more than a confined thread may do); a thread installs its own with one
 * seccomp(SECCOMP_SET_MODE_FILTER) call. Read-only once confined. */
static struct sock_fprog kind_prog[SANDBOX_KINDS];

static const char *const kind_names[SANDBOX_KINDS] = {
    [SANDBOX_MAIN] = "main",  [SANDBOX_VCPU] = "vCPU",   [SANDBOX_DISK] = "disk I/O",
    [SANDBOX_NET] = "network", [SANDBOX_DRAIN] = "drain", [SANDBOX_UI] = "display",
};

const char *sandbox_thread_name(enum sandbox_thread kind)
{
    return (unsigned)kind < SANDBOX_KINDS ? kind_names[kind] : "unknown";
}

bool sandbox_active(void)
{
    return atomic_load(&confined);
}

void sandbox_on_violation(void (*stop)(void *ctx), void *ctx)
{
    stop_ctx = ctx;
    stop_hook = stop;
}

/* SIGSYS from SCMP_ACT_TRAP: the call was not made. It returns -EPERM to its caller, which
 * fails as any refused call fails; the first one is recorded and stops the guest. */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int expected = -1;
    if (atomic_compare_exchange_strong(&refused_nr, &expected, si->si_syscall)) {
        atomic_store(&refused_kind, (int)my_kind);
        /* backtrace() was called once at confinement, so its unwinder is loaded: here it
         * only walks the stack (through the signal frame, to the call's caller). */
        atomic_store(&refused_depth, backtrace(refused_stack, REFUSED_FRAMES));
        void (*hook)(void *) = stop_hook;
        if (hook)
            hook(stop_ctx);
    }
    ((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = -EPERM;
}

int sandbox_choose_user(struct sandbox_config *c, const char *user, struct hv_err *err)
{
    c->change_user = false;
    c->user[0] = 0;
    if (user) {
        struct passwd *pw = getpwnam(user);
        char *end;
        unsigned long n = strtoul(user, &end, 10);
        if (!pw && *user && !*end)
            pw = getpwuid((uid_t)n);
        if (!pw)
            return hv_errk(err, HV_ERR_USAGE, "--user %s: no such user", user);
        c->change_user = true;
        c->uid = pw->pw_uid;
        c->gid = pw->pw_gid;
        snprintf(c->user, sizeof(c->user), "%s", pw->pw_name);
        return 0;
    }
    /* sudo says whom it ran us for (sudo(8), "Command environment"). */
    const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
    if (getuid() != 0 || !su || !sg || !*su || !*sg)
        return 0;
    char *e1, *e2;
    unsigned long u = strtoul(su, &e1, 10), g = strtoul(sg, &e2, 10);
    if (*e1 || *e2 || u == 0)
        return 0;
    c->change_user = true;
    c->uid = (uid_t)u;
    c->gid = (gid_t)g;
    struct passwd *pw = getpwuid(c->uid);
    snprintf(c->user, sizeof(c->user), "%s", pw ? pw->pw_name : su);
    return 0;
}

/* Threads of this process now (/proc/self/task). */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The filter of `kind` as a program (libseccomp's export, through a memory file). */
static int export_prog(enum sandbox_thread kind, bool net, struct sock_fprog *out)
{
    scmp_filter_ctx f = sandbox_filter_new(kind, net);
    if (!f)
        return -1;
    int fd = memfd_create("hvprof-seccomp", MFD_CLOEXEC);
    int rc = fd < 0 ? -1 : seccomp_export_bpf(f, fd);
    seccomp_release(f);
    off_t len = rc < 0 ? -1 : lseek(fd, 0, SEEK_END);
    struct sock_filter *prog = len > 0 ? malloc((size_t)len) : NULL;
    if (!prog || pread(fd, prog, (size_t)len, 0) != len) {
        free(prog);
        if (fd >= 0)
            close(fd);
        errno = EINVAL;
        return -1;
    }
    close(fd);
    out->filter = prog;
    out->len = (unsigned short)((size_t)len / sizeof(*prog));
    return 0;
}

static int install_main(bool net)
{
    scmp_filter_ctx f = sandbox_filter_new(SANDBOX_MAIN, net);
    if (!f)
        return -1;
    /* no_new_privs is set already; every thread gets the filter (there is one now). */
    seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 0);
    seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
    int rc = seccomp_load(f);
    seccomp_release(f);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

int sandbox_enter(const struct sandbox_config *c, struct hv_err *err)
{
    if (!c->enabled)
        return 0;
    int n = thread_count();
    if (n != 1)
        return hv_errk(err, HV_ERR_OTHER,
                       "sandbox: %d threads at confinement (one expected): hvprof's bug", n);
    /* The outputs made as root are the user's, as files they asked for. */
    for (unsigned i = 0; c->change_user && i < c->nchown; i++)
        if (c->chown_fds[i] >= 0 && fchown(c->chown_fds[i], c->uid, c->gid) < 0)
            return hv_errf_errno(err, "sandbox: giving an output to %s", c->user);
    /* What glibc reads lazily, read now while files may still be opened: the time zone
     * (gmtime_r reads /etc/localtime once: the RTC's reads on a vCPU thread) and libgcc's
     * unwinder (backtrace, for the report of a refused call). */
    tzset();
    void *warm[2];
    backtrace(warm, 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) < 0)
        return hv_errf_errno(err, "sandbox: SIGSYS handler");
    /* Every capability, the bounding set's too, and (as the user) their id and groups. */
    capng_clear(CAPNG_SELECT_ALL);
    if (c->change_user) {
        int rc = capng_change_id((int)c->uid, (int)c->gid,
                                 CAPNG_INIT_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
        if (rc < 0)
            return hv_errk(err, HV_ERR_OS, "sandbox: becoming %s (uid %u) failed (libcap-ng %d)",
                           c->user, (unsigned)c->uid, rc);
    } else if (capng_apply(CAPNG_SELECT_ALL) < 0) {
        return hv_errk(err, HV_ERR_OS, "sandbox: dropping the capabilities failed");
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return hv_errf_errno(err, "sandbox: no_new_privs");
    for (unsigned k = SANDBOX_MAIN + 1; k < SANDBOX_KINDS; k++)
        if (!kind_prog[k].filter && export_prog((enum sandbox_thread)k, c->net, &kind_prog[k]) < 0)
            return hv_errf_errno(err, "sandbox: the %s thread's filter", kind_names[k]);
    if (install_main(c->net) < 0)
        return hv_errf_errno(err, "sandbox: installing the seccomp filter");
    atomic_store(&confined, true);
    return 0;
}

/* HVPROF_SANDBOX_SELFTEST=KIND (docs/testing.md): that thread kind makes one call outside its
 * set right after confining itself, so that a test sees the refusal end a run cleanly. The
 * call, getpgid(0), changes nothing were it allowed. */
static void selftest(enum sandbox_thread kind)
{
    const char *t = getenv("HVPROF_SANDBOX_SELFTEST");
    if (t && !strcmp(t, kind_names[kind]))
        syscall(SYS_getpgid, 0);
}

int sandbox_thread_enter(enum sandbox_thread kind)
{
    my_kind = kind;
    if (!atomic_load(&confined))
        return 0;
    int rc = 0;
    if (kind != SANDBOX_MAIN && kind < SANDBOX_KINDS)
        rc = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &kind_prog[kind]) < 0 ? -1 : 0;
    selftest(kind);
    return rc;
}

bool sandbox_report(const char *cmd, FILE *out)
{
    int nr = atomic_load(&refused_nr);
    if (nr < 0)
        return false;
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    fprintf(out,
            "%s: the sandbox refused system call %s (%d) on the %s thread: the run stopped "
            "there, with everything recorded before it kept. hvprof should never make it: please "
            "report this; --no-sandbox runs without confinement meanwhile (docs/security.md)\n",
            cmd, name ? name : "?", nr,
            sandbox_thread_name((enum sandbox_thread)atomic_load(&refused_kind)));
    free(name);
    /* Where, as module+offset (addr2line -e MODULE OFFSET names the line). */
    int depth = atomic_load(&refused_depth);
    for (int i = 1; i < depth; i++) {
        Dl_info di;
        if (dladdr(refused_stack[i], &di) && di.dli_fname)
            fprintf(out, "  from %s+0x%lx%s%s\n", di.dli_fname,
                    (unsigned long)((char *)refused_stack[i] - (char *)di.dli_fbase),
                    di.dli_sname ? " " : "", di.dli_sname ? di.dli_sname : "");
    }
    return true;
}
