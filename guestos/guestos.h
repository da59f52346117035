/* What hvprof knows about the guest's operating system, behind one interface (as Linux perf
 * gives each guest a `struct machine`). Two kinds of call:
 *
 *   exit path (the vCPU's thread, guest stopped): bounded, no allocation, no locks, no system
 *   calls. identify() says which address space and thread a vCPU snapshot belongs to, and
 *   identify_task() what the guest kernel says about that thread (its pid, tid and name);
 *   unwind_user()/unwind_kernel() walk one stack through the OS's unwinders.
 *
 *   drain thread (guest running, memory may change under us): discover_modules() finds the
 *   ELF images of an address space; discover_kernel() finds the guest kernel's description of
 *   itself (release, build-id, KASLR offset, symbols). Everything read is bounded and validated.
 *
 * guestos/generic/ is the OS-agnostic behaviour (CR3 and FS base identity, ELF images found
 * in guest memory, frame pointers); an OS-specific layer (guestos/linux/) adds what a known
 * kernel's memory tells (kernel symbols, tasks, ORC) beside it.
 *
 *   struct guestos os;
 *   guestos_open(&os, "linux", &err);                // once, before the vCPUs start
 *   struct guestos_vcpu vc; guestos_vcpu_init(&os, &vc);   // one per vCPU thread
 *   ...exit: guestos_identify(&os, &vc, w, &snap, &id);   // begins the walker on snap too
 *            guestos_unwind(&os, w, &st);
 *   ...drain: guestos_discover_kernel(&os, mem, &kernel, &err);
 *             guestos_discover_modules(&os, mem, &as, mods, max);
 *   guestos_close(&os);
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestos/module.h"
#include "guestwalk/gmem.h"
#include "guestwalk/pti.h"
#include "guestwalk/snapshot.h"
#include "guestwalk/unwinder.h"
#include "guestwalk/walker.h"

/* Per-vCPU state of the OS layer, used only by that vCPU's thread. */
struct guestos_vcpu {
    uint32_t vcpu;        /* hvprof's index of the vCPU (set by the sampler) */
    struct pti_cache pti; /* Linux PTI pairs this vCPU has seen (guestwalk/pti.h) */
    /* Linux: this vCPU's per-CPU area (its kernel GS base) once a kernel-mode stop showed it,
     * and the guest's CPU number for it; the pairing does not change after boot. 0: not yet. */
    uint64_t percpu_base;
    uint32_t cpu;
    /* Linux: the GS base of this vCPU's last kernel-mode stop while the kernel was not yet
     * described (not checked: a candidate for percpu_base). */
    uint64_t kernel_gs_seen;
    /* Linux: where a thread's user pt_regs lie from the base of its kernel stack (THREAD_SIZE
     * minus padding minus sizeof(pt_regs)), learned from this vCPU's first kernel walk that
     * reached them; 0: not yet. */
    uint64_t regs_top;
};

#define GUESTOS_COMM_LEN 16 /* Linux TASK_COMM_LEN, include/linux/sched.h */

/* The thread as the guest kernel describes it (Linux: its task_struct), when the OS layer could
 * read it at this stop. */
struct guestos_task {
    bool known;
    bool kthread;                /* a kernel thread or an idle task: no user address space */
    int32_t pid, tid;            /* the guest's process and thread ids (Linux tgid and pid) */
    char comm[GUESTOS_COMM_LEN]; /* the thread's name, NUL-terminated, printable ASCII */
    /* Its process's name when this stop tells it (Linux: the thread group leader's comm;
     * "swapper" for the idle tasks), else empty. */
    char process[GUESTOS_COMM_LEN];
    /* Linux: the base of the thread's kernel stack (task->stack), 0 if not known. */
    uint64_t kstack;
    /* The control group set the thread is in: a key that changes when the thread moves to
     * another cgroup (Linux: task->cgroups, the css_set's address), 0 if not known; what
     * group_path() reads the cgroup's path from (docs/containers.md). */
    uint64_t group;
    /* The OS layer's own handle of the thread (Linux: the task_struct's address), 0 if not
     * known; what task_ns() reads from. */
    uint64_t handle;
};

/* A thread's ids in its own pid namespace (what a container's processes see), and the
 * namespace: its depth below the initial one and its inode number ("pid:[inum]"). */
