/* Decoding hvprof's records (docs/fxt-samples.md) on top of the generic FXT reader: sample,
 * module and mapping blobs, and the records_dropped loss event. Written from the format
 * description, independently of schema/encode.c, and as strict as fxt/reader.h: a malformed
 * hvprof record is an error naming its offset, never a guess.
 *
 *   struct fxtr_reader r; fxtr_init(&r, buf, len);
 *   struct hvfxt_record *x = malloc(sizeof(*x));
 *   while ((rc = hvfxt_next(&r, x, &err)) == 1)
 *       switch (x->kind) { case HVFXT_REC_SAMPLE: ... x->u.sample ...; default: ... x->fxt ... }
 *
 * Decoded strings and stacks point into the caller's buffer (fxt/reader.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "fxt/reader.h"
#include "schema/encode.h"
#include "schema/schema.h"

/* A sample record: which fields were present (HVFXT_SF_*) and their values (0 if absent). */
struct hvfxt_sample_view {
    uint64_t fields;
    uint64_t continuation, completion, pid, tid, ts, vcpu, cpl, pc, walk, exit_site, exit_ns;
    uint64_t off_cpu_ns, task_state, cgroup;
    struct fxtr_words user_stack, kernel_stack, py_stack, rt_stack;
};
struct hvfxt_module_view {
    uint64_t id;
    struct fxtr_string name;
    const uint8_t *build_id;
    uint32_t build_id_len;
};
/* The mapping record has the encoder's fields exactly (struct hvfxt_mapping). */
/* A symbols record, validated: `count` addresses and as many names (hvfxt_symbols_next). */
struct hvfxt_symbols_view {
    uint64_t module_id;
    uint32_t count;
    const uint8_t *addrs; /* count little-endian words */
    const char *names;    /* names_len bytes: count NUL-terminated "<type><name>" strings */
    uint32_t names_len;
};
/* Walk a validated symbols record: *pos starts at 0; returns false after the last symbol.
 * *type is 0 and *name "" for an end marker. */
bool hvfxt_symbols_next(const struct hvfxt_symbols_view *v, uint32_t *index, uint32_t *pos,
                        uint64_t *addr, char *type, const char **name, size_t *name_len);
/* A runtime code record (struct hvfxt_code), its streams pointing into the record; a Python
 * code record of an older recording (blob 0x84) reads as one of runtime HVFXT_RUNTIME_PYTHON.
 * The names are as recorded: a reader makes them printable. */
struct hvfxt_code_view {
    uint8_t runtime;
    uint64_t pid, code, base;
    int32_t firstlineno;
    struct fxtr_string name, filename;
    const uint8_t *table;
    uint32_t table_len;
};
struct hvfxt_loss_view {
    uint64_t dropped, vcpu, first_ts, last_ts;
};

enum hvfxt_rec_kind {
    HVFXT_REC_OTHER = 0, /* any other FXT record: see x->fxt */
    HVFXT_REC_SAMPLE,
    HVFXT_REC_MODULE,
    HVFXT_REC_MAPPING,
    HVFXT_REC_LOSS,
    HVFXT_REC_SYMBOLS,
    HVFXT_REC_OVERWRITE, /* the flight recorder's records_overwritten: u.loss, dropped = count */
    HVFXT_REC_CODE,      /* a runtime code record (or an older recording's Python code record) */
};

struct hvfxt_record {
    struct fxtr_record fxt; /* the FXT record, always filled */
    enum hvfxt_rec_kind kind;
    union {
        struct hvfxt_sample_view sample;
        struct hvfxt_module_view module;
        struct hvfxt_mapping mapping;
        struct hvfxt_loss_view loss;
        struct hvfxt_symbols_view symbols;
        struct hvfxt_code_view code;
    } u;
};

/* fxtr_next, then hvprof's decoding of the record. Same returns: 1 a record, 0 the end, -1 a
 * malformed record (err "offset 0x...: reason"). */
int hvfxt_next(struct fxtr_reader *r, struct hvfxt_record *x, struct hv_err *err);

/* Decode one FXT record already read: sets x->kind and x->u (x->fxt is not touched, rec may be
 * &x->fxt). 0, or -1 with err for a malformed hvprof record. */
int hvfxt_decode(const struct fxtr_record *rec, struct hvfxt_record *x, struct hv_err *err);

struct hvfxt_stats {
    uint64_t by_type[FXTR_NTYPES];
    uint64_t unknown, records, bytes;
    uint64_t samples, completions, modules, mappings, loss_records, dropped;
    uint64_t symbol_records, symbols;
    uint64_t overwritten; /* records the flight recorder let go (`record --ring`) */
    /* The file ends inside a record (fxtr_reader.cut): where it starts, its bytes there and
     * the bytes it declares (0: cut inside its header). */
    bool cut;
    uint64_t cut_offset, cut_have, cut_need;
};
/* Read a whole recording. Returns 0, or -1 with err (stats hold what was read before). */
int hvfxt_stats(const void *buf, size_t len, struct hvfxt_stats *st, struct hv_err *err);
