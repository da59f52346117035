/* The recording engine behind `hvprof record`: per-vCPU timer exits, partial samples at the exit,
 * user-stack walks deferred until the guest thread is back in user mode (RFC-0274's model with
 * the hypervisor as "the kernel"), per-vCPU lock-free rings, one drain thread writing FXT.
 * docs/sampling.md describes the design; docs/fxt-samples.md the records.
 *
 *   struct sampler *s = sampler_create(&cfg, &err);    // opens the output: fails before boot
 *   struct vm_hooks h; sampler_hooks(s, &h);           // give them to vm_create (run_session_open)
 *   sampler_attach(s, vm, &boot.image, &err);          // guest memory, the file takes its name
 *   (the command confines itself here: sandbox/sandbox.h)
 *   sampler_start(s, &err);                            // the drain thread
 *   vm_run(vm, &res, &err);
 *   sampler_finish(s, &err);                           // drain, loss records, close the file
 *   sampler_print_summary(s, stderr);
 *   sampler_destroy(s);
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "diskfs/diskfs.h"
#include "sampler/exit/mode.h"
#include "vmm/boot/boot.h"
#include "vmm/vm.h"

#define SAMPLER_DEFAULT_HZ         1000u
#define SAMPLER_DEFAULT_BUFFER     (1u << 20) /* bytes per vCPU ring */
#define SAMPLER_DEFAULT_RECHECK_NS 200000ull  /* 200 us: see docs/sampling.md */
#define SAMPLER_DEFAULT_ABANDON    10u        /* sampling periods a continuation may stay open */
/* ... and at least this long: a guest system call or time slice outlasts 10 periods at 10 kHz */
#define SAMPLER_ABANDON_MIN_NS 10000000ull

struct sampler_config {
    const char *out_path;
    bool force_output; /* --force: replace an existing file that is not a recording */
    unsigned nvcpus;
    uint64_t hz;
    enum sampler_mode mode;
    unsigned max_depth;       /* frames per stack (user and kernel each), 1..1000 */
    uint64_t buffer_bytes;    /* per-vCPU ring */
    uint64_t recheck_ns;      /* re-check period while a continuation is pending; 0 = none */
    unsigned abandon_periods; /* a continuation open longer than this many periods is abandoned */
    bool no_leaf_repair;
    /* Kernel-mode samples take the user stack only through a continuation, even when the kernel
     * walk found the user registers at kernel entry (docs/orc.md). */
    bool defer_user_stacks;
    const char *vm_name;    /* names the VM process in the trace */
    const char *guest_desc; /* kernel path etc., for the session_start marker */
    const char *kernel_elf; /* an ELF64 guest kernel's path (its symbols come with the trace) */
    const char *symbol_dir; /* where the guest's symbol files are, if known (a hint for report) */
    const char *guest_os;   /* the OS layer (guestos_open): "generic", "linux"; NULL = generic */
    /* The guest's binaries on the host (`record --symbols DIR`): a binary's file by build-id
     * (and name), as a malloc'd path, or NULL. Used for DWARF CFI that the guest's memory does
     * not show whole (docs/cfi.md); NULL: none. */
    char *(*find_file)(void *ctx, const uint8_t *build_id, uint32_t build_id_len, const char *name);
    void *find_file_ctx;
    /* The disks hvprof serves, their files read by inode (diskfs/): a binary whose unwind tables
     * the guest's memory does not show whole, and that is on one of them, is read from there
     * (docs/diskfs.md). NULL: none. Used on the drain thread only. */
    struct diskfs *disks;
    bool quiet; /* no progress line */
    /* Bytes of metadata records (modules, mappings, symbols, names) the recording may hold;
     * 0: META_BUDGET_DEFAULT (sampler/meta_budget.h, `record --max-metadata`). */
    uint64_t max_metadata;
    /* The flight recorder (`record --ring`, sampler/flight.h): 0, or the bytes of samples kept,
     * the newest; ring_window_ns: keep only the last this many ns too (0: size only);
     * ring_keep: snapshot files kept, the newest (at least 1). */
    uint64_t ring_bytes;
    uint64_t ring_window_ns;
    unsigned ring_keep;
    /* Exit events (`record --events exits`, docs/exits.md): a record of each exit the VMM
     * handles (its site and host time), with the guest's stacks at every exit_every-th of a
     * vCPU's; 0: as long as their walks take at most a twentieth of the vCPU's time
     * (sampler/exit/exit.c). */
    bool exit_events;
    unsigned exit_every;
    /* Off-CPU time of every guest thread (`record --off-cpu`, docs/off-cpu.md): visits of the
     * guest's threads this many times a second on the drain thread; 0: none. */
    uint64_t off_cpu_hz;
    /* No Python frames (`record --no-python`): CPython interpreters (3.11, 3.13) are not
     * looked for (docs/python.md). */
    bool no_python;
};