struct guestos_ns {
    int32_t ns_tid, ns_pid; /* the thread's and its process's ids there */
    uint32_t level;         /* 0: the initial namespace */
    uint32_t pidns;         /* /proc/PID/ns/pid's inode number */
    uint32_t mntns;         /* /proc/PID/ns/mnt's, 0 if not read */
    char hostname[65];      /* its UTS namespace's (what `hostname` prints there), "" if not read */
};

/* Who a snapshot belongs to. */
struct guestos_ident {
    uint64_t proc_key; /* the process (generic: as_root; Linux: tgid and address space) */
    uint64_t as_root;  /* its user address space: the canonical page-table root; 0 = none */
    /* The address space CR3 holds at this stop (canonical root), which the OS layer's own view
     * of the thread (as_root) may differ from: while the guest switches tasks, or after the
     * task gave up its address space. */
    uint64_t cr3_root;
    uint64_t thread_key; /* the thread within it (generic: the FS base; Linux: the tid) */
    struct guestos_task task;
    bool task_unreadable; /* the layer reads tasks, but not this stop's: generic identity */
};

/* Process keys that are not bare page-table roots (which are below 2^52) carry bit 62 or 63:
 * an OS layer's own keys (guestos/linux/task.h). */
#define GUESTOS_KEY_NOT_ROOT (1ull << 62)

/* An address space to examine on the drain thread: its root and the paging mode it ran with. */
struct guestos_as {
    uint64_t cr0, root, cr4, efer;
    int32_t pid; /* the guest's own process id when known, else -1 */
};

/* A code symbol of the guest kernel at its run-time address; type 0 with an empty name marks
 * the end of the code before it. */
struct guestos_symbol {
    uint64_t addr;
    const char *name;
    uint16_t name_len;
    char type;     /* nm letter: T, t, W, w */
    uint64_t size; /* bytes of code from addr, 0 if not known */
};

/* The guest kernel as its memory describes it (discover_kernel). Owned by the OS layer, valid
 * until guestos_close(). */
struct guestos_kernel {
    char release[65]; /* "6.1.0-27-amd64" */
    uint8_t build_id[20];
    uint32_t build_id_len;
    uint64_t kaslr_offset;         /* run-time - link-time address of the image */
    uint64_t text_start, text_end; /* run-time extent of the code symbols */
    const struct guestos_symbol *syms;
    size_t nsyms;
    char how[384]; /* where it was found and how it was decoded, for the summary */
    /* Whether identify_task() reads the guest's tasks from now on; how, or why not. */
    bool tasks_known;
    char tasks[192];
    /* Whether kernel stacks are unwound with the kernel's ORC tables from now on; what was
     * loaded, or why not (frame pointers then). */
    bool stacks_orc;
    char stacks[192];
    /* Whether user_page_file() and file_page() can tell a page's file and read the kernel's
     * page cache; what they read, or why not. */
    bool files_known;
    char files[192];
    /* Whether group_path() and task_ns() read tasks' cgroups and pid namespaces; how, or why
     * not. */
    bool groups_known;
    char groups[192];
};

/* A loaded kernel module (Linux: a struct module on the `modules` list), as kernel_modules()
 * lists it. */
#define GUESTOS_KMOD_NAME_LEN 64
struct guestos_kmodule {
    char name[GUESTOS_KMOD_NAME_LEN]; /* "kvm_amd" */
    uint64_t text_start, text_end;    /* run-time extent of its code */
    uint64_t handle[2];               /* the OS layer's own */
};
/* One symbol of a kernel module at its run-time address (kernel_module_symbols); nonzero stops. */
typedef int (*guestos_symbol_fn)(void *ctx, const struct guestos_symbol *s);

struct guestos;

/* A file as the guest kernel knows it: which file system (its UUID) and which inode. */
struct guestos_file {
    uint64_t ino;
    uint8_t fs_uuid[16];
    uint64_t size;   /* bytes */
    uint64_t index;  /* the page's index in the file (4 KiB pages), UINT64_MAX if unknown */
    uint64_t handle; /* the OS layer's own (Linux: the address_space's kernel address) */
};

/* A guest thread as a visit of the guest's threads finds it (the threads op, drain thread):
 * who it is (the same identity identify_task gives when it runs), whether it runs, its state
 * and its counters. Its registers come apart (thread_regs), only when its stacks are walked. */
