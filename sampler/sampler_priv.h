/* Internals shared by the recorder's files (vCPU hooks, timers, drain thread, modules, kernel
 * description, CFI compiling, flight recorder, summaries). What runs at each exit is the exit
 * core (sampler/exit/core.h); the recorder sets it up, drains its rings and reads its counters. */
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <time.h>

#include "common/vector.h"
#include "common/output.h"
#include "fxt/ring.h"
#include "fxt/writer.h"
#include "guestos/guestos.h"
#include "guestwalk/snapshot.h"
#include "guestwalk/unwind.h"
#include "guestwalk/walker.h"
#include "sampler/exit/core.h"
#include "sampler/flight.h"
#include "sampler/meta_budget.h"
#include "sampler/module_files.h"
#include "sampler/sampler.h"
#include "schema/encode.h"
#include "schema/recording.h"

/* The guest kernel's self-description (sampler/kernel.c), drain thread only. */
enum sampler_kernel_state {
    SAMPLER_KERNEL_SEARCHING,
    SAMPLER_KERNEL_FOUND,
    SAMPLER_KERNEL_FAILED,
};
#define SAMPLER_KERNEL_MODULE_NAME "[kernel.kallsyms]" /* perf's name for the kernel */
/* A bzImage's decompressor (sampler_modules_decompressor): its module and its one symbol. */
#define SAMPLER_DECOMPRESSOR_MODULE_NAME "[decompressor]"
#define SAMPLER_DECOMPRESSOR_SYMBOL      "bzImage_decompressor" /* no spaces in a symbol */
/* A vCPU the guest has not started yet (sampler_modules_reset_vector): its module and symbol. */
#define SAMPLER_RESET_MODULE_NAME "[reset vector]"
#define SAMPLER_RESET_SYMBOL      "vcpu_not_started"
struct sampler_kernel {
    enum sampler_kernel_state state;
    uint64_t attempts, last_try_ns, interval_ns, found_ns, scan_ns;
    char message[HV_ERR_MSG_MAX + 256];
    bool tasks_known; /* the OS layer reads each stop's guest task from now on */
    char tasks[192];  /* how, or why not */
    bool stacks_orc;  /* kernel stacks unwound with the kernel's ORC tables */
    char stacks[192]; /* what was loaded, or why not */
    bool files_known;
    char files[192]; /* how a page's file and the page cache are read, or why not */
    size_t symbols;  /* code symbols recorded (as many as the metadata budget held) */
    bool panic_seen; /* the guest kernel's own record of a panic (guestos_panicked) */
    int panic_cpu;
    uint64_t panic_ns;
};

/* Kernel modules recorded so far (kernel_modules.c, drain thread). */
struct sampler_kmod_seen {
    char name[GUESTOS_KMOD_NAME_LEN];
    uint64_t start, end;
};
struct sampler_kmods {
    VECTOR_FIELDS(struct sampler_kmod_seen);
    uint64_t polls, last_ns, poll_ns, symbols, over;
    uint64_t deferred; /* polls cut short by the drain pass's slice (continued at the next) */
    unsigned listed, unreadable, list_failures;
    bool failed;
    char message[HV_ERR_MSG_MAX];
};

struct sampler {
    struct sampler_config cfg;
    struct vm *vm;
    const struct gmem *mem; /* the guest's memory (the VM's, or a test's) */
    struct guestos os;      /* what the guest's OS tells (guestos/guestos.h) */
    struct exit_core core;  /* what the vCPU threads read at each exit (sampler/exit/core.h) */
    struct fxt_writer w;
    struct hv_output out; /* the recording's file and directory (common/output.h) */
    bool writer_open;
    uint64_t period_ns;
    uint64_t start_ns;

    /* drain thread */
    pthread_t drain;
    bool drain_started;
    _Atomic bool drain_stop;
    /* The guest-driven work of one stage of a drain pass (first looks at new address spaces,
     * re-looks, kernel modules) ends at this time; the final pass has its own, longer slice
     * (drain.c, docs/reliability.md "Budgets"). */
    uint64_t stage_deadline_ns;
    bool final_pass;
    _Atomic bool write_failed;
    struct hv_err write_err;
    uint32_t named_procs_scan, named_threads_scan; /* drain-side progress over the id tables */
    uint8_t *proc_named; /* per proc slot: 0 new, 1 named, 2 modules discovered */
    uint8_t *thread_named;
    uint32_t *proc_seq, *thread_seq; /* label sequence each was last named at (id_label.h) */
    struct sampler_modules *mods;
    struct sampler_cfi *cfi;         /* user modules' DWARF CFI (cfi_tables.c) */
    struct sampler_copies *copies;   /* stacks copied at exits, walked later (copied_stacks.c) */
    struct sampler_steal *steal;     /* steal markers as the vCPUs run (steal_timeline.c) */
    struct sampler_off_cpu *off_cpu; /* off-CPU visits of the guest's threads (off_cpu.c) */
    struct sampler_python *py;       /* CPython interpreters in guest processes (python.c) */
    struct sampler_file_stats files; /* modules' files read (module_files.c) */
    struct sampler_kernel kernel;
    struct sampler_kmods kmods;
    struct meta_budget meta; /* metadata records' budget (drain thread) */
    uint64_t drained_records;
    uint64_t lost;          /* records not written after a write failure (writer + rings) */
    _Atomic uint64_t lstar; /* guest MSR_LSTAR at the end (vCPU 0), for Linux KASLR */
    uint64_t last_progress_ns;
    bool host_virtualized;        /* hvprof itself runs in a VM: timings are emulated */
    bool flight_on;               /* cfg.ring_bytes: samples go to the flight recorder */
    struct sampler_flight flight; /* drain thread's, but for its request counter */
    const char *guest_stop;       /* sampler_guest_stopped's `why`, or NULL */
};

