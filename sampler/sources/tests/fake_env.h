/* A recorder source's world without the recorder (sampler/source/source.h): the environment a
 * source test hands a source, built from real parts — a recording writer on a memfd (read back
 * with schema/decode.h), the generic OS layer (or a test's scripted ops), an exit core with
 * its identity tables and vCPUs, the metadata budget, the module registry — and the core's
 * queries answered by the fake itself, which counts them. A synthetic guest (guestwalk's test
 * image) stands in for guest memory where a test needs one. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fxt/writer.h"
#include "guestos/guestos.h"
#include "sampler/exit/core.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/parts/module_files.h"
#include "sampler/parts/module_registry.h"
#include "sampler/source/source.h"
#include "schema/decode.h"

struct fake_env {
    struct rec_env env;
    struct sampler_config cfg;
    struct guestos os;
    struct exit_core core;
    struct fxt_writer w;
    int fd; /* the memfd the writer writes */
    struct meta_budget meta;
    struct discover_registry modules;
    struct module_file_stats files;
    struct rec_kernel kernel;
    /* the core's queries, as the fake answers them */
    bool may_work;         /* rec_may_work's answer (true unless a test says otherwise) */
    unsigned looks;        /* rec_address_space calls */
    uint32_t looked_proc;  /* the last one's process */
    size_t looked_n;       /* ... and its module count */
    uint64_t looked_began; /* ... and when it began: rec_looked's answer for that process */
    unsigned snapshots;    /* rec_snapshot calls */
    unsigned retired;      /* rec_retire calls (freed at once) */
    char last_snapshot[32];
    struct sampler_totals totals;
    /* the source under test, once created (fake_env_create) */
    const struct rec_source_ops *ops;
    void *st;
};

/* A fake with `nvcpus` vCPUs, cfg's defaults (1000 Hz, 64 frames) and the generic OS layer;
 * a test changes f->cfg before fake_env_create. Fails the test on error. */
void fake_env_init(struct fake_env *f, unsigned nvcpus);
/* ops->create on the fake (asserts it succeeds unless `expect_fail`), returns its rc. */
int fake_env_create(struct fake_env *f, const struct rec_source_ops *ops, bool expect_fail);
/* ops->poll of `stage` (0 or -1). */
int fake_env_poll(struct fake_env *f, enum rec_stage stage, uint64_t now, bool final);
/* The source's summary into buf (NUL-terminated). */
void fake_env_summary(struct fake_env *f, char *buf, size_t len);
/* Everything the writer holds so far, flushed: a malloc'd copy and its length. */
uint8_t *fake_env_file(struct fake_env *f, size_t *len);
/* Every record in the file so far, decoded, to fn (a malformed one fails the test). */
void fake_env_each(struct fake_env *f, void (*fn)(void *ctx, const struct hvfxt_record *x),
                   void *ctx);
/* Records of `kind` (HVFXT_REC_*) in the file so far; with `marker`, only markers of that name
 * (HVFXT_REC_MARKER). */
unsigned fake_env_count(struct fake_env *f, int kind, const char *marker);
/* The source destroyed, the fake's parts freed. */
void fake_env_fini(struct fake_env *f);
