/* Run `hvprof record` (the real binary, on the real test guest) from an integration test, and
 * load the recording it wrote into a simple in-memory model that tests can assert on. The
 * model is decoded with fxt/'s strict reader and symbolized with symbolize/'s ELF tables, from
 * the modules the recorder discovered in guest memory (matched by build-id against the
 * program ELFs the build keeps in build/tests/guest/progs/). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECORD_RSS_MAX      4096
#define RECORD_RSS_EVERY_MS 100

struct record_result {
    int status;         /* exit status of hvprof record, -1 if it died of a signal */
    int term_signal;    /* the signal, if it died of one */
    char out_path[256]; /* the FXT file */
    char console_path[256];
    char *summary; /* hvprof's stderr (malloc'd, NUL-terminated) */
    char *console; /* the guest console (malloc'd, NUL-terminated) */
    /* hvprof's resident memory (KiB) every RECORD_RSS_EVERY_MS while it ran, without the guest's
     * RAM (its mappings of 256 MiB and more, which the guest fills as it likes). */
    uint64_t rss_kib[RECORD_RSS_MAX];
    unsigned nrss;
};

/* Run `hvprof record -o <tmp>.fxt --console <tmp>.log --guest demo <args...>` (NULL-
 * terminated args). If signal_after_ms > 0, send `sig` to hvprof that many ms after it started
 * (and, if sig2 != 0, `sig2` 200 ms later). Returns 0 when it ran and exited. */
int record_run(struct record_result *r, int signal_after_ms, int sig, int sig2, ...);
void record_result_free(struct record_result *r);

/* One sample as the report sees it: the partial record's fields, plus the user stack of the
 * completion that closed it (if any). Frames are symbolized names ("" when unknown). */
#define RM_MAX_FRAMES 300
struct rm_sample {
    uint64_t ts, pid, tid, vcpu, cpl, pc, walk;
    uint64_t continuation; /* 0 if none */
    bool completed;        /* kernel sample whose continuation was completed with a stack */
    bool abandoned;        /* ... or abandoned */
    uint64_t completion_tid, completion_pid;
    unsigned nuser, nkernel;
    uint64_t user[RM_MAX_FRAMES], kernel[RM_MAX_FRAMES];
    const char *user_sym[RM_MAX_FRAMES]; /* leaf first */
    const char *prog; /* program name from the pid's main module ("workload", ...) or "" */
};

struct rm_trace {
    struct rm_sample *s;
    size_t n;
    uint64_t loss_records, dropped; /* from records_dropped events */
    uint64_t completions, abandoned_completions, orphan_completions;
    uint64_t duplicate_completions;
    void *priv; /* symbol tables the names point into; freed by rm_free */
};

/* Decode and symbolize; asserts (cmocka) that the file reads cleanly. */
void rm_load(struct rm_trace *t, const char *fxt_path);
void rm_free(struct rm_trace *t);

/* "a;b;c" of the user stack, outermost first (the folded-stack convention), into buf. */
const char *rm_user_chain(const struct rm_sample *s, char *buf, size_t len);
/* True if the user stack, outermost first, begins with the ';'-separated `prefix`. */
bool rm_user_chain_starts(const struct rm_sample *s, const char *prefix);
