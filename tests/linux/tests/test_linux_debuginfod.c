/* Debug information from where Debian publishes it (docs/report.md, "How frames are
 * symbolized"): the boot group's recordings (the workloads under Debian's kernels, glibc as
 * Debian ships it, stripped) reported with Debian's own debuginfod server on 127.0.0.1 serving
 * libc6-dbg as fetched from the archive now (debuginfod_serve.sh). With no server, glibc's
 * internal functions are offsets; with it, `hvprof report` fetches libc's debug file by build-id
 * and at least 99 % of the samples' frames in libc.so.6 are named, start_thread, clone3 and
 * __libc_start_call_main among them, and `report -g -v` says the names came from debuginfod;
 * with the server stopped and the client's cache empty, the same report completes with the
 * offsets of no server and one line saying why. */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

#define MAX_RECS 16

/* What a report says of libc's frames. */
struct libc_frames {
    uint64_t frames, named;
    bool start_thread, clone3, libc_start_call_main;
};

struct ctx {
    char recs[MAX_RECS][PATH_MAX];
    unsigned nrecs;
};

static void collect(const struct tb_result *r, const struct tb_scenario *s, void *arg)
{
    struct ctx *c = arg;
    tb_check_boot(r, s);
    if (r->rec[0] && c->nrecs < MAX_RECS && access(r->rec, R_OK) == 0)
        snprintf(c->recs[c->nrecs++], PATH_MAX, "%s", r->rec);
}

/* Run `cmd` (its stderr into `errfile`), count the libc.so.6 frames of its perf-script output. */
static int count_libc(const char *cmd, struct libc_frames *lf)
{
    FILE *f = popen(cmd, "r");
    if (!f)
        fail_msg("cannot run %s", cmd);
    char line[8192];
    while (fgets(line, sizeof(line), f)) {
        if (line[0] != '\t')
            continue;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
            line[--n] = 0;
        /* "\t    7f3a1c2d4e5f NAME (DSO)" */
        if (n < 10 || strcmp(line + n - 10, "libc.so.6)"))
            continue;
        char *p = line + 1;
        while (*p == ' ')
            p++;
        char *name = strchr(p, ' ');
        if (!name)
            continue;
        name++;
        lf->frames++;
        bool named =
            strncmp(name, "[unknown]", 9) && !strstr(name, ".so.6+0x") && strncmp(name, "0x", 2);
        lf->named += named;
        lf->start_thread |= !strncmp(name, "start_thread+", 13);
        lf->clone3 |= !strncmp(name, "clone3+", 7) || !strncmp(name, "__clone3+", 9);
        lf->libc_start_call_main |= !strncmp(name, "__libc_start_call_main+", 23);
    }
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    return strdup(buf);
}

