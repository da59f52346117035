/* The profile model every report format is written from: samples with leaf-first stacks, guest
 * processes/threads, modules (ELF images, by build-id) and their mappings per address space, and
 * after profile_symbolize() one location per distinct (address space, address) and one function
 * per distinct (module, name). Unresolved frames keep `module+0xoff` or the raw address: nothing
 * is dropped. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/container_id.h"
#include "common/err.h"
#include "common/vector.h"
#include "schema/schema.h"
#include "symbolize/dwarf_lines.h"
#include "symbolize/source.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/symbol_path.h"
#include "symbolize/symtab.h"

#define PROF_NONE       UINT32_MAX
#define PROF_PID_ANY    UINT64_MAX /* mapping valid in every address space (the guest kernel) */
#define PROF_CPL_KERNEL 0
#define PROF_CPL_USER   3

/* Frame flags. */
#define PROF_FRAME_RA 1u /* a return address: symbolized at addr - 1 (the call instruction) */
#define PROF_FRAME_KERNEL                                                                          \
    2u /* a guest-kernel address: looked up in PROF_PID_ANY mappings (the                          \
        * test guest's kernel and its programs share low addresses, so the                         \
        * address alone cannot tell) */
/* A language runtime's frame as recorded (runtime/runtime.h): two entries, the code word
 * (schema/encode.h, HVFXT_RT_*) then the frame's position; the runtime's id in bits 8..11 of
 * both. The loader puts them before a sample's native frames; profile_symbolize() has the
 * runtime's report half merge them into the native stack as PROF_FRAME_RUNTIME frames (for
 * Python: each _PyEval_EvalFrameDefault frame gives way to the Python frames it runs). */
#define PROF_FRAME_RT_RAW 4u
/* A runtime's frame: its runtime's id in bits 8..11, bits 12..31 the position within its code
 * the runtime's report half made of it (Python: the code unit; PROF_RT_INDEX_NONE: unknown);
 * addr its code object's address, or with PROF_FRAME_RT_CODE the index of the code record
 * that names it (the one before the sample in the recording: an address a freed code object
 * left is reused by another). */
#define PROF_FRAME_RUNTIME 8u
#define PROF_FRAME_RT_CODE 16u
/* On a recorded runtime frame's first entry: where the frames of one native frame end
 * (HVFXT_RT_ENTRY; for Python the frame entered the evaluation loop from C). */
#define PROF_FRAME_RT_ENTRY        32u
#define PROF_RT_INDEX_NONE         0xfffffu
#define PROF_FRAME_RT_ID(flags)    (((flags) >> 8) & 0xfu)
#define PROF_FRAME_RT_ID_OF(id)    ((uint32_t)(id) << 8)
#define PROF_FRAME_RT_INDEX(flags) ((flags) >> 12)
#define PROF_FRAME_RT_INDEX_OF(ix) ((uint32_t)(ix) << 12)

struct prof_frame {
    uint64_t addr;
    uint32_t loc; /* location index after profile_symbolize(), else PROF_NONE */
    uint32_t flags;
};

struct prof_sample {
    uint64_t ts;      /* ticks (profile.ticks_per_sec) */
    uint64_t ts_last; /* the last of the samples merged into it (profile.aggregate), else ts */
    uint64_t pid, tid;
    uint64_t weight; /* number of samples this entry stands for (1 from the recorder) */
    uint32_t vcpu;
    uint8_t cpl;    /* 0 kernel, 3 user */
    uint32_t first; /* index of the leaf frame in profile.frames */
    uint32_t nframes;
    uint64_t exit_ns; /* an exit event's host time (profile.exits), else 0 */
    /* An off-CPU record (profile.off_cpu or .wall): the nanoseconds it accounts for; 0 for a
     * sample taken on the CPU. */
    uint64_t off_cpu_ns;
    uint32_t group; /* its control group: 1 + its index in profile.groups; 0: none recorded */
};

/* A vCPU thread's steal time so far (the recording's vcpu_steal markers, docs/sampling.md
 * "Steal time"): the difference of two of one vCPU is the steal between them. */
