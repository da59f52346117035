/* Symbols gathered from the guest's memory for one module's symbol records (drain thread):
 * collected one by one (guestos_symbol_fn), then sorted with end markers where a symbol's known
 * size ends before the next one starts (docs/fxt-samples.md, "Symbols"), and written. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/vector.h"
#include "fxt/writer.h"
#include "guestos/guestos.h"
#include "schema/recording.h"

struct symbol_batch_entry {
    struct hvfxt_symbol sym;
    uint64_t end; /* module-relative end from the symbol's size, 0 if not known */
};

struct symbol_batch {
    VECTOR_FIELDS(struct symbol_batch_entry);
    VECTOR(char) names; /* NUL-separated pool */
    uint64_t base;      /* subtracted from every address (a kernel module's code region) */
    bool oom;           /* an allocation failed: the batch is incomplete */
    /* Bytes the batch's records may take (META_SYMBOL_COST each; 0: no limit), the bytes its
     * symbols would take so far, and whether a symbol did not fit (the table is cut there). */
    uint64_t max_bytes, bytes;
    bool cut;
};

/* guestos_symbol_fn: add one (returns 1 when out of memory or over max_bytes, which stops the
 * reader). */
int symbol_batch_add(void *batch, const struct guestos_symbol *s);

/* Sort, add end markers where a known size ends before the next symbol and at `end` if nonzero
 * (module-relative: the end of a kernel module's code), and write them as module `id`'s symbol
 * records. Nothing is written for an empty batch. */
int symbol_batch_write(struct symbol_batch *b, struct fxt_writer *w, uint64_t id, uint64_t end,
                       struct hv_err *err);

void symbol_batch_free(struct symbol_batch *b);