/* The recording whose exit core `core` is. */
static inline struct sampler *sampler_of(struct exit_core *core)
{
    return (struct sampler *)((char *)core - offsetof(struct sampler, core));
}

/* sampler.c: the walker of one vCPU (sampler_vcpu_start; tests call it directly) */
int sampler_vcpu_prepare(struct exit_vcpu *sv, struct hv_err *err);

/* timer.c */
int sampler_timers_create(struct exit_vcpu *sv, pid_t tid, struct hv_err *err);
void sampler_timers_delete(struct exit_vcpu *sv);

/* sampler.c: the session_stop marker into `w` (the file, or a flight recorder's snapshot,
 * `snapshot` saying why it was written; NULL for a recording without --ring). */
int sampler_write_stop_marker(struct sampler *s, struct fxt_writer *w, const char *snapshot,
                              struct hv_err *err);

/* kernel.c: once the kernel is described, look for its panic each pass (one read) */
int sampler_kernel_watch_panic(struct sampler *s, uint64_t now, bool final, struct hv_err *err);

/* drain.c */
/* Whether the current stage of the drain pass may start another unit of guest-driven work:
 * its time slice is not spent, and the recording is not stopping (the final pass excepted). */
bool sampler_drain_may_work(const struct sampler *s);
int sampler_drain_start(struct sampler *s, struct hv_err *err);
void sampler_drain_stop(struct sampler *s);
int sampler_drain_once(struct sampler *s, bool final);

/* modules.c: module discovery of guest address spaces, on the drain thread */
struct sampler_modules *sampler_modules_create(void);
void sampler_modules_destroy(struct sampler_modules *m);
/* Module and mapping records from now on within `b` (sampler.c, once the file is open). */
void sampler_modules_budget(struct sampler_modules *m, struct meta_budget *b);
int sampler_modules_discover(struct sampler *s, uint32_t proc, const struct id_proc *p,
                             struct hv_err *err);
/* modules.c: look again at processes that keep running user code (a drain pass). -1 only when
 * the file cannot be written. */
int sampler_modules_poll(struct sampler *s, uint64_t now, struct hv_err *err);
/* When the last look at process `proc`'s address space began (hv_now_ns), 0 before its first:
 * what it published (its modules' tables: sampler_cfi_update) is in place by its return. */
uint64_t sampler_modules_looked(const struct sampler *s, uint32_t proc);
void sampler_modules_summary(const struct sampler *s, FILE *out);
/* cfi_tables.c: user modules' DWARF CFI, compiled on the drain thread after each look at an
 * address space, published per process to the exit path (docs/cfi.md). */
struct sampler_cfi *sampler_cfi_create(void);
void sampler_cfi_destroy(struct sampler_cfi *c);
void sampler_cfi_update(struct sampler *s, uint32_t proc, const struct guestos_as *as,
                        const struct discover_module *found, size_t n);
/* The maps published to the exit path (sampler/exit/cfi_maps.h). */
const struct exit_cfi_maps *sampler_cfi_maps(const struct sampler_cfi *c);
void sampler_cfi_summary(const struct sampler *s, FILE *out);
/* python.c: CPython interpreters found after each look at an address space and published to
 * the exit path; the code objects samples name, read into Python code records as the rings
 * are drained (docs/python.md). */
struct sampler_python *sampler_python_create(void);
void sampler_python_destroy(struct sampler_python *p);
const struct exit_py_runtimes *sampler_python_runtimes(const struct sampler_python *p);
void sampler_python_update(struct sampler *s, uint32_t proc, const struct guestos_as *as,
                           const struct discover_module *found, size_t n);
/* Candidates whose interpreter could not be read yet, tried again (a drain pass). */
void sampler_python_poll(struct sampler *s, uint64_t now);
/* fxt_record_visit_fn, ctx the sampler: names the code objects of a sample about to be
 * written. */