struct prof_steal {
    uint64_t ts;       /* ticks */
    uint64_t steal_ns; /* since the vCPU thread started */
    uint32_t vcpu;
};

struct prof_module {
    char *name; /* as recorded (path or soname), never NULL */
    uint8_t build_id[ELF_BUILD_ID_MAX];
    uint32_t build_id_len;
    bool kernel;
    struct sym_source src; /* its symbols: a symbol file, kallsyms, the recording's (symbolize/) */
    bool has_functions;    /* at least one frame resolved to a function */
    uint8_t runtime;       /* HVFXT_RUNTIME_*: a runtime's source file (functions from its
                            * code records); 0 a native module */
};

struct prof_mapping {
    uint64_t pid;         /* address space, PROF_PID_ANY for the kernel */
    uint64_t start, size; /* runtime range */
    uint64_t bias;        /* runtime - link address (KASLR slide for a kernel) */
    uint64_t file_offset; /* file offset of `start` (pprof Mapping.file_offset) */
    uint32_t module;
    bool file_offset_known; /* recorded, not derived from the vaddrs */
};

struct prof_name {
    uint64_t pid, tid; /* tid = 0 for a process */
    char *name;
    int64_t guest_id; /* the guest's own pid (process) or tid (thread); -1: not recorded */
    uint64_t row;     /* a process: the pid of its row (profile_link_processes); 0: its own */
    /* Its id in its own pid namespace (a container's) and that namespace's inode number, when
     * the recording says it is not the initial one; -1 and 0 otherwise (profile_groups.c). */
    int64_t ns_id;
    uint64_t pid_ns;
    char *hostname; /* a thread's UTS hostname there, NULL if not recorded */
};

/* A control group the recording's samples were in (docs/containers.md): its path, and the
 * container the path names, if any (common/container_id.h). */
struct prof_group {
    uint64_t koid;
    char *path;
    struct container_id ct; /* engine CT_NONE, id "": no container */
};

struct prof_loc {
    uint64_t space;    /* pid whose address space the address is in (PROF_PID_ANY: kernel) */
    uint64_t addr;     /* runtime address as sampled */
    uint32_t flags;    /* PROF_FRAME_RA of the first frame seen here (part of the key) */
    uint32_t mapping;  /* PROF_NONE if no mapping covers the address */
    uint32_t func;     /* always valid: a real function or a fallback name */
    uint64_t func_off; /* addr - bias - function start; 0 for fallbacks */
    bool resolved;     /* func is a symbol (not a module+0xoff / raw fallback) */
    uint32_t line;     /* source line in the function's file (profile.want_lines), 0 unknown */
    /* The functions inlined at this address (want_lines, from DWARF), innermost first:
     * profile.inl[inl_first .. inl_first + ninl); the location's func is the one they were
     * inlined into. pprof writes them as the location's first lines. */
    uint32_t inl_first;
    uint16_t ninl;
};

/* A function inlined at a location, and the line the location is on in it. */
struct prof_inline {
    uint32_t func;
    uint32_t line;
};

struct prof_func {
    char *name;      /* "main", "hello+0x1136", "0xffffffff81000000" */
    uint32_t module; /* PROF_NONE for raw addresses */
    char *file;      /* its source file from the module's DWARF (want_lines), NULL unknown */
    uint32_t start_line;
    uint8_t runtime; /* HVFXT_RUNTIME_*: a runtime's function (Python: its qualified name, module
                      * and file its .py file); 0 native */
};

/* What a recording says of itself (its session markers and guest_kernel event; `report
 * --header`): strings empty and numbers 0 where the recording does not say. */
struct prof_header {
    char guest[256];    /* the guest as record named it: kernel/disk/domain */
    char mode[16];      /* sampling mode: cpu, wall, ... */
    char osrelease[65]; /* the guest kernel's release, from its memory */
    char version[64];   /* hvprof's version that recorded it */
    char command[1024]; /* record's command line */
    uint64_t hz;        /* samples per second per vCPU */
    uint32_t vcpus;
    uint64_t start_unix_ns;    /* the wall-clock time of session_start, UNIX epoch */
    uint64_t stop_ts;          /* session_stop's time (ticks), 0 if absent */
    bool exit_events, off_cpu; /* recorded with --events exits, --off-cpu */
};

