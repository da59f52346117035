/* hvprof top: record a guest and show its hottest functions while it runs (perf top's
 * convention): `record` runs as it always does, and a display thread reads what the drain
 * thread has written so far (the recording's whole records: no extra work at the exits), keeps
 * the last --window seconds and redraws the table every --refresh seconds. Keys filter it
 * (docs/report.md, "A live view"). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "sandbox/sandbox.h"
#include "cli/record.h"
#include "cli/report_input.h"
#include "fxt/reader.h"
#include "report/fxt_load.h"
#include "report/report.h"

/* top's own options; the rest are record's, forwarded to it as they are (cmd_top below). Its
 * table is for --help and docs/options.md: the parse is top's own, which passes every other
 * argument on. */
static const struct cli_option top_options[] = {
    {0x400, "refresh", 0, "S", "redraw every S seconds (default 1)"},
    {0x401, "window", 0, "S", "the table covers the last S seconds (default 5; 0: the whole run)"},
    {0x402, "batch", 'b', NULL,
     "plain tables one after another, no screen control (as top -b;\n"
     "the default when standard output is not a terminal)"},
    {0x403, "iterations", 'n', "N", "stop the guest after N tables (as top -n)"},
};

static const struct cli_group live_group = CLI_GROUP("live table", top_options);

static const struct cli_group *const *top_groups(size_t *n)
{
    static const struct cli_group *g[8];
    static size_t ng;
    if (!ng) {
        g[ng++] = &live_group;
        for (size_t i = 0; i < cli_record.ngroups && ng < 8; i++)
            g[ng++] = cli_record.groups[i];
    }
    *n = ng;
    return g;
}

const struct cli_command *cli_top(void)
{
    static struct cli_command c = {
        .name = "top",
        .synopsis = "[--refresh S] [--window S] [-b] [-n N] RECORD-OPTIONS...",
        .about =
            "Record a guest as 'hvprof record' does (every record option works; without -o the\n"
            "recording goes to a temporary file removed at the end, without --console the\n"
            "guest's console too) and show the hottest functions of the last seconds while it\n"
            "runs; record's --symbols are where the table's symbols come from too.\n"
            "keys: q quit (stops the guest, as Ctrl-C), k kernel samples only, u user only,\n"
            "      a all, p per process, f per function, v next vCPU (then all again)",
        .examples = "hvprof top --guest demo --vcpus 2             # live, q to stop\n"
                    "hvprof top --disk debian.qcow2 --window 10 --refresh 2\n"
                    "hvprof top -b -n 5 --guest demo > top.log      # five plain tables, then stop",
    };
    c.groups = top_groups(&c.ngroups);
    return &c;
}

struct top_view {
    const char *path, *console;
    double refresh, window;
    bool batch;          /* plain tables, no escapes (-b, or stdout not a terminal) */
    unsigned iterations; /* tables to show before stopping the guest; 0: until it stops */
    unsigned shown;
    const char *symbols[16];
    size_t nsymbols;
    atomic_bool done;
    /* What the keys chose (the display thread alone). */
    char mode; /* 'a', 'k', 'u' */
    bool per_process;
    int vcpu; /* -1: all */
    bool quitting, drawn;
    unsigned max_vcpu;
};

/* The terminal's size, read at every frame and every tenth of a second between them: a resize
 * (SIGWINCH's news) redraws at once. Batch mode has no screen: 40 rows of up to 200 columns. */
static void term_size(const struct top_view *v, unsigned *rows, unsigned *cols)
{
    struct winsize ws;
    *rows = 40;
    *cols = 200;
    if (!v->batch && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
        *rows = ws.ws_row < 6 ? 6 : ws.ws_row;
        *cols = ws.ws_col < 20 ? 20 : ws.ws_col;
    }
}

/* A line cut to the width (a wrapped line would push the header off the screen). */
static void put_line(const char *s, size_t n, unsigned cols)
{
    printf("%.*s\n", (int)(n < cols ? n : cols), s);
}

/* The last line of the guest's console, for the header. */
static void console_tail(const char *path, char *buf, size_t len)
{
    buf[0] = 0;
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return;
    char tail[512];
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof(tail) - 1 ? end - (off_t)sizeof(tail) + 1 : 0;
    ssize_t n = pread(fd, tail, sizeof(tail) - 1, from);
    close(fd);
    if (n <= 0)
        return;
    tail[n] = 0;
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
        tail[--n] = 0;
    char *line = strrchr(tail, '\n');
    line = line ? line + 1 : tail;
    size_t k = 0;
    for (; line[k] && k + 1 < len; k++)
        buf[k] = (unsigned char)line[k] < 0x20 || (unsigned char)line[k] >= 0x7f ? '?' : line[k];
    buf[k] = 0;
}

