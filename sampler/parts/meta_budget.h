/* The recording's budget for metadata: every record that says what the guest claims about
 * itself (modules, mappings, symbols, process and thread names, the kernel's description) as
 * opposed to samples. A guest's memory is hostile: without a budget, 1024 forged kernel modules
 * sharing one table of 2^18 long names write ~71 MB each (docs/reliability.md, "Budgets").
 *
 * Metadata is what the writer wrote minus what is not metadata (samples moved from the vCPU
 * rings, loss records, session markers), so one counter at the ring drain keeps it exact.
 * Symbol tables may use the budget up to 7/8; the last eighth is kept for the module, mapping
 * and name records that samples need to be attributed. What does not fit is left out and
 * counted; the summary and the session_stop marker say so. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fxt/writer.h"

#define META_BUDGET_DEFAULT (64ull << 20)
#define META_BUDGET_MIN     (1ull << 20) /* --max-metadata below this is refused */
/* Bytes one symbol may take in a symbol record, with an end marker after it (schema/encode.c:
 * address, type and length words, the name padded to 8 bytes; an end marker is 16). */
#define META_SYMBOL_COST(name_len) (40u + (uint64_t)(name_len))

struct meta_budget {
    uint64_t max;               /* bytes of metadata records the recording may hold */
    const struct fxt_writer *w; /* NULL: no budget (tests, benchmarks) */
    uint64_t not_meta;          /* bytes `w` wrote that are not metadata */
    uint64_t cut_symbol_tables; /* symbol tables cut short or left out */
    uint64_t cut_records;       /* module, mapping and name records left out */
};

/* Bytes of metadata written so far. */
uint64_t meta_budget_used(const struct meta_budget *b);
/* Whether a structural record (module, mapping, name) of about `bytes` still fits. */
bool meta_budget_allows(struct meta_budget *b, uint64_t bytes);
/* Bytes symbol records may still take (UINT64_MAX without a budget). */
uint64_t meta_budget_symbols_left(const struct meta_budget *b);
/* Bytes one module's symbol table may take: what symbols may still take, and at most 1/share
 * of the budget, so that one forged table cannot leave the others without names. */
uint64_t meta_budget_table_left(const struct meta_budget *b, unsigned share);
