/* The recording schema: hvprof's own numbers inside FXT. Private blob types, the sample record's
 * field bits (RFC-0274 layout plus VM extensions), walk stop reasons, the koid naming convention,
 * and the names of hvprof's events and markers. docs/fxt-samples.md is the normative
 * description; this header is the one place its numbers are spelled, for the recorder
 * (schema/encode.h, schema/recording.h), the decoder (schema/decode.h), report and dump.
 * The generic FXT codec (fxt/) knows none of it. */
#pragma once

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "schema/sample_fields.h"

/* Blob types (FXT blob record [48..55]). The spec assigns 0x01..0x03; hvprof takes 0x80..0x83,
 * far from the assigned range. Perfetto drops every blob type but 3, so these never disturb it. */
enum hvfxt_blob_type {
    HVFXT_BLOB_SAMPLE = 0x80,  /* RFC-0274 sample (partial or completion) */
    HVFXT_BLOB_MODULE = 0x81,  /* an ELF module: id, build id, name */
    HVFXT_BLOB_MAPPING = 0x82, /* a module mapped into a guest address space */
    HVFXT_BLOB_SYMBOLS = 0x83, /* symbols of a module (a guest kernel's, from its memory) */
    HVFXT_BLOB_PYCODE = 0x84,  /* a Python code object (recordings before runtime records) */
    HVFXT_BLOB_CODE = 0x85,    /* a language runtime's code object of a guest process */
};

/* fields_bitflags of a sample: schema/sample_fields.h, the one table of the sample's fields. */

/* The language runtimes whose frames a recording holds (runtime_stack's first word, a runtime
 * code record's runtime): one id each, never reused (docs/fxt-samples.md, "Runtime frames").
 * Which runtimes hvprof reads is runtime/runtimes.h. */
enum hvfxt_runtime {
    HVFXT_RUNTIME_NONE = 0,
    HVFXT_RUNTIME_PYTHON = 1, /* CPython 3.11+ (docs/python.md) */
    HVFXT_RUNTIME_MAX = 16,   /* ids are below this */
};

/* Walk status word: why each stack walk stopped, and whether frames were cut. */
#define HVFXT_WALK_KERNEL_SHIFT        0            /* [0..7] kernel-walk stop reason */
#define HVFXT_WALK_USER_SHIFT          8            /* [8..15] user-walk stop reason */
#define HVFXT_WALK_KERNEL_TRUNC        (1ull << 16) /* kernel frames cut to fit the record */
#define HVFXT_WALK_USER_TRUNC          (1ull << 17) /* user frames cut to fit the record */
#define HVFXT_WALK_KERNEL_CALLER_SHIFT 18 /* [18..21] how the kernel leaf's caller was found */
#define HVFXT_WALK_USER_CALLER_SHIFT   22 /* [22..25] the same for the user leaf */
#define HVFXT_WALK_USER_CFI_SHIFT      26 /* [26..33] user frames from DWARF CFI (saturating) */
#define HVFXT_WALK_KERNEL_EXACT_SHIFT  34 /* [34..63] bit i-1: kernel frame i (1..30) is exact */
/* How a walk found the interrupted function's caller (frame 1): the values of guestwalk's enum
 * gw_leaf, which the sampler stores as they are (docs/fxt-samples.md, walk word). */
enum hvfxt_caller {
    HVFXT_CALLER_CHAIN = 0,       /* the frame chain: the function's own frame was linked */
    HVFXT_CALLER_ENTRY = 1,       /* at push rbp: [rsp] */
    HVFXT_CALLER_ENTRY_ENDBR = 2, /* at endbr64; push rbp: [rsp] */
    HVFXT_CALLER_AFTER_PUSH = 3,  /* after push rbp: [rsp + 8] */
    HVFXT_CALLER_RET = 4,         /* at ret: [rsp] */
    HVFXT_CALLER_AFTER_POP = 5,   /* after pop rbp, at a tail jump: [rsp] */
    HVFXT_CALLER_FRAMELESS = 6,   /* a frameless function: decoded forward to its ret */
    HVFXT_CALLER_ORC = 7,         /* the guest kernel's ORC table (kernel walks) */
    HVFXT_CALLER_CFI = 8,         /* the binary's DWARF call-frame information (user walks) */
    HVFXT_CALLER_COUNT
};
static inline uint64_t hvfxt_walk_callers(unsigned kernel, unsigned user)
{
    return ((uint64_t)(kernel & 0xf) << HVFXT_WALK_KERNEL_CALLER_SHIFT) |
           ((uint64_t)(user & 0xf) << HVFXT_WALK_USER_CALLER_SHIFT);
}
/* Kernel frames 1..30 that are exact interrupted PCs (past an interrupt or exception frame), not
 * return addresses: guestwalk's gw_stack.exact (bit i: frame i). Frames past 30 are not marked
 * and read as return addresses. */
