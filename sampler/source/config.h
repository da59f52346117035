/* What `hvprof record` was asked for: the recorder's configuration, read by the recorder core
 * (sampler/sampler.h) and by every source (sampler/source/source.h). Filled by `record`'s
 * options (cli/run_opts.c); the defaults are in sampler/sampler.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "sampler/exit/mode.h"

struct diskfs;

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
    const char *vm_name;      /* names the VM process in the trace */
    const char *guest_desc;   /* kernel path etc., for the session_start marker */
    const char *command_line; /* record's own, for the session_info marker (NULL: none) */
    const char *kernel_elf;   /* an ELF64 guest kernel's path (its symbols come with the trace) */
    const char *symbol_dir;   /* where the guest's symbol files are, if known (a hint for report) */
    const char *guest_os;     /* the OS layer (guestos_open): "generic", "linux"; NULL = generic */
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
    /* No progress line either: the guest's console shares its terminal (record --console -),
     * where the line would be glued to the guest's. */
    bool no_progress;
    /* Bytes of metadata records (modules, mappings, symbols, names) the recording may hold;
     * 0: META_BUDGET_DEFAULT (sampler/parts/meta_budget.h, `record --max-metadata`). */
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
