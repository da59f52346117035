/* Encoders of hvprof's own records (docs/fxt-samples.md), on top of the generic FXT codec
 * (fxt/encode.h): the RFC-0274 sample record and its VM extensions, module and mapping records,
 * the loss event, session markers. Same contract as the generic encoders: one complete record
 * into the caller's buffer, its size in words or 0; no allocation, no locks, no system calls (the
 * vCPU thread encodes samples straight into its ring slot). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fxt/encode.h"
#include "fxt/ring.h"
#include "schema/schema.h"

/* The sample record (docs/fxt-samples.md). `fields` says which optional fields are present
 * (HVFXT_SF_*); the stacks are read only when their bit is set. Frames that would push the record
 * past 4095 words are cut (kernel stack first kept, user stack cut first) and the walk word gets
 * the TRUNC bit; hvfxt_sample_words() tells the size in advance. */
struct hvfxt_sample {
    uint32_t fields;
    uint64_t continuation, completion;
    uint64_t pid, tid, ts;
    const uint64_t *user_stack;
    uint32_t n_user;
    uint32_t vcpu;
    uint8_t cpl;
    uint64_t pc;
    const uint64_t *kernel_stack;
    uint32_t n_kernel;
    uint64_t walk; /* hvfxt_walk_word() */
    /* An exit event (`record --events exits`, docs/exits.md): the exit's site
     * (vmm/exit_sites.h) and the host time from the exit to the end of its handling. */
    uint64_t exit_site, exit_ns;
    /* An off-CPU record (`record --off-cpu`, docs/off-cpu.md): a guest thread that was not
     * running, the nanoseconds it spent off its CPU that this record accounts for, and its
     * state (enum hvfxt_task_state). */
    uint64_t off_cpu_ns, task_state;
    /* Recordings before runtime_stack: the Python frames (n_py words, two per frame). Only
     * tests that write such a recording set it; the recorder writes runtime_stack. */
    const uint64_t *py_stack;
    uint32_t n_py;
    /* The frames of the language runtime the sampled thread runs (docs/fxt-samples.md,
     * "Runtime frames"): n_rt words, the runtime's id (HVFXT_RUNTIME_*) then two per frame,
     * innermost first: a code word (HVFXT_RT_*) and the frame's position in that code. */
    const uint64_t *rt_stack;
    uint32_t n_rt;
    /* The control group the sampled thread is in: the koid of its group record
     * (hvfxt_koid_group; docs/containers.md). */
    uint64_t cgroup;
};
/* Most frames a sample can hold in total (both stacks together). */
#define HVFXT_SAMPLE_MAX_FRAMES (FXT_MAX_RECORD_WORDS - 1 - 1 - HVFXT_SF_COUNT)
/* Runtime frames a sample holds at most (two words each); the encoder keeps the innermost. */
#define HVFXT_SAMPLE_MAX_RT_FRAMES 256
#define HVFXT_SAMPLE_MAX_PY_FRAMES HVFXT_SAMPLE_MAX_RT_FRAMES
/* A runtime frame's code word: bit 63, where the runtime's frames of one native frame end (for
 * Python: the frame entered the evaluation loop from C); bit 62, on the outermost frame, more
 * frames were left out beyond it (the recorder's bound). The code object's address is in bits
 * 0..61 (a user address). python_stack's words are the same. */
#define HVFXT_RT_ENTRY     (1ull << 63)
#define HVFXT_RT_CUT       (1ull << 62)
#define HVFXT_RT_CODE_MASK (HVFXT_RT_CUT - 1)
#define HVFXT_PY_ENTRY     HVFXT_RT_ENTRY
#define HVFXT_PY_CUT       HVFXT_RT_CUT
#define HVFXT_PY_CODE_MASK HVFXT_RT_CODE_MASK

struct hvfxt_module {
    uint64_t id;
    const char *name;
    uint16_t name_len;
    const uint8_t *build_id;
    uint16_t build_id_len; /* bytes, <= 255 */
};
/* A code object of a language runtime that samples' runtime_stack names (docs/fxt-samples.md,
 * "Runtime code record"): of runtime `runtime` (HVFXT_RUNTIME_*) in guest process `pid`
 * (koid) at `code`, its name, file and first line, and what gives a frame's line: the base a
 * frame's position is taken from and the runtime's own position table (empty: lines unknown).
 * For Python: the qualified name, co_filename, co_firstlineno, the bytecode's address (a
 * frame's instruction pointer less it, halved, is the code unit) and CPython 3.11+'s
 * co_linetable. A recording before runtime records has Python's own (blob 0x84, the same
 * without `runtime`). */