struct sampler;

struct sampler *sampler_create(const struct sampler_config *cfg, struct hv_err *err);
void sampler_hooks(struct sampler *s, struct vm_hooks *out);
/* `kernel`: the ELF64 kernel the VMM loaded (cfg.kernel_elf names it), or NULL. */
int sampler_attach(struct sampler *s, struct vm *vm, const struct boot_kernel_image *kernel,
                   struct hv_err *err);
/* The drain thread, after sampler_attach (and after the command confined itself). */
int sampler_start(struct sampler *s, struct hv_err *err);
/* The recording's descriptor (to hand it to the user the process becomes), -1 for none. */
int sampler_output_fd(const struct sampler *s);
/* After vm_run returned: stop the drain thread, move what is left (with loss records), write
 * the session_stop marker and close the file. Returns -1 if the recording could not be written
 * completely (err says why; what was written before the failure is a valid prefix). */
int sampler_finish(struct sampler *s, struct hv_err *err);
void sampler_print_summary(const struct sampler *s, FILE *out);
/* With cfg.ring_bytes: ask the drain thread for a snapshot of the flight recorder (written
 * within one pass, ~10 ms). Async-signal-safe: `record` calls it on SIGUSR2. */
void sampler_request_snapshot(struct sampler *s);
/* Before sampler_finish, with cfg.ring_bytes: the guest ended the recording itself (a reset, a
 * triple fault, an internal error; `why` names it): the flight recorder writes a snapshot
 * for it, and the file's session_stop says why. */
void sampler_guest_stopped(struct sampler *s, const char *why);
/* --quiet: only what the file lacks (records lost to a write error or dropped, metadata left
 * out), one line each. */
void sampler_print_warnings(const struct sampler *s, FILE *out);
/* One line per vCPU with the exit hook's mean time per stage (`hvprof record --stage-times`):
 *   stage-times vcpu=I samples=N user=.. kernel=.. idle=.. missed=.. dropped=.. exits=..
 *               rechecks=.. walk_fail=.. regs_ns=.. walk_ns=.. push_ns=.. total_ns=.. max_ns=..
 * regs = the vCPU snapshot (registers; the MP state at kernel-mode ticks); walk = identity, user
 * walk, completion records; push = the sample's kernel walk and ring record, and re-check timer
 * bookkeeping (sampler/exit/exit.c, sampler/exit/sample.c). */
void sampler_print_stage_times(const struct sampler *s, FILE *out);
void sampler_destroy(struct sampler *s);

/* Totals for tests and the summary. */
struct sampler_totals {
    uint64_t user, kernel, idle, missed, completed, abandoned, dropped, rechecks, exits;
    uint64_t records; /* sample records written by the vCPU threads (ring commits) */
    /* Kernel samples whose walk reached the user entry frame, and of those whose user stack
     * was walked from there at once (docs/orc.md). */
    uint64_t user_entry, user_at_entry;
    double mean_exit_ns; /* mean VMM time per sample exit */
};
void sampler_get_totals(const struct sampler *s, struct sampler_totals *t);