struct profile {
    VECTOR(struct prof_sample) samples;
    VECTOR(struct prof_frame) frames;
    VECTOR(struct prof_module) modules;
    VECTOR(struct prof_mapping) mappings;
    VECTOR(struct prof_name) names; /* processes and threads */
    VECTOR(struct prof_group) groups;
    VECTOR(struct prof_loc) locs;
    VECTOR(struct prof_func) funcs;
    VECTOR(struct prof_inline) inl;  /* the locations' inlined frames (prof_loc.inl_first) */
    VECTOR(struct prof_steal) steal; /* in the recording's order */
    uint64_t ticks_per_sec;          /* 1e9 if unknown */
    uint64_t period_ns;              /* sampling period; 0 if unknown */
    uint64_t start_ts;               /* the session_start marker's time (ticks); 0 if unknown */
    uint64_t kernel_lstar;           /* guest MSR_LSTAR at record time, 0 if unknown */
    uint64_t stacks_cut; /* stack walks cut at --max-depth or the record size (root end lost) */
    /* How walks found the interrupted function's caller, [0] kernel [1] user walks, by
     * enum hvfxt_caller (the walk word; docs/fxt-samples.md). */
    uint64_t callers[2][16];
    char symbol_dir[512]; /* recorder's hint: where the guest's symbol files are */
    struct prof_header header;
    void *index;       /* private lookup state (hash tables) */
    void *func_index;  /* private: functions by (name, module) (profile_funcs.c) */
    void *name_index;  /* private: names by (pid, tid) */
    void *group_index; /* private: groups by koid (profile_groups.c) */
    void *maps_index;  /* private: modules and mappings by key and address (profile_maps.h) */
    void *agg_index;   /* private: samples by key, when aggregating (profile_aggregate.c) */
    void *stack_index; /* private: a stack's first sample (profile_aggregate.c) */
    /* private: each runtime's code records (its report half's), freed with its free */
    struct {
        void *data;
        void (*free)(void *data);
    } runtime[HVFXT_RUNTIME_MAX];
    bool guest_ids; /* some process or thread has a guest pid / tid */
    /* profile_symbolize also looks up source lines in the symbol files' DWARF (for pprof's
     * -list; costs a DWARF scope lookup per distinct address). */
    bool want_lines;
    /* Load exit events instead of the timer's samples (`report --exits`, docs/exits.md): each
     * with its stacks under a root frame naming its exit site (hvfxt_exit_frame). */
    bool exits;
    /* Load the off-CPU records instead (`report --off-cpu`, docs/off-cpu.md), or both them and
     * the timer's samples (`report --wall`): weights are then microseconds (weight_us), an
     * off-CPU record's its time off the CPU, a sample's the sampling period. Each off-CPU stack
     * has a leaf frame naming the thread's state (hvfxt_off_cpu_frame). */
    bool off_cpu, wall;
    bool weight_us;
    /* One entry per distinct (pid, tid, vCPU, ring, stack), its weight all of theirs (the
     * memory of a report grows with distinct stacks, not samples): for every format but those
     * that need each sample's time (the timeline, perf-script, a --time window). An entry's
     * ts is its first sample's, ts_last its last's. Set before loading. */
    bool aggregate;
    /* Function names as the symbol files hold them: C++ and Rust names not demangled (`report
     * --no-demangle`). Set before symbolizing. */
    bool no_demangle;
};

void profile_init(struct profile *p);
void profile_free(struct profile *p);

/* Building. A sample: its frames leaf first; flags may be NULL: frame 0 is then an exact pc,
 * the rest return addresses, and all are kernel frames iff cpl == 0. Returns the index, or
 * -1. */