static unsigned count_lines_with(const char *text, const char *needle)
{
    unsigned n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_debuginfod(void **state)
{
    (void)state;
    const char *bin = getenv("HVPROF_BINARY_DIR"), *src = getenv("HVPROF_SOURCE_DIR");
    if (!bin || !src)
        fail_msg("HVPROF_BINARY_DIR and HVPROF_SOURCE_DIR must be set (ctest sets them)");
    char out[4096];
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    struct ctx c = {0};
    size_t n = tb_run_group("boot", 1, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, collect, &c);
    if (!c.nrecs)
        fail_msg("the boot group left no recording");

    char tmp[] = "/tmp/hvtest-debuginfod-XXXXXX";
    if (!mkdtemp(tmp))
        fail_msg("mkdtemp failed");
    char cmd[16384], errfile[PATH_MAX + 16];
    snprintf(errfile, sizeof(errfile), "%s/stderr", tmp);
    /* The server, over libc6-dbg as the archive has it now. */
    snprintf(cmd, sizeof(cmd), "bash '%s/tests/linux/debuginfod_serve.sh' '%s/srv'", src, tmp);
    FILE *f = popen(cmd, "r");
    char served[512] = "";
    if (!f || !fgets(served, sizeof(served), f))
        served[0] = 0;
    if (f)
        pclose(f);
    int pid = 0;
    char url[256] = "";
    if (sscanf(served, "%d %255s", &pid, url) != 2 || pid <= 0)
        fail_msg("Debian's debuginfod server did not start over libc6-dbg (debuginfod_serve.sh)");

    struct libc_frames none = {0}, with = {0}, down = {0};
    bool tree_ok = false;
    unsigned found_lines = 0, down_lines = 0, down_said = 0;
    for (unsigned i = 0; i < c.nrecs; i++) {
        /* No server: the offsets hvprof has without debug files. */
        snprintf(cmd, sizeof(cmd),
                 "env -u DEBUGINFOD_URLS '%s/cli/hvprof' report '%s' --format perf-script "
                 "2>'%s'",
                 bin, c.recs[i], errfile);
        if (count_libc(cmd, &none) != 0)
            fail_msg("report of %s failed: %s", c.recs[i], slurp(errfile));
        /* The server, through $DEBUGINFOD_URLS, with a cache of the test's own. */
        snprintf(cmd, sizeof(cmd),
                 "DEBUGINFOD_URLS='%s' DEBUGINFOD_CACHE_PATH='%s/cache' '%s/cli/hvprof' report "
                 "'%s' --format perf-script 2>'%s'",
                 url, tmp, bin, c.recs[i], errfile);
        if (count_libc(cmd, &with) != 0)
            fail_msg("report of %s with debuginfod failed: %s", c.recs[i], slurp(errfile));
        char *e = slurp(errfile);
        found_lines += strstr(e, "modules' debug files found") != NULL;
        free(e);
        if (!tree_ok) {
            snprintf(cmd, sizeof(cmd),
                     "DEBUGINFOD_URLS='%s' DEBUGINFOD_CACHE_PATH='%s/cache' '%s/cli/hvprof' "
                     "report '%s' -g -v --limit 100000 -q 2>/dev/null | grep -A1 '\\] "
                     "start_thread (' | grep -q 'names from debuginfod (.symtab)'",
                     url, tmp, bin, c.recs[i]);
            tree_ok = system(cmd) == 0;
        }
    }
    printf("libc.so.6 frames named: %" PRIu64 " of %" PRIu64 " with no server, %" PRIu64
           " of %" PRIu64 " with Debian's debug package through debuginfod (%u recordings)\n",
           none.named, none.frames, with.named, with.frames, c.nrecs);
    /* The server stopped, the client's cache emptied: offsets, one line. */
    /* Not this test's child (the serving script's): killed, and gone once init reaped it;
     * until then it would still answer. */
    kill(pid, SIGKILL);
    for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
        usleep(100 * 1000);
    if (kill(pid, 0) == 0)
        fail_msg("the debuginfod server (pid %d) would not stop", pid);
    for (unsigned i = 0; i < c.nrecs; i++) {
        snprintf(cmd, sizeof(cmd),
                 "rm -rf '%s/cache'; DEBUGINFOD_URLS='%s' DEBUGINFOD_CACHE_PATH='%s/cache' "
                 "'%s/cli/hvprof' report '%s' --format perf-script 2>'%s'",
                 tmp, url, tmp, bin, c.recs[i], errfile);
        if (count_libc(cmd, &down) != 0)
            fail_msg("with the server stopped, the report of %s failed: %s", c.recs[i],
                     slurp(errfile));
        char *e = slurp(errfile);
        down_lines += count_lines_with(e, "modules' debug files found") == 1;
        down_said += strstr(e, "could not be reached") != NULL;
        free(e);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    (void)system(cmd);

    if (!none.frames || none.named * 100 >= none.frames * 99)
        fail_msg("with no server, %" PRIu64 " of %" PRIu64 " libc frames named: nothing for a "
                 "debug file to name (the guests' libc is stripped)",
                 none.named, none.frames);
    if (with.named * 100 < with.frames * 99)
        fail_msg("with debuginfod, %" PRIu64 " of %" PRIu64 " libc frames named (99 %% wanted)",
                 with.named, with.frames);
    if (with.frames != none.frames)
        fail_msg("the libc frames differ: %" PRIu64 " with the server, %" PRIu64 " without",
                 with.frames, none.frames);
    if (!with.start_thread || !with.clone3 || !with.libc_start_call_main)
        fail_msg("with debuginfod: start_thread %d, clone3 %d, __libc_start_call_main %d named",
                 with.start_thread, with.clone3, with.libc_start_call_main);
    if (found_lines != c.nrecs)
        fail_msg("%u of %u reports said what debuginfod found", found_lines, c.nrecs);
    if (!tree_ok)
        fail_msg("report -g -v does not say start_thread's names came from debuginfod");
    if (down.frames != none.frames || down.named != none.named)
        fail_msg("server stopped: %" PRIu64 " of %" PRIu64 " named, not the %" PRIu64 " of %" PRIu64
                 " of no server",
                 down.named, down.frames, none.named, none.frames);
    if (down_lines != c.nrecs || down_said != c.nrecs)
        fail_msg("server stopped: %u of %u reports with one debuginfod line, %u saying the "
                 "server could not be reached",
                 down_lines, c.nrecs, down_said);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_debuginfod)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
