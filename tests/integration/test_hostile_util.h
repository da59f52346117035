/* Helpers shared by the reliability tests (test_hostile*, test_stop*, test_errors*): run the real
 * `hvprof` binary with redirections, limits and signals, and check a recording through the
 * real `hvprof dump` (docs/reliability.md says what "complete" and "readable prefix" mean). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hv_cmd {
    const char *const *argv; /* argv[0] = the program (absolute path) */
    const char *stdout_path; /* NULL: /dev/null */
    const char *stderr_path; /* NULL: /dev/null */
    uint64_t fsize_limit;    /* RLIMIT_FSIZE in bytes for the child; 0 = unchanged */
    /* Signals: once `wait_file` contains `wait_text` (e.g. the guest console saying it reached
     * user mode), sleep `delay_ms`, send sigs[0], then sigs[1] `gap_ms` later, ... */
    const char *wait_file, *wait_text;
    unsigned delay_ms, gap_ms;
    int sigs[4];
    unsigned nsigs;
    unsigned timeout_s; /* SIGKILL after this long (0 = 240 s) */
};

struct hv_cmd_result {
    int status; /* exit status, or 128 + signal if killed */
    bool signalled;
    double elapsed_s;
    uint64_t maxrss_kib; /* the child's peak resident set (wait4's ru_maxrss) */
    bool signals_sent;   /* every requested signal was delivered */
    double sig_at[4];    /* CLOCK_MONOTONIC seconds at which each signal was sent */
};

int hv_cmd_run(const struct hv_cmd *c, struct hv_cmd_result *r);

/* Whole file, NUL-terminated (malloc'd), or NULL. */
char *hv_read_file(const char *path, size_t *len);
bool hv_file_contains(const char *path, const char *text);

/* A fresh per-test scratch directory under /tmp (the previous one is removed first; also removed
 * by hv_tmp_cleanup; HVPROF_KEEP_TMP=1 keeps them). */
const char *hv_tmp_dir(const char *tag);
void hv_tmp_path(char *out, size_t len, const char *name);
void hv_tmp_cleanup(void);

/* Run `script` with `shell` (/bin/sh, /bin/bash) in directory `dir`, HV set to the hvprof
 * binary; stdout+stderr into `out` (malloc'd; NULL: dropped), echoed to stderr. Returns the
 * exit status (128 + N if killed by signal N). */
int hv_sh(const char *shell, const char *dir, const char *script, char **out);

/* Path of the hvprof binary and the demo guest. */
const char *hv_exe(void);

/* What `hvprof dump` says about a recording. */
struct hv_fxt_check {
    int stats_status;    /* `hvprof dump --stats` exit status */
    int dump_status;     /* `hvprof dump` exit status */
    char stats_err[512]; /* dump --stats stderr (the reader's complaint, if any) */
    uint64_t samples, partials, completions, abandoned, dropped_events, records;
    bool session_start, session_stop;
    /* Every continuation id announced by a partial record is completed (stack or abandoned)
     * exactly once, and every completion completes an announced id. */
    bool continuations_ok;
    uint64_t open_ids, double_completions, orphan_completions;
    uint32_t kstops, ustops; /* bit r set: some sample's kernel/user walk stopped with reason r */
    uint64_t max_user_frames, max_kernel_frames;
    uint64_t bad_walk_words; /* walk= fields whose stop names are not hvprof's */
    uint64_t last_sample_ts; /* the latest sample's timestamp (CLOCK_MONOTONIC ns), 0 if none */
};

/* Run dump --stats and dump on `path`; fill *c. Returns 0 when both ran. */
int hv_fxt_check(const char *path, struct hv_fxt_check *c);

/* From `hvprof record`'s summary on stderr: the total row's mean us/sample, its samples
 * (user+kernel+idle), and the maximum us for one sample exit if the summary prints one
 * (a "max us/sample" figure; -1 when absent). */
struct hv_summary {
    bool found;
    double mean_us, max_us;
    uint64_t user, kernel, idle, missed, completed, abandoned, dropped;
};
int hv_parse_summary(const char *stderr_text, struct hv_summary *s);