static inline uint64_t hvfxt_walk_kernel_exact(uint32_t exact)
{
    return ((uint64_t)(exact >> 1) & 0x3fffffffu) << HVFXT_WALK_KERNEL_EXACT_SHIFT;
}
static inline bool hvfxt_walk_kernel_frame_exact(uint64_t walk, uint32_t i)
{
    return i >= 1 && i <= 30 && ((walk >> (HVFXT_WALK_KERNEL_EXACT_SHIFT + i - 1)) & 1);
}
/* How many of a user walk's callers came from DWARF call-frame information. */
static inline uint64_t hvfxt_walk_user_cfi(unsigned frames)
{
    return (uint64_t)(frames > 255 ? 255 : frames) << HVFXT_WALK_USER_CFI_SHIFT;
}
static inline unsigned hvfxt_walk_user_cfi_frames(uint64_t walk)
{
    return (unsigned)(walk >> HVFXT_WALK_USER_CFI_SHIFT) & 0xff;
}
static inline unsigned hvfxt_walk_kernel_caller(uint64_t walk)
{
    return (unsigned)(walk >> HVFXT_WALK_KERNEL_CALLER_SHIFT) & 0xf;
}
static inline unsigned hvfxt_walk_user_caller(uint64_t walk)
{
    return (unsigned)(walk >> HVFXT_WALK_USER_CALLER_SHIFT) & 0xf;
}
enum hvfxt_walk_stop {
    HVFXT_STOP_NONE = 0,         /* not walked */
    HVFXT_STOP_END = 1,          /* reached the outermost frame (fp 0 / terminal) */
    HVFXT_STOP_MAX_DEPTH = 2,    /* configured depth reached */
    HVFXT_STOP_UNMAPPED = 3,     /* a frame address did not translate to guest RAM */
    HVFXT_STOP_BAD_FP = 4,       /* frame pointer misaligned or non-canonical */
    HVFXT_STOP_NOT_UPWARD = 5,   /* next fp not above the current one (loop / corrupt) */
    HVFXT_STOP_DEFERRED = 6,     /* user walk deferred: a completion record carries it */
    HVFXT_STOP_RECORD_LIMIT = 7, /* frames cut to keep the record under 4095 words */
    HVFXT_STOP_ERROR = 8,        /* any other failure */
    /* Completion records that carry no stack: the continuation was abandoned (user field). */
    HVFXT_STOP_ABANDONED_TIMEOUT = 9, /* the thread did not return to user mode in time */
    HVFXT_STOP_ABANDONED_END = 10,    /* the session ended while the thread was in the kernel */
    HVFXT_STOP_ABANDONED_FULL = 11,   /* too many open continuations on the vCPU */
    HVFXT_STOP_NO_UNWIND_INFO = 12,   /* no unwind-table entry (ORC, CFI) for a frame's PC */
    HVFXT_STOP_UNWIND_RULE = 13,      /* a CFI rule the walk cannot evaluate (docs/cfi.md) */
};
static inline uint64_t hvfxt_walk_word(unsigned kstop, unsigned ustop, int ktrunc, int utrunc)
{
    return ((uint64_t)(kstop & 0xff) << HVFXT_WALK_KERNEL_SHIFT) |
           ((uint64_t)(ustop & 0xff) << HVFXT_WALK_USER_SHIFT) |
           (ktrunc ? HVFXT_WALK_KERNEL_TRUNC : 0) | (utrunc ? HVFXT_WALK_USER_TRUNC : 0);
}
static inline unsigned hvfxt_walk_kernel_stop(uint64_t walk)
{
    return (unsigned)(walk >> HVFXT_WALK_KERNEL_SHIFT) & 0xff;
}
static inline unsigned hvfxt_walk_user_stop(uint64_t walk)
{
    return (unsigned)(walk >> HVFXT_WALK_USER_SHIFT) & 0xff;
}
static inline bool hvfxt_stop_is_abandoned(unsigned stop)
{
    return stop >= HVFXT_STOP_ABANDONED_TIMEOUT && stop <= HVFXT_STOP_ABANDONED_FULL;
}

/* Mapping flags (mapping blob, flags word). */
enum { HVFXT_MAP_READ = 1, HVFXT_MAP_WRITE = 2, HVFXT_MAP_EXEC = 4 };