struct prof_sample_in {
    uint64_t ts, pid, tid;
    uint32_t group; /* profile_group_of() of its cgroup koid (0: none) */
    uint32_t vcpu;
    uint8_t cpl;
    const uint64_t *addrs;
    const uint32_t *flags;
    uint32_t n;
    uint64_t weight;
    uint64_t off_cpu_ns, exit_ns; /* an off-CPU record's time, an exit event's host time */
};
int profile_add_sample(struct profile *p, const struct prof_sample_in *in, struct hv_err *err);
/* Returns the module index; an existing module with the same build-id (or, without one, the same
 * name) is reused. */
int profile_add_module(struct profile *p, const char *name, const uint8_t *build_id,
                       uint32_t build_id_len, bool kernel, struct hv_err *err);
int profile_add_mapping(struct profile *p, uint64_t pid, uint64_t start, uint64_t size,
                        uint64_t bias, uint64_t file_offset, uint32_t module, struct hv_err *err);
/* Set the name of a process (tid == 0) or thread, and the guest's own pid / tid for it
 * (guest_id >= 0; -1 keeps what was set); a later name replaces an earlier one. */
int profile_set_name(struct profile *p, uint64_t pid, uint64_t tid, const char *name,
                     int64_t guest_id, struct hv_err *err);

/* Control groups (profile_groups.c). A group record: its koid and path (a later record of the
 * same koid replaces the path). A koid's group as samples refer to it, 1 + its index in
 * profile.groups, 0 if none was recorded.
 * A thread's ids in its pid namespace (the thread's and its process's): on the thread's name
 * and its process's. */
int profile_add_group(struct profile *p, uint64_t koid, const char *path, struct hv_err *err);
uint32_t profile_group_of(const struct profile *p, uint64_t koid);
int profile_set_ns(struct profile *p, uint64_t pid, uint64_t tid, int64_t ns_tid, int64_t ns_pid,
                   uint64_t pid_ns, const char *hostname, struct hv_err *err);
/* A sample's group (NULL: none), and its container's name as the engines list it (the first 12
 * hex digits of an id, or the name) into buf; "" when the group is no container's. */
const struct prof_group *profile_sample_group(const struct profile *p, const struct prof_sample *s);
const char *profile_group_container(const struct prof_group *g, char *buf, size_t len);
/* The name (process: tid 0) of (pid, tid), NULL if none recorded. */
const struct prof_name *profile_name_of(const struct profile *p, uint64_t pid, uint64_t tid);

/* A runtime code record (report/runtimes.c hands it to its runtime's report half): the names
 * are copied (made printable), the position table too. A later record of the same address is
 * another code object there, for the samples after it. A record of a runtime this report does
 * not read is left (0). */
struct hvfxt_code_view;
int profile_add_code(struct profile *p, const struct hvfxt_code_view *c, struct hv_err *err);
/* The index of runtime `runtime`'s latest code record of (pid, code) so far, -1 if none (the
 * loader binds each sample's frames to it). */
int64_t profile_code_latest(const struct profile *p, unsigned runtime, uint64_t pid, uint64_t code);

/* The address a location stands for: its own, or for a runtime's frame its code object's (the
 * location's address is then the index of the code record). */
uint64_t profile_loc_address(const struct profile *p, const struct prof_loc *l);

/* Lookups. */
const char *profile_process_name(const struct profile *p, uint64_t pid); /* never NULL */
const char *profile_thread_name(const struct profile *p, uint64_t pid, uint64_t tid);
/* The pid / tid to show: the guest's own when recorded, else the recording's koid. */
uint64_t profile_shown_pid(const struct profile *p, uint64_t pid);
uint64_t profile_shown_tid(const struct profile *p, uint64_t pid, uint64_t tid);
/* One row per guest process as perf keys them, by pid and name: the recording gives each
 * address space a process of its own (a process past exit_mm() has none; docs/fxt-samples.md),
 * so a guest process can span several. profile_link_processes() gives each group of recorded
 * processes with the same guest pid and name one row (its lowest pid); profile_process_row()
 * returns a process's row. Samples before an execve keep the old program's name, so they stay
 * in its row. */