int sampler_python_visit(void *ctx, const uint64_t *rec, uint32_t nwords, struct hv_err *err);
void sampler_python_summary(const struct sampler *s, FILE *out);
/* A walker of the drain thread's, opened at its first use (capstone, for the leaf repair):
 * false when it cannot be (then never again). */
struct sampler_walker {
    struct gw_walker w;
    bool ok, failed;
};
bool sampler_drain_walker(const struct sampler *s, struct sampler_walker *dw);
void sampler_drain_walker_close(struct sampler_walker *dw);
/* copied_stacks.c: the stacks the exit path copied for a walk later (sampler/exit/stack_copy.h):
 * their queues (none with a flight recorder or in exits mode), each pass's walks and
 * completions (-1 only when the file cannot be written), the summary line. */
int sampler_copies_init(struct sampler *s, struct hv_err *err);
void sampler_copies_free(struct sampler *s);
int sampler_copies_poll(struct sampler *s, uint64_t now, bool final, struct hv_err *err);
void sampler_copies_summary(const struct sampler *s, FILE *out);
/* steal_timeline.c: each vCPU thread's steal time as markers every 0.1 s and at its stop (none
 * with a flight recorder); -1 only when the file cannot be written. */
int sampler_steal_init(struct sampler *s, struct hv_err *err);
void sampler_steal_free(struct sampler *s);
int sampler_steal_poll(struct sampler *s, uint64_t now, struct hv_err *err);
/* off_cpu.c: off-CPU time of every guest thread (`record --off-cpu`): a visit of the guest's
 * threads when due (records queued until their threads are named; `final` writes what every
 * thread has pending), the queued records into the file, the summary line. -1 only when the
 * file cannot be written or memory runs out. */
int sampler_off_cpu_init(struct sampler *s, struct hv_err *err);
void sampler_off_cpu_free(struct sampler *s);
int sampler_off_cpu_poll(struct sampler *s, uint64_t now, bool final, struct hv_err *err);
int sampler_off_cpu_emit(struct sampler *s, struct hv_err *err);
void sampler_off_cpu_summary(const struct sampler *s, FILE *out);
/* exit_events.c: the names of the VM's exit sites (vmm/exit_sites.h) as the symbols of
 * HVFXT_EXIT_MODULE, and the summary's account of exit events (docs/exits.md). */
int sampler_exit_sites_record(struct sampler *s, struct hv_err *err);
void sampler_exit_events_summary(const struct sampler *s, FILE *out);
/* kernel.c: the guest kernel's description of itself into the recording, on the drain thread
 * (rate-limited; `final` forces a last look). -1 only when the file cannot be written. */
int sampler_kernel_poll(struct sampler *s, uint64_t now, bool final, struct hv_err *err);
void sampler_kernel_summary(const struct sampler *s, FILE *out);
/* kernel_modules.c: the guest kernel's loaded modules into the recording, on the drain thread,
 * once the kernel is described (a look a second; `final` forces one). -1 only when the file
 * cannot be written. */
int sampler_kmods_poll(struct sampler *s, uint64_t now, bool final, struct hv_err *err);
void sampler_kmods_summary(const struct sampler *s, FILE *out);
void sampler_kmods_free(struct sampler *s);
/* A guest kernel the OS layer described (kernel.c): its module and mapping records in guest
 * address space 0; returns the module id, -2 when the metadata budget left it out (counted
 * there), or -1 when the file cannot be written. */
int64_t sampler_modules_record_kernel(struct sampler *s, const struct discover_module *m,
                                      uint64_t ts, struct hv_err *err);
/* A bzImage the VMM loaded: [start, end) (load address + init_size) as the module
 * "[decompressor]" in guest address space 0, one symbol spanning it, so that the boot's samples
 * in the decompressor are named. -1 only when the file cannot be written. */
int sampler_modules_decompressor(struct sampler *s, uint64_t start, uint64_t end,
                                 struct hv_err *err);
/* Wall mode with a kernel the VMM loaded itself: an application processor waits for the guest's
 * startup IPI in the reset state, its RIP at the reset vector 0xfff0 in real mode (SDM Vol. 3A
 * 9.1.4), and every tick samples it there. The page [0xf000, 0x10000) as the module
 * "[reset vector]" in guest address space 0, the symbol "vcpu_not_started" at 0xfff0: no code
 * of a directly loaded kernel runs there (an AP's startup IPI starts it at its own vector page).
 * -1 only when the file cannot be written. */
int sampler_modules_reset_vector(struct sampler *s, struct hv_err *err);
/* A guest kernel ELF the VMM loaded (`name`, its image): module + mappings into guest address
 * space 0 at its link addresses. */
int sampler_modules_kernel_image(struct sampler *s, const char *name,
                                 const struct boot_kernel_image *img, struct hv_err *err);