/* Koid convention. Perfetto casts koids to uint32_t, so every koid stays below 2^32, and the
 * ranges never overlap:
 *   1                          the VM (a process)
 *   2                          hvprof's control thread (session markers), in process 1
 *   0x1000 + i                 vCPU i (a thread of process 1), i < 0xf000
 *   0x1000000 + n              control group n (a job object; docs/containers.md), n < 0xf000000
 *   0x10000000 + n             guest address space n (a process), n < 0x30000000
 *   0x40000000 + n             guest thread n (a thread; its process arg names its address space)
 * Guest address space 0 is by convention the guest kernel's. */
#define HVFXT_KOID_VM             1u
#define HVFXT_KOID_CONTROL        2u
#define HVFXT_KOID_VCPU_BASE      0x1000u
#define HVFXT_KOID_PROCESS_BASE   0x10000000ull
#define HVFXT_KOID_THREAD_BASE    0x40000000ull
#define HVFXT_KOID_KERNEL_PROCESS HVFXT_KOID_PROCESS_BASE /* guest address space 0 */
/* Samples whose process or thread found no slot in the recorder's identity tables (more live
 * ones than slots): at the top of each guest range, named HVFXT_UNATTRIBUTED_NAME, never
 * the kernel's (docs/fxt-samples.md, section 4); not UINT32_MAX, which readers may take for
 * -1. */
#define HVFXT_KOID_UNATTRIBUTED_PROCESS (HVFXT_KOID_PROCESS_BASE + 0x2fffffffull)
#define HVFXT_KOID_UNATTRIBUTED_THREAD  (HVFXT_KOID_THREAD_BASE + 0xbffffffeull)
#define HVFXT_UNATTRIBUTED_NAME         "[unattributed: table full]"
#define HVFXT_MAX_VCPUS                 0xefffu /* vCPU koids stay below the guest ranges */
static inline uint64_t hvfxt_koid_vcpu(uint32_t i)
{
    return HVFXT_KOID_VCPU_BASE + (i & 0xefffu);
}
#define HVFXT_KOID_GROUP_BASE 0x1000000ull
static inline uint64_t hvfxt_koid_group(uint32_t n)
{
    return HVFXT_KOID_GROUP_BASE + (n % 0xf000000u);
}
static inline int hvfxt_koid_is_group(uint64_t koid)
{
    return koid > HVFXT_KOID_GROUP_BASE && koid < HVFXT_KOID_PROCESS_BASE;
}
static inline uint64_t hvfxt_koid_guest_process(uint32_t n)
{
    return HVFXT_KOID_PROCESS_BASE + (n % 0x30000000u);
}
static inline uint64_t hvfxt_koid_guest_thread(uint32_t n)
{
    return HVFXT_KOID_THREAD_BASE + (n % 0xc0000000u);
}
static inline int hvfxt_koid_is_guest_process(uint64_t koid)
{
    return koid >= HVFXT_KOID_PROCESS_BASE && koid < HVFXT_KOID_THREAD_BASE;
}
static inline int hvfxt_koid_is_guest_thread(uint64_t koid)
{
    return koid >= HVFXT_KOID_THREAD_BASE && koid < HVFXT_KOID_THREAD_BASE + 0xc0000000ull;
}

/* Names of the providers: provider 0 carries what is not per vCPU, provider i + 1 is vCPU i. */
#define HVFXT_CONTROL_PROVIDER      0u
#define HVFXT_CONTROL_PROVIDER_NAME "hvprof"
static inline uint32_t hvfxt_vcpu_provider(uint32_t vcpu)
{
    return vcpu + 1;
}

/* The loss record is an instant event (so Perfetto shows it) on the vCPU's thread, category
 * "hvprof", name "records_dropped", args dropped:uint64, vcpu:uint32, first_ts:uint64,
 * last_ts:uint64; its timestamp is first_ts. Session markers are instant events "session_start"
 * and "session_stop" in category "hvprof" on the control thread, settings as arguments. */
#define HVFXT_CATEGORY          "hvprof"
#define HVFXT_LOSS_NAME         "records_dropped"
#define HVFXT_SESSION_START     "session_start"
#define HVFXT_SESSION_STOP      "session_stop"
#define HVFXT_LOSS_ARG_DROPPED  "dropped"
#define HVFXT_LOSS_ARG_VCPU     "vcpu"
#define HVFXT_LOSS_ARG_FIRST_TS "first_ts"
#define HVFXT_LOSS_ARG_LAST_TS  "last_ts"
/* The flight recorder's overwrites (`record --ring`): an instant event "records_overwritten" of
 * the same shape, args overwritten:uint64 (records of this vCPU's stream the ring let go, older
 * than what the file holds), vcpu, first_ts, last_ts (of the first and the last of them); at the
 * start of the vCPU's kept records (docs/fxt-samples.md, section 3). */