enum guestos_thread_state { /* fs/proc/array.c's letters, in its order (schema.h mirrors it) */
                            GUESTOS_THREAD_RUNNABLE,
                            GUESTOS_THREAD_SLEEPING,
                            GUESTOS_THREAD_DISK_SLEEP,
                            GUESTOS_THREAD_STOPPED,
                            GUESTOS_THREAD_TRACED,
                            GUESTOS_THREAD_DEAD,
                            GUESTOS_THREAD_ZOMBIE,
                            GUESTOS_THREAD_PARKED,
                            GUESTOS_THREAD_IDLE,
};
struct guestos_thread {
    uint64_t handle;          /* the OS layer's own (Linux: the task_struct's address) */
    struct guestos_task task; /* pid, tid, names, kernel stack */
    uint64_t proc_key, thread_key;
    struct guestos_as as; /* its user address space (root 0: none); the paging mode */
    uint64_t kernel_root; /* a root that maps the kernel (for a thread without one) */
    enum guestos_thread_state state;
    bool on_cpu;        /* running on a CPU now (its stacks are the samples') */
    uint32_t cpu;       /* the guest CPU it last ran on (UINT32_MAX: unknown) */
    uint64_t cpu_ns;    /* CPU time so far, as the guest's scheduler counts it */
    uint64_t switches;  /* context switches so far (a change: it ran since) */
    uint64_t resume_sp; /* where its kernel stack was switched out (0: unknown) */
};
typedef int (*guestos_thread_fn)(void *ctx, const struct guestos_thread *t);