/* The recording so far: its whole records, loaded, filtered to the window and the keys' choice,
 * symbolized; its top table into `text`. 0, or -1 when nothing can be shown yet. */
static int snapshot(struct top_view *v, char **text, size_t *tlen, uint64_t *samples,
                    double *seconds)
{
    int fd = open(v->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < 64) {
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    size_t whole = fxtr_whole_records(map, len);
    struct profile p;
    profile_init(&p);
    /* The whole recording as one entry per distinct stack; a window needs each sample's time. */
    p.aggregate = v->window <= 0;
    struct hv_err err = {0};
    int rc = -1;
    if (fxt_load_profile(map, whole, &p, NULL, NULL, NULL, &err) < 0 || !p.samples.n)
        goto done;
    uint64_t last = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        last = p.samples.v[i].ts_last > last ? p.samples.v[i].ts_last : last;
        v->max_vcpu = p.samples.v[i].vcpu > v->max_vcpu ? p.samples.v[i].vcpu : v->max_vcpu;
    }
    double tps = p.ticks_per_sec ? (double)p.ticks_per_sec : 1e9;
    *seconds = (double)(last - (p.start_ts ? p.start_ts : p.samples.v[0].ts)) / tps;
    struct prof_filter f = {.user_only = v->mode == 'u', .kernel_only = v->mode == 'k'};
    if (v->window > 0) {
        f.has_time = f.time_absolute = true;
        f.time_from = fmax(0, (double)last / tps - v->window);
        f.time_to = -1;
    }
    if (v->vcpu >= 0) {
        f.nvcpus = 1;
        f.vcpus[0] = (uint32_t)v->vcpu;
    }
    struct symbol_path sp;
    symbol_path_init(&sp);
    for (size_t i = 0; i < v->nsymbols; i++)
        symbol_path_add_dir(&sp, v->symbols[i], NULL);
    struct stat dst;
    if (p.symbol_dir[0] && stat(p.symbol_dir, &dst) == 0 && S_ISDIR(dst.st_mode))
        symbol_path_add_dir(&sp, p.symbol_dir, NULL);
    size_t loaded = 0;
    profile_load_symbols(&p, &sp, &loaded, NULL);
    symbol_path_free(&sp);
    profile_filter(&p, &f);
    if (profile_symbolize(&p, NULL, NULL, &err) < 0)
        goto done;
    *samples = profile_total_weight(&p);
    FILE *out = open_memstream(text, tlen);
    if (!out)
        goto done;
    unsigned rows, cols;
    term_size(v, &rows, &cols);
    struct report_opts o = {.top_limit = rows};
    rc = report_write_top(&p, &o, out, &err);
    fclose(out);
done:
    profile_free(&p);
    munmap(map, len);
    return rc;
}

