/* See test_hostile_util.h. */
#include "tests/integration/test_hostile_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "schema/schema.h"
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/guest_run.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

const char *hv_exe(void)
{
    return guest_build_path("cli/hvprof");
}

char *hv_read_file(const char *path, size_t *len)
{
    return guest_read_file(path, len);
}

bool hv_file_contains(const char *path, const char *text)
{
    char *s = hv_read_file(path, NULL);
    bool yes = s && strstr(s, text);
    free(s);
    return yes;
}

static char tmp_dir[256];

const char *hv_tmp_dir(const char *tag)
{
    hv_tmp_cleanup(); /* a failed assertion may have skipped the previous test's cleanup */
    {
        snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/hvprof-%s.XXXXXX", tag);
        if (!mkdtemp(tmp_dir)) {
            tmp_dir[0] = '\0';
            return NULL;
        }
    }
    return tmp_dir;
}

void hv_tmp_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", tmp_dir, name);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

void hv_tmp_cleanup(void)
{
    if (tmp_dir[0] && !getenv("HVPROF_KEEP_TMP"))
        nftw(tmp_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    tmp_dir[0] = '\0';
}

static void redirect(int fd, const char *path)
{
    int f = open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f >= 0) {
        dup2(f, fd);
        close(f);
    }
}

/* Is `sig` pending for the whole process (ShdPnd in /proc/<pid>/status, proc(5))? */
static bool signal_pending(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool pending = false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long mask;
        if (sscanf(line, "ShdPnd: %llx", &mask) == 1) {
            pending = (mask >> (sig - 1)) & 1;
            break;
        }
    }
    fclose(f);
    return pending;
}