int profile_link_processes(struct profile *p, struct hv_err *err);
uint64_t profile_process_row(const struct profile *p, uint64_t pid);
const char *profile_module_basename(const struct profile *p, uint32_t module);

/* Symbol loading: for each module without symbols, look for a file (symbol_path_find), load it
 * and keep it if its build-id matches (or the module has none). Never fails for missing files;
 * `loaded` receives how many modules got symbols. */
int profile_load_symbols(struct profile *p, struct symbol_path *sp, size_t *loaded,
                         struct hv_err *err);

/* Kernel symbols from a file given on the command line: a vmlinux ELF, or kallsyms/System.map
 * text (detected by content). Attaches them to the recorded kernel module, or creates a
 * "[kernel]" module mapped over the upper canonical half. The KASLR slide comes from
 * profile.kernel_lstar against entry_SYSCALL_64 when both are known, else 0. */
int profile_set_kernel_symbols(struct profile *p, const char *path, struct hv_err *err);

/* Resolve every frame to a location/function. Idempotent; call after the symbols are loaded.
 * `progress` (may be NULL) is called every few thousand samples with (done, total). */
int profile_symbolize(struct profile *p, void (*progress)(void *ctx, size_t done, size_t total),
                      void *ctx, struct hv_err *err);

/* Which samples a report keeps (report/profile_filter.c): perf's filters. Each list keeps the
 * samples matching any of its entries (--pid 78,127 or --pid 78 --pid 127); the kinds add up (a
 * sample must pass every list given). pid / tid: the guest's own (as shown), or a koid; in a
 * recording without guest ids a number below the koid base n means koid base + n. comm: the
 * thread's or its process's name, exactly, as a glob (fnmatch: "work*"), or, as perf matches
 * the kernel's 15-character comm, a longer name it is the start of. */
#define PROF_FILTER_MAX 64 /* entries of one list */
struct prof_filter {
    size_t nvcpus, npids, ntids, ncomms, ncgroups, ncontainers;
    uint32_t vcpus[PROF_FILTER_MAX];
    uint64_t pids[PROF_FILTER_MAX], tids[PROF_FILTER_MAX];
    const char *comms[PROF_FILTER_MAX];
    /* --cgroup: a cgroup path or a glob of one (fnmatch, '*' spans '/'); --container: a
     * container id's prefix (as `docker ps` shows it, or whole) or a container's name
     * (docs/containers.md). */
    const char *cgroups[PROF_FILTER_MAX], *containers[PROF_FILTER_MAX];
    bool user_only, kernel_only;
    /* A time window, in seconds [from, to): relative to the recording's start (its
     * session_start marker, else its first sample) unless `absolute` (the timestamps perf-script
     * and the timeline print); a negative bound is open. */
    bool has_time, time_absolute;
    double time_from, time_to;
};
/* Whether the filter keeps less than everything (any list or bound given). */
bool profile_filter_active(const struct prof_filter *f);
/* Keep only samples matching the filter (in place). Frames are left in the frame array. */
void profile_filter(struct profile *p, const struct prof_filter *f);
/* Why `f` keeps nothing of `p` (call before profile_filter): the first filter that alone keeps
 * no sample and what the recording holds instead ("--comm workload: no thread or process is
 * named so; names like it: workload.elf"), or that each keeps some but not together, with the
 * recording's time span. Writes a line into buf. */
void profile_filter_explain(struct profile *p, const struct prof_filter *f, char *buf, size_t len);

uint64_t profile_total_weight(const struct profile *p);
/* The first and the last sample's time in ticks (a merged entry's last is its ts_last); false
 * without samples. */
bool profile_time_span(const struct profile *p, uint64_t *first, uint64_t *last);

/* Processes without a recorded name, or with the recorder's synthetic "as<n> cr3=0x..." one, are
 * named after their main module (the lowest user mapping of that address space) once it has a
 * real name; called by profile_symbolize(). */
void profile_name_processes_from_modules(struct profile *p);