static void draw(struct top_view *v)
{
    char *text = NULL;
    size_t tlen = 0;
    uint64_t samples = 0;
    double seconds = 0;
    char cons[160];
    console_tail(v->console, cons, sizeof(cons));
    unsigned rows, cols, used = 0;
    term_size(v, &rows, &cols);
    int rc = snapshot(v, &text, &tlen, &samples, &seconds);
    /* Nothing recorded yet: the screen is left alone, so that an error of record's (a bad
     * option, a kernel that does not load) stays readable. */
    if (rc < 0 && !v->drawn) {
        free(text);
        return;
    }
    v->drawn = true;
    v->shown++;
    /* Home, clear to the end: one write per frame; in batch mode a blank line between
     * tables. */
    if (v->batch)
        printf(v->shown > 1 ? "\n" : "");
    else
        printf("\033[H\033[2J");
    char vcpu[32] = "all vCPUs";
    if (v->vcpu >= 0)
        snprintf(vcpu, sizeof(vcpu), "vCPU %d", v->vcpu);
    char win[32] = "the whole run";
    if (v->window > 0)
        snprintf(win, sizeof(win), "the last %g s", v->window);
    char head[512];
    int n = snprintf(head, sizeof(head), "hvprof top: %.1f s recorded; %s, %s, %s samples: %llu%s",
                     seconds, win, vcpu,
                     v->mode == 'k'   ? "kernel"
                     : v->mode == 'u' ? "user"
                                      : "all",
                     (unsigned long long)samples, "");
    put_line(head, n > 0 ? (size_t)n : 0, cols);
    n = snprintf(head, sizeof(head), "guest console: %s", cons);
    put_line(head, n > 0 ? (size_t)n : 0, cols);
    used = 2;
    if (rc < 0) {
        printf("\n(no samples yet)\n");
    } else {
        /* The function table, or from the per-process table on ('p'). */
        char *line = text;
        if (v->per_process) {
            char *pp = strstr(text, "# Per process");
            line = pp ? pp : text;
        }
        /* The last row is the keys' (below), in an 80x24 terminal too. */
        for (bool first = true; line && *line && used + 2 < rows; first = false) {
            char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            /* The report's notes on how stacks were walked stay out of a live view; its
             * column header stays. */
            bool skip =
                !first && !v->per_process && line[0] == '#' && !memmem(line, len, "Children", 8);
            if (!v->per_process && !strncmp(line, "# Per process", 13))
                break;
            if (!skip) {
                put_line(line, len, cols);
                used++;
            }
            line = nl ? nl + 1 : NULL;
        }
    }
    if (!v->batch) {
        static const char keys[] =
            "keys: q quit  k kernel  u user  a all  p per process  f per function  v vCPU";
        put_line(keys, sizeof(keys) - 1, cols);
    }
    fflush(stdout);
    free(text);
}

static void on_key(struct top_view *v, char c)
{
    switch (c) {
    case 'q':
        /* Stop as Ctrl-C does: record's handler stops the guest, the file is completed. Once:
         * a second SIGINT would end the process at once, the terminal still in raw mode. */
        if (!v->quitting)
            kill(getpid(), SIGINT);
        v->quitting = true;
        break;
    case 'k':
    case 'u':
    case 'a':
        v->mode = c;
        break;
    case 'p':
        v->per_process = true;
        break;
    case 'f':
        v->per_process = false;
        break;
    case 'v':
        v->vcpu = v->vcpu + 1 > (int)v->max_vcpu ? -1 : v->vcpu + 1;
        break;
    default:
        break;
    }
}

static void *display(void *arg)
{
    struct top_view *v = arg;
    pthread_setname_np(pthread_self(), "display");
    sandbox_thread_enter(SANDBOX_UI); /* the terminal and the recording read back */
    bool keys = !v->batch && isatty(STDIN_FILENO);
    while (!atomic_load(&v->done)) {
        draw(v);
        /* -n N: after the Nth table the guest stops, as after q. */
        if (v->iterations && v->shown >= v->iterations && !v->quitting) {
            v->quitting = true;
            kill(getpid(), SIGINT);
        }
        /* Wait for the next frame, a key or a resize ending the wait early. */
        struct pollfd pfd = {.fd = keys ? STDIN_FILENO : -1, .events = POLLIN};
        int ms = (int)(v->refresh * 1000);
        unsigned rows0, cols0, rows1, cols1;
        term_size(v, &rows0, &cols0);
        for (int waited = 0; waited < ms && !atomic_load(&v->done); waited += 100) {
            term_size(v, &rows1, &cols1);
            if (rows1 != rows0 || cols1 != cols0)
                break;
            if (poll(&pfd, 1, 100) > 0 && (pfd.revents & POLLIN)) {
                char c;
                if (read(STDIN_FILENO, &c, 1) == 1) {
                    on_key(v, c);
                    break;
                }
            }
        }
    }
    return NULL;
}

static int parse_seconds(const char *opt, const char *s, double min, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (*end || errno || !(d >= min) || d > 86400) {
        fprintf(stderr, "hvprof top: %s %s: expected seconds, at least %g\n", opt, s, min);
        return -1;
    }
    *out = d;
    return 0;
}

struct top_start {
    struct top_view *v;
    pthread_t th;
    bool started;
};

static void start_display(void *ctx)
{
    struct top_start *t = ctx;
    t->started = pthread_create(&t->th, NULL, display, t->v) == 0;
}