int hv_cmd_run(const struct hv_cmd *c, struct hv_cmd_result *r)
{
    memset(r, 0, sizeof(*r));
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        redirect(STDOUT_FILENO, c->stdout_path);
        redirect(STDERR_FILENO, c->stderr_path);
        if (c->fsize_limit) {
            struct rlimit rl = {c->fsize_limit, c->fsize_limit};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        execv(c->argv[0], (char *const *)c->argv);
        _exit(127);
    }
    unsigned timeout = c->timeout_s ? c->timeout_s : 240;
    unsigned sent = 0;
    double ready_at = -1, next_sig = -1;
    int ws = 0;
    struct rusage ru = {0};
    for (;;) {
        pid_t w = wait4(pid, &ws, WNOHANG, &ru);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        double t = now_s();
        if (t - t0 > timeout) {
            kill(pid, SIGKILL);
            wait4(pid, &ws, 0, &ru);
            break;
        }
        if (sent < c->nsigs) {
            if (ready_at < 0 && (!c->wait_file || hv_file_contains(c->wait_file, c->wait_text))) {
                ready_at = t;
                next_sig = t + c->delay_ms / 1000.0;
            }
            /* Two signals of one kind sent while the first is still pending merge into one
             * (POSIX): under load the target may not run for milliseconds, so the next signal
             * waits until the previous one has been taken. */
            if (ready_at >= 0 && t >= next_sig &&
                !(sent > 0 && signal_pending(pid, c->sigs[sent - 1]))) {
                r->sig_at[sent] = now_s();
                kill(pid, c->sigs[sent++]);
                next_sig = t + c->gap_ms / 1000.0;
            }
        }
        sleep_ms(sent < c->nsigs ? 2 : 10);
    }
    r->elapsed_s = now_s() - t0;
    r->maxrss_kib = (uint64_t)ru.ru_maxrss;
    r->signals_sent = sent == c->nsigs;
    if (WIFEXITED(ws)) {
        r->status = WEXITSTATUS(ws);
    } else {
        r->signalled = true;
        r->status = 128 + WTERMSIG(ws);
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct u64_list {
    uint64_t *v;
    size_t n, cap;
};

static void push(struct u64_list *l, uint64_t x)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = x;
}

static bool field_u64(const char *line, const char *key, uint64_t *out)
{
    const char *p = strstr(line, key);
    if (!p)
        return false;
    *out = strtoull(p + strlen(key), NULL, 0);
    return true;
}

/* The stop reason named at *p (hvprof dump prints schema/names.c's names), its number, and the
 * end of the name in *end; -1 if it is not one. */
static int parse_stop(const char *p, const char **end)
{
    size_t n = strcspn(p, ", \n");
    *end = p + n;
    for (unsigned i = 0; i < 32; i++) {
        const char *name = hvfxt_stop_name(i);
        if (strcmp(name, "?") != 0 && strlen(name) == n && strncmp(name, p, n) == 0)
            return (int)i;
    }
    return -1;
}

static void parse_sample(struct hv_fxt_check *c, const char *line, struct u64_list *announced,
                         struct u64_list *completed)
{
    uint64_t v;
    bool is_completion = field_u64(line, " completes=", &v);
    if (is_completion) {
        c->completions++;
        push(completed, v);
    }
    if (field_u64(line, " continuation=", &v)) {
        c->partials++;
        push(announced, v);
    }
    if (!is_completion) {
        c->samples++;
        if (field_u64(line, " ts=", &v) && v > c->last_sample_ts)
            c->last_sample_ts = v;
    }
    const char *w = strstr(line, " walk=kstop:");
    if (w) {
        const char *end;
        int ks = parse_stop(w + strlen(" walk=kstop:"), &end);
        int us = strncmp(end, ",ustop:", 7) == 0 ? parse_stop(end + 7, &end) : -1;
        if (ks >= 0 && us >= 0) {
            if (ks || !is_completion)
                c->kstops |= 1u << ks;
            c->ustops |= 1u << us;
            if (is_completion && hvfxt_stop_is_abandoned((unsigned)us))
                c->abandoned++;
        } else {
            c->bad_walk_words++;
        }
    }
    if (field_u64(line, " kstack[", &v) && v > c->max_kernel_frames)
        c->max_kernel_frames = v;
    if (field_u64(line, " ustack[", &v) && v > c->max_user_frames)
        c->max_user_frames = v;
}

int hv_fxt_check(const char *path, struct hv_fxt_check *c)
{
    memset(c, 0, sizeof(*c));
    char out[512], err[512];
    snprintf(out, sizeof(out), "%s.dump", path);
    snprintf(err, sizeof(err), "%s.dump.err", path);
    const char *stats_argv[] = {hv_exe(), "dump", "--stats", path, NULL};
    struct hv_cmd cmd = {.argv = stats_argv, .stdout_path = out, .stderr_path = err};
    struct hv_cmd_result r;
    if (hv_cmd_run(&cmd, &r) < 0)
        return -1;
    c->stats_status = r.status;
    char *e = hv_read_file(err, NULL);
    if (e) {
        snprintf(c->stats_err, sizeof(c->stats_err), "%s", e);
        free(e);
    }
    const char *dump_argv[] = {hv_exe(), "dump", path, NULL};
    cmd.argv = dump_argv;
    if (hv_cmd_run(&cmd, &r) < 0)
        return -1;
    c->dump_status = r.status;
    char *text = hv_read_file(out, NULL);
    if (!text)
        return -1;
    struct u64_list announced = {0}, completed = {0};
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        c->records++;
        if (strstr(line, " sample"))
            parse_sample(c, line, &announced, &completed);
        if (strstr(line, "\"session_start\""))
            c->session_start = true;
        if (strstr(line, "\"session_stop\""))
            c->session_stop = true;
        if (strstr(line, "\"records_dropped\""))
            c->dropped_events++;
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    /* Announced ids (deduplicated: several partial records share one) against completions. */
    if (announced.n > 1) /* a recording without samples has no array to sort */
        qsort(announced.v, announced.n, sizeof(uint64_t), cmp_u64);
    if (completed.n > 1)
        qsort(completed.v, completed.n, sizeof(uint64_t), cmp_u64);
    size_t na = 0;
    for (size_t i = 0; i < announced.n; i++)
        if (na == 0 || announced.v[na - 1] != announced.v[i])
            announced.v[na++] = announced.v[i];
    size_t i = 0, j = 0;
    while (i < na || j < completed.n) {
        if (j < completed.n && j > 0 && completed.v[j] == completed.v[j - 1]) {
            c->double_completions++;
            j++;
        } else if (i < na && (j == completed.n || announced.v[i] < completed.v[j])) {
            c->open_ids++;
            i++;
        } else if (i == na || completed.v[j] < announced.v[i]) {
            c->orphan_completions++;
            j++;
        } else {
            i++;
            j++;
        }
    }
    c->continuations_ok = !c->open_ids && !c->double_completions && !c->orphan_completions;
    free(announced.v);
    free(completed.v);
    return 0;
}

int hv_parse_summary(const char *text, struct hv_summary *s)
{
    memset(s, 0, sizeof(*s));
    s->max_us = -1;
    const char *p = text ? strstr(text, "\n  total ") : NULL;
    if (!p)
        return -1;
    if (sscanf(p,
               "\n  total %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
               " %" SCNu64 " %lf",
               &s->user, &s->kernel, &s->idle, &s->missed, &s->completed, &s->abandoned,
               &s->dropped, &s->mean_us) != 8)
        return -1;
    s->found = true;
    /* A maximum, if the summary prints one: "... max <X> us ..." anywhere after the table. */
    for (const char *m = p; (m = strstr(m, "max ")); m += 4) {
        double v;
        char unit[4];
        if (sscanf(m + 4, "%lf %3s", &v, unit) == 2 && !strncmp(unit, "us", 2)) {
            s->max_us = v;
            break;
        }
    }
    return 0;
}

int hv_sh(const char *shell, const char *dir, const char *script, char **out)
{
    char full[8192], log[600];
    snprintf(log, sizeof(log), "%s/sh.log", dir);
    snprintf(full, sizeof(full), "cd '%s' || exit 99; HV='%s'; export HV; %s", dir, hv_exe(),
             script);
    const char *argv[] = {shell, "-c", full, NULL};
    struct hv_cmd cmd = {.argv = argv, .stdout_path = log, .stderr_path = log, .timeout_s = 200};
    struct hv_cmd_result r;
    if (hv_cmd_run(&cmd, &r) != 0)
        return -1;
    char *text = hv_read_file(log, NULL);
    fprintf(stderr, "$ %s\n-> %d\n%s", script, r.status, text ? text : "");
    if (out)
        *out = text;
    else
        free(text);
    return r.status;
}