struct guestos_ops {
    const char *name;
    /* Exit path. The address space (as_root, thread_key); may complete the snapshot for the
     * walks that follow (kernel_cr3). */
    void (*identify)(const struct guestos *os, struct guestos_vcpu *vc, const struct gmem *mem,
                     struct gw_snapshot *snap, struct guestos_ident *out);
    /* Exit path, optional: the thread as the guest kernel describes it, read through the
     * walker (begun on the completed snapshot). May replace proc_key, as_root and thread_key
     * with the kernel's own identity. */
    void (*identify_task)(const struct guestos *os, struct guestos_vcpu *vc, struct gw_walker *w,
                          struct guestos_ident *out);
    /* Drain thread, optional (NULL: the layer cannot describe the kernel). 1: *out describes
     * the kernel (from now on; later calls return 0); 0: not (yet) found; -1: this kernel cannot
     * be described (err says why; later calls return -1 again). */
    int (*discover_kernel)(struct guestos *os, const struct gmem *mem,
                           const struct guestos_kernel **out, struct hv_err *err);
    /* Drain thread, optional, after discover_kernel() returned 1: the kernel's loaded modules
     * now, at most max. Returns how many, or -1 with err (this kernel's modules cannot be read;
     * err says why). */
    int (*kernel_modules)(struct guestos *os, const struct gmem *mem, struct guestos_kmodule *out,
                          size_t max, struct hv_err *err);
    /* Drain thread, with kernel_modules: the code symbols of one module it listed, in the
     * module's table order. Returns how many were given, or -1 with err. */
    long (*kernel_module_symbols)(struct guestos *os, const struct gmem *mem,
                                  const struct guestos_kmodule *m, guestos_symbol_fn fn, void *ctx,
                                  struct hv_err *err);
    /* Drain thread. Returns the number of modules written to out (<= max). */
    size_t (*discover_modules)(struct guestos *os, const struct gmem *mem,
                               const struct guestos_as *as, struct discover_module *out,
                               size_t max);
    /* Drain thread, optional: the code symbols a module found by discover_modules carries in
     * the guest's memory (its dynamic symbol table), at module-relative (link-time) addresses.
     * Returns how many were given, or -1 if it has none that can be read. */
    long (*module_symbols)(const struct guestos *os, const struct gmem *mem,
                           const struct guestos_as *as, const struct discover_module *m,
                           guestos_symbol_fn fn, void *ctx);
    /* Exit path, optional: after the kernel walk of a user thread's kernel-mode stop, decide
     * whether the user registers it found (k->user_entry) are the thread's own, or find them
     * where the OS keeps them when the walk did not reach them. True: k->user_regs are the
     * thread's registers at kernel entry. Without it: the walk's, if CR3 is the thread's. */
    bool (*user_entry)(const struct guestos *os, struct guestos_vcpu *vc, struct gw_walker *w,
                       const struct guestos_ident *who, struct gw_stack *k);
    /* Drain thread, optional: read len bytes of an address space's user memory (as its
     * program could); false if any byte is not mapped. */
    bool (*read_user)(const struct gmem *mem, const struct guestos_as *as, uint64_t va, void *dst,
                      size_t len);
    /* Drain thread, optional, after discover_kernel() returned 1: the CPU whose kernel panic
     * (or crash dump) is under way, as the kernel itself records it; -1: none; -2: this layer
     * cannot tell (the record is not known, or reads as nothing a kernel writes). */
    int (*panicked)(struct guestos *os, const struct gmem *mem);
    /* Drain thread, optional, after discover_kernel() returned 1: the file the page mapped at
     * user address va caches (a mapped file's page). False: not mapped, not a file's page, or
     * unknown. */
    bool (*user_page_file)(struct guestos *os, const struct gmem *mem, const struct guestos_as *as,
                           uint64_t va, struct guestos_file *out);
    /* Drain thread, optional, with user_page_file: page `index` (4 KiB) of a file it gave, from
     * the guest kernel's page cache, into dst (4096 bytes). 1: copied; 0: not cached (never
     * read, evicted, being read); -1: the file is no longer the one described, or what was read
     * does not hold together. */
    int (*file_page)(struct guestos *os, const struct gmem *mem, const struct guestos_file *f,
                     uint64_t index, void *dst);
    /* Drain thread, optional, after discover_kernel() returned 1: call fn for each thread of
     * the guest (at most `max`; fn returns nonzero to stop). Returns how many were given, or
     * -1 with err when the guest's threads cannot be listed (at all, or this time). */
    long (*threads)(struct guestos *os, const struct gmem *mem, guestos_thread_fn fn, void *ctx,
                    size_t max, struct hv_err *err);
    /* Drain thread, with threads: the kernel-mode registers the thread resumes with, and its
     * user registers at its entry into the kernel (user false: none, a kernel thread, or not
     * readable). False when the kernel ones cannot be read. */
    bool (*thread_regs)(struct guestos *os, const struct gmem *mem, const struct guestos_thread *t,
                        struct gw_regs *kernel, struct gw_regs *user);
    /* Drain thread, with threads, optional: the thread `t` is now (the same task read again:
     * its state, counters and resume point). False when it is gone or cannot be read. */
    bool (*thread_reread)(struct guestos *os, const struct gmem *mem,
                          const struct guestos_thread *t, struct guestos_thread *now);
    /* Drain thread, with threads: whether the thread has not run since `t` was read (the same
     * switch count and resume point, not on a CPU): what was read of its stacks since holds. */
    bool (*thread_unchanged)(struct guestos *os, const struct gmem *mem,
                             const struct guestos_thread *t);
    /* Drain thread, optional, after discover_kernel() returned 1: the path of control group
     * set `group` (guestos_task.group) in the guest's cgroup v2 hierarchy, "/" for its root,
     * into out. Returns its length, or -1 (not readable, or not what a kernel writes). */
    int (*group_path)(struct guestos *os, const struct gmem *mem, uint64_t group, char *out,
                      size_t len);
    /* Drain thread, optional, after discover_kernel() returned 1: the pid namespace ids of the
     * thread whose handle is `handle` (guestos_task.handle), if it is still the thread with
     * guest tid `tid`. False when it cannot be read, or the handle is another thread's now. */
    bool (*task_ns)(struct guestos *os, const struct gmem *mem, uint64_t handle, int32_t tid,
                    struct guestos_ns *out);
    /* Exit path, optional, once per thread: the same through the walker (begun on the
     * snapshot), its pid namespace ids only (hostname and mntns left empty). */
    bool (*task_ns_exit)(const struct guestos *os, struct guestos_vcpu *vc, struct gw_walker *w,
                         uint64_t handle, int32_t tid, struct guestos_ns *out);
    void (*close)(struct guestos *os); /* optional: frees priv */
};

struct guestos {
    const struct guestos_ops *ops;
    const struct gw_unwinder *user_unwinder, *kernel_unwinder;
    void *priv; /* the layer's own state (guestos/linux/: struct lx_layer) */
};

/* The names guestos_open() knows, for help texts: "generic, linux". */
#define GUESTOS_NAMES "generic, linux"

/* The OS layer by name ("generic", "linux"). Fails with the list of known names. */
int guestos_open(struct guestos *os, const char *name, struct hv_err *err);
void guestos_close(struct guestos *os);