struct hvfxt_code {
    uint8_t runtime;
    uint64_t pid, code, base;
    int32_t firstlineno;
    const char *name, *filename;
    uint16_t name_len, filename_len;
    const uint8_t *table;
    uint32_t table_len;
};
/* Bytes of position table a record carries at most (a larger table is left out: no lines). */
#define HVFXT_CODE_TABLE_MAX       16384
#define HVFXT_PYCODE_LINETABLE_MAX HVFXT_CODE_TABLE_MAX
struct hvfxt_mapping {
    uint64_t pid, module_id, start, size, vaddr, flags, ts;
    /* The file offset of `start` when the recorder knows it (a user image's p_offset); else
     * the reader derives it from the vaddrs. Written as an eighth word only when known. */
    bool has_file_offset;
    uint64_t file_offset;
};
/* One symbol of a module, at a module-relative address (the address space of the mapping
 * record's vaddr). `type` is the nm letter (T, t, W, w: code); type 0 with an empty name marks
 * where the symbol before it ends (the end of a text section). */
struct hvfxt_symbol {
    uint64_t addr;
    char type;
    const char *name;
    uint16_t name_len; /* <= HVFXT_SYMBOL_NAME_MAX */
};
#define HVFXT_SYMBOL_NAME_MAX 1024

size_t hvfxt_sample_words(const struct hvfxt_sample *s);
size_t hvfxt_enc_sample(uint64_t *buf, size_t cap, const struct hvfxt_sample *s);
size_t hvfxt_enc_module(uint64_t *buf, size_t cap, const struct hvfxt_module *m);
/* An encoded sample record's guest process (koid) and runtime frames (runtime_stack's words:
 * the runtime's id, then the frames), as the drain thread names them; false when it has none
 * or is not a sample. */
/* A one-word field of a sample record still in its words (a visit of the ring's records): its
 * value, if the record is a sample with that field (mask: HVFXT_SF_*, a WORD field). */
bool hvfxt_record_word(const uint64_t *words, size_t nwords, uint32_t mask, uint64_t *value);
bool hvfxt_record_runtime(const uint64_t *words, size_t nwords, uint64_t *pid, const uint64_t **rt,
                          uint32_t *n_rt);
size_t hvfxt_enc_mapping(uint64_t *buf, size_t cap, const struct hvfxt_mapping *m);
/* 0 when it cannot be encoded (a position table over HVFXT_CODE_TABLE_MAX). `python_record`:
 * the record of recordings before runtime records (blob 0x84, runtime 1 only), for tests that
 * write one. */
size_t hvfxt_enc_code(uint64_t *buf, size_t cap, const struct hvfxt_code *c, bool python_record);
/* As many of syms[0..n) as fit into one record of at most `cap` words; *taken says how many.
 * 0 (and *taken 0) if not even the first fits, or a symbol is malformed (a name over
 * HVFXT_SYMBOL_NAME_MAX, a NUL or non-printable byte in it, a named symbol without a type). */
size_t hvfxt_enc_symbols(uint64_t *buf, size_t cap, uint64_t module_id,
                         const struct hvfxt_symbol *syms, size_t n, size_t *taken);
/* The loss event of vCPU l->ring_id's ring, on that vCPU's thread; the vCPU rings' encoder
 * (fxt/ring.h). */
#define HVFXT_LOSS_WORDS 18 /* the loss event's fixed size */
size_t hvfxt_enc_loss(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l);
/* The flight recorder's overwrite event of vCPU l->ring_id (l->dropped: records overwritten). */
size_t hvfxt_enc_overwrite(uint64_t *buf, size_t cap, const struct fxt_ring_loss *l);
/* The timestamp of one record a vCPU stream holds, as encoded above: a sample with its
 * timestamp field, or an event (the loss record). False for anything else. */
bool hvfxt_record_ts(const uint64_t *words, size_t nwords, uint64_t *ts);
/* Session markers on the control thread; settings as arguments (at most 15). */
size_t hvfxt_enc_marker(uint64_t *buf, size_t cap, const char *name, uint64_t ts,
                        const struct fxt_arg *args, unsigned nargs);