#define HVFXT_OVERWRITE_NAME      "records_overwritten"
#define HVFXT_OVERWRITE_ARG_COUNT "overwritten"
/* session_stop of a flight recording: why this file was written ("stop", "signal", "panic", or
 * the guest's own stop: "reset", "triple-fault", "internal-error"),
 * the ring's size and time window (0: none) and the records it held. */
#define HVFXT_ARG_SNAPSHOT       "snapshot"
#define HVFXT_ARG_RING_BYTES     "ring_bytes"
#define HVFXT_ARG_RING_WINDOW_NS "ring_window_ns"

/* Right after session_start, what the recording says of itself beyond the sampler's settings
 * (FXT allows 15 arguments a record, session_start has most of them): an instant event
 * "session_info" on the control thread with hvprof's version, record's command line and the
 * wall-clock time of the start (uint64 ns since the UNIX epoch; `report --header`). */
#define HVFXT_SESSION_INFO      "session_info"
#define HVFXT_ARG_VERSION       "hvprof_version"
#define HVFXT_ARG_COMMAND       "command_line"
#define HVFXT_ARG_START_UNIX_NS "start_unix_ns"

/* Session marker arguments that `report` reads (docs/fxt-samples.md, section 5). */
#define HVFXT_ARG_HZ         "hz"
#define HVFXT_ARG_PERIOD_NS  "period_ns"
#define HVFXT_ARG_LSTAR      "lstar"
#define HVFXT_ARG_SYMBOL_DIR "symbol_dir"
/* session_stop: the metadata records' bytes and budget, and what the budget left out (symbol
 * tables cut short or not read; module, mapping and name records not written):
 * docs/reliability.md, "Budgets". */
#define HVFXT_ARG_METADATA_BYTES       "metadata_bytes"
#define HVFXT_ARG_METADATA_MAX         "metadata_max"
#define HVFXT_ARG_METADATA_CUT_TABLES  "metadata_cut_symbol_tables"
#define HVFXT_ARG_METADATA_CUT_RECORDS "metadata_cut_records"

/* Guest process and thread kernel objects: the guest's own pid / tid, when the OS layer read
 * them (docs/fxt-samples.md, section 4). Signed 64-bit. */
#define HVFXT_ARG_GUEST_PID "guest_pid"
#define HVFXT_ARG_GUEST_TID "guest_tid"
/* ... and on a guest thread, its ids in its own pid namespace (what the processes of a
 * container see: /proc/PID/status NSpid's last) and that namespace's inode number, when the OS
 * layer read them (docs/containers.md). Signed 64-bit; unsigned 64-bit. */
#define HVFXT_ARG_NS_PID "ns_pid"
#define HVFXT_ARG_NS_TID "ns_tid"
#define HVFXT_ARG_PID_NS "pid_ns"
/* ... its mount namespace's inode number and its UTS namespace's hostname (string). */
#define HVFXT_ARG_MNT_NS   "mnt_ns"
#define HVFXT_ARG_HOSTNAME "hostname"

/* A control group (docs/containers.md): a kernel object record of type job (ZX_OBJ_TYPE_JOB,
 * 17) with koid hvfxt_koid_group(n) and the cgroup's path as its name. The container, if the
 * path names one, is the reader's to derive (common/container_id.h): the path is the fact. */

/* A guest process or thread the recorder saw end (the guest's task list no longer has it, or it
 * aged out of a full table: docs/identities.md): an instant event "identity_ended" on the
 * control thread with the process's koid, and the thread's for a thread. No sample after it
 * carries the koids but those already in flight; the next process or thread in its slot has
 * another koid (docs/fxt-samples.md, section 4). */
#define HVFXT_IDENTITY_ENDED "identity_ended"
#define HVFXT_ARG_PROCESS    "process"
#define HVFXT_ARG_THREAD     "thread"

/* The guest kernel's panic (or crash dump), as its own memory records it: an instant event
 * "guest_panic" on the control thread when hvprof sees it, with the CPU (docs/fxt-samples.md,
 * section 5). */
#define HVFXT_GUEST_PANIC "guest_panic"
#define HVFXT_ARG_CPU     "cpu"

/* Steal time over the recording: an instant event "vcpu_steal" on the control thread, written
 * by the drain thread every 100 ms while a vCPU runs and once at its stop, with the vCPU
 * (uint32) and the time its host thread has waited, runnable, for a host CPU since it started
 * (uint64 ns, cumulative: the difference of two gives the steal between them; docs/fxt-samples.md,
 * section 6). */