static inline int guestos_discover_kernel(struct guestos *os, const struct gmem *mem,
                                          const struct guestos_kernel **out, struct hv_err *err)
{
    return os->ops->discover_kernel ? os->ops->discover_kernel(os, mem, out, err) : 0;
}

static inline bool guestos_user_page_file(struct guestos *os, const struct gmem *mem,
                                          const struct guestos_as *as, uint64_t va,
                                          struct guestos_file *out)
{
    return os->ops->user_page_file && os->ops->user_page_file(os, mem, as, va, out);
}

static inline int guestos_file_page(struct guestos *os, const struct gmem *mem,
                                    const struct guestos_file *f, uint64_t index, void *dst)
{
    return os->ops->file_page ? os->ops->file_page(os, mem, f, index, dst) : -1;
}

static inline long guestos_threads(struct guestos *os, const struct gmem *mem, guestos_thread_fn fn,
                                   void *ctx, size_t max, struct hv_err *err)
{
    if (!os->ops->threads)
        return hv_errk(err, HV_ERR_UNSUPPORTED, "the %s OS layer cannot list the guest's threads",
                       os->ops->name);
    return os->ops->threads(os, mem, fn, ctx, max, err);
}

static inline int guestos_group_path(struct guestos *os, const struct gmem *mem, uint64_t group,
                                     char *out, size_t len)
{
    return os->ops->group_path && group ? os->ops->group_path(os, mem, group, out, len) : -1;
}

static inline bool guestos_task_ns(struct guestos *os, const struct gmem *mem, uint64_t handle,
                                   int32_t tid, struct guestos_ns *out)
{
    return os->ops->task_ns && handle && os->ops->task_ns(os, mem, handle, tid, out);
}

static inline int guestos_panicked(struct guestos *os, const struct gmem *mem)
{
    return os->ops->panicked ? os->ops->panicked(os, mem) : -2;
}

static inline void guestos_vcpu_init(const struct guestos *os, struct guestos_vcpu *vc)
{
    (void)os;
    *vc = (struct guestos_vcpu){0};
    pti_cache_init(&vc->pti);
}

/* Who `snap` belongs to; begins the walker on it (completed with kernel_cr3), for the task read
 * here and the walks that follow. */
static inline void guestos_identify(const struct guestos *os, struct guestos_vcpu *vc,
                                    struct gw_walker *w, struct gw_snapshot *snap,
                                    struct guestos_ident *out)
{
    *out = (struct guestos_ident){0};
    os->ops->identify(os, vc, w->mem, snap, out);
    out->proc_key = out->as_root;
    out->cr3_root = out->as_root;
    gw_walker_begin(w, snap);
    if (os->ops->identify_task)
        os->ops->identify_task(os, vc, w, out);
}

/* The thread's user registers at kernel entry after a kernel walk (the ops' user_entry). */
static inline bool guestos_user_entry(const struct guestos *os, struct guestos_vcpu *vc,
                                      struct gw_walker *w, const struct guestos_ident *who,
                                      struct gw_stack *k)
{
    if (os->ops->user_entry)
        return os->ops->user_entry(os, vc, w, who, k);
    return k->user_entry && who->as_root && who->as_root == who->cr3_root;
}

/* Walk the stack of the walker's current stop with the user / kernel unwinder. */
static inline unsigned guestos_unwind(const struct guestos *os, struct gw_walker *w,
                                      struct gw_stack *st)
{
    struct gw_regs r = gw_regs_of(&w->snap);
    const struct gw_unwinder *u = r.user ? os->user_unwinder : os->kernel_unwinder;
    return gw_unwinder_run(u, w, &r, st);
}

static inline long guestos_module_symbols(const struct guestos *os, const struct gmem *mem,
                                          const struct guestos_as *as,
                                          const struct discover_module *m, guestos_symbol_fn fn,
                                          void *ctx)
{
    return os->ops->module_symbols ? os->ops->module_symbols(os, mem, as, m, fn, ctx) : -1;
}

static inline bool guestos_read_user(const struct guestos *os, const struct gmem *mem,
                                     const struct guestos_as *as, uint64_t va, void *dst,
                                     size_t len)
{
    return os->ops->read_user && os->ops->read_user(mem, as, va, dst, len);
}

static inline size_t guestos_discover_modules(struct guestos *os, const struct gmem *mem,
                                              const struct guestos_as *as,
                                              struct discover_module *out, size_t max)
{
    return os->ops->discover_modules(os, mem, as, out, max);
}