int cmd_top(int argc, char **argv)
{
    struct top_view v = {.refresh = 1, .window = 5, .mode = 'a', .vcpu = -1};
    /* Our options out, the rest for record; -o and --console noted. */
    char **rargv = calloc((size_t)argc + 8, sizeof(*rargv));
    if (!rargv)
        return 1;
    int rargc = 0;
    rargv[rargc++] = "record";
    bool own_out = false, own_console = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_usage(stdout, cli_top());
            free(rargv);
            return 0;
        }
        if (!strcmp(a, "-b") || !strcmp(a, "--batch")) {
            v.batch = true;
            continue;
        }
        if ((!strcmp(a, "-n") || !strcmp(a, "--iterations")) && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long n = strtoul(argv[i + 1], &end, 10);
            if (*end || errno || n == 0 || n > 1000000 || argv[i + 1][0] == '-') {
                fprintf(stderr, "hvprof top: %s %s: expected a number of tables, 1 or more\n", a,
                        argv[i + 1]);
                free(rargv);
                return 2;
            }
            v.iterations = (unsigned)n;
            i++;
            continue;
        }
        if ((!strcmp(a, "--refresh") || !strcmp(a, "--window")) && i + 1 < argc) {
            double *dst = a[2] == 'r' ? &v.refresh : &v.window;
            if (parse_seconds(a, argv[i + 1], a[2] == 'r' ? 0.1 : 0, dst) < 0) {
                free(rargv);
                return 2;
            }
            i++;
            continue;
        }
        /* The live table reads the file, and a flight recorder keeps its samples in memory. */
        if (!strcmp(a, "--ring") || !strncmp(a, "--ring=", 7) || !strcmp(a, "--ring-keep") ||
            !strncmp(a, "--ring-keep=", 12)) {
            fprintf(stderr,
                    "hvprof top: %s: a flight recorder keeps its samples in memory, where "
                    "the live table cannot see them; use 'hvprof record --ring'\n",
                    a);
            free(rargv);
            return 2;
        }
        if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc)
            v.path = argv[i + 1];
        else if (!strncmp(a, "--output=", 9))
            v.path = a + 9;
        else if (!strncmp(a, "-o", 2) && a[2])
            v.path = a + 2;
        if (!strcmp(a, "--console") && i + 1 < argc)
            v.console = argv[i + 1];
        else if (!strncmp(a, "--console=", 10))
            v.console = a + 10;
        if (!strcmp(a, "--symbols") && i + 1 < argc && v.nsymbols < 16)
            v.symbols[v.nsymbols++] = argv[i + 1];
        rargv[rargc++] = argv[i];
    }
    const char *tmpdir = getenv("TMPDIR");
    char out_path[4096], con_path[4096];
    if (!v.path) {
        snprintf(out_path, sizeof(out_path), "%s/hvprof-top-XXXXXX", tmpdir ? tmpdir : "/tmp");
        int fd = mkstemp(out_path);
        if (fd < 0) {
            fprintf(stderr, "hvprof top: %s: %s\n", out_path, strerror(errno));
            free(rargv);
            return 1;
        }
        close(fd);
        v.path = out_path;
        own_out = true;
        rargv[rargc++] = "-o";
        rargv[rargc++] = out_path;
    }
    if (!v.console) {
        snprintf(con_path, sizeof(con_path), "%s/hvprof-top-console-XXXXXX",
                 tmpdir ? tmpdir : "/tmp");
        int fd = mkstemp(con_path);
        if (fd >= 0)
            close(fd);
        v.console = con_path;
        own_console = fd >= 0;
        rargv[rargc++] = "--console";
        rargv[rargc++] = con_path;
    }
    rargv[rargc++] = "--quiet";
    rargv[rargc] = NULL;
    /* Not a terminal (a pipe, a file): plain tables, as top -b. */
    if (!isatty(STDOUT_FILENO))
        v.batch = true;
    /* Keys one at a time, not echoed; restored before anything else is printed. */
    struct termios saved;
    bool raw = !v.batch && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (raw) {
        struct termios t = saved;
        t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &t);
    }
    /* The screen's thread starts once record has confined itself (no thread may exist
     * before: sandbox/sandbox.h). */
    struct top_start ts = {.v = &v};
    struct record_hooks hooks = {.confined = start_display, .ctx = &ts};
    int status = record_main(rargc, rargv, &hooks);
    atomic_store(&v.done, true);
    bool started = ts.started;
    if (started)
        pthread_join(ts.th, NULL);
    if (raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    if (started && status == 0 && !v.batch)
        draw(&v); /* the last frame stays on the screen */
    if (own_out)
        unlink(out_path);
    else
        fprintf(stderr, "hvprof top: the recording is in %s\n", v.path);
    if (own_console)
        unlink(con_path);
    free(rargv);
    return status;
}