#define HVFXT_VCPU_STEAL   "vcpu_steal"
#define HVFXT_ARG_VCPU     "vcpu"
#define HVFXT_ARG_STEAL_NS "steal_ns"

/* The guest kernel as its own memory describes it (guestos/linux/): an instant event on the
 * control thread when it is found, with its release, build-id (hex), KASLR offset, and how many
 * symbols its symbol records hold (docs/fxt-samples.md, section 6). */
#define HVFXT_GUEST_KERNEL       "guest_kernel"
#define HVFXT_ARG_OSRELEASE      "osrelease"
#define HVFXT_ARG_BUILD_ID       "build_id"
#define HVFXT_ARG_KERNEL_OFFSET  "kernel_offset"
#define HVFXT_ARG_KERNEL_SYMBOLS "symbols"

/* A short name per hvfxt_walk_stop ("end", "max-depth", "unmapped", ..., "abandoned-timeout")
 * for dump and report; "?" for a value outside the enum. */
const char *hvfxt_stop_name(unsigned stop);

/* The name of a module found in guest memory without a DT_SONAME: "[elf@0x<header address>]".
 * A report replaces it with its symbol file's name once the build-id finds one. */
#define HVFXT_MODULE_PLACEHOLDER_FMT "[elf@0x%" PRIx64 "]"
bool hvfxt_module_name_is_placeholder(const char *name);

/* Exit events (`record --events exits`, docs/exits.md). A report roots an exit's stacks at one
 * frame per exit site (vmm/exit_sites.h): an address in the top 2 MiB of the address space,
 * which x86-64 Linux leaves unused ("unused hole", Documentation/arch/x86/x86_64/mm.rst), in
 * the module HVFXT_EXIT_MODULE whose symbols name the sites. */
#define HVFXT_EXIT_MODULE     "[vm exits]"
#define HVFXT_EXIT_FRAME_BASE 0xffffffffffe00000ull
/* 4 bytes a site: kind (3 bits), device, register (7) */
#define HVFXT_EXIT_FRAME_SIZE 0x100000ull
static inline uint64_t hvfxt_exit_frame(uint64_t site)
{
    uint64_t kind = (site >> 24) & 7, dev = (site >> 16) & 0xff, reg = site & 0x7f;
    return HVFXT_EXIT_FRAME_BASE + ((kind << 15 | dev << 7 | reg) << 2);
}

/* Off-CPU records (`record --off-cpu`, docs/off-cpu.md): the thread's state as the guest
 * kernel reports it in /proc/PID/stat, in the order of its task_state_array (fs/proc/array.c):
 * running or runnable, sleeping, disk sleep (uninterruptible), stopped, tracing stop, dead,
 * zombie, parked, idle (a kernel thread's uninterruptible sleep that counts for no load). */
enum hvfxt_task_state {
    HVFXT_TASK_RUNNABLE,
    HVFXT_TASK_SLEEPING,
    HVFXT_TASK_DISK_SLEEP,
    HVFXT_TASK_STOPPED,
    HVFXT_TASK_TRACED,
    HVFXT_TASK_DEAD,
    HVFXT_TASK_ZOMBIE,
    HVFXT_TASK_PARKED,
    HVFXT_TASK_IDLE,
    HVFXT_TASK_STATES
};
/* "R", "S", "D", "T", "t", "X", "Z", "P", "I" (ps(1)'s letters); "?" outside the enum. */
const char *hvfxt_task_state_letter(uint64_t state);
/* "running", "sleeping", "disk sleep", ... as fs/proc/array.c names them; "?" outside. */
const char *hvfxt_task_state_name(uint64_t state);
/* A report puts one frame per state at the leaf of an off-CPU stack, in the module
 * HVFXT_OFF_CPU_MODULE whose symbols ("[off-cpu:S]") name them: addresses in the same unused
 * top of the address space, above the exit sites'. */
#define HVFXT_OFF_CPU_MODULE     "[off-cpu]"
#define HVFXT_OFF_CPU_FRAME_BASE (HVFXT_EXIT_FRAME_BASE + HVFXT_EXIT_FRAME_SIZE)
#define HVFXT_OFF_CPU_FRAME_SIZE 0x1000ull
static inline uint64_t hvfxt_off_cpu_frame(uint64_t state)
{
    return HVFXT_OFF_CPU_FRAME_BASE +
           4 * (state < HVFXT_TASK_STATES ? state : (uint64_t)HVFXT_TASK_STATES);
}
