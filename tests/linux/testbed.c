#include "tests/linux/testbed.h"

#include <ctype.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "common/files.h"
#include "report/fxt_load.h"
#include "report/profile.h"
#include "symbolize/symbol_path.h"
#include "symbolize/symtab.h"

static char *slurp(const char *path)
{
    uint8_t *buf;
    size_t len;
    struct hv_err err;
    return hv_read_file(path, 1ull << 30, &buf, &len, &err) < 0 ? NULL : (char *)buf;
}

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set (run the test through ctest)", name);
    return v;
}

const char *tb_cache(void)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/linux-testbed", env_or_fail("HVPROF_BINARY_DIR"));
    return path;
}

bool tb_full(void)
{
    const char *v = getenv("HVPROF_TB_FULL");
    return v && !strcmp(v, "1");
}

size_t tb_select(const struct tb_scenario *s, size_t n, struct tb_scenario *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!tb_full() && s[i].ci == TB_FULL_ONLY)
            continue;
        out[k] = s[i];
        if (!tb_full() && s[i].ci == TB_CI_ONE_VCPU)
            out[k].vcpus = 1;
        /* At one vCPU the six workloads' start-up (mostly kernel work) takes most of 1.5 s: one
         * such run had 4 user samples in their loops. CI's one-vCPU runs give them 4 s (the
         * guest's init takes the last hvtest.ms). */
        if (!tb_full() && out[k].vcpus == 1 && out[k].cmdline &&
            strstr(out[k].cmdline, "hvtest.plan=work")) {
            static char longer[32][256];
            static unsigned next;
            char *c = longer[next++ % 32];
            snprintf(c, sizeof(longer[0]), "%s hvtest.ms=4000", out[k].cmdline);
            out[k].cmdline = c;
        }
        k++;
    }
    return k;
}

unsigned tb_repeat(unsigned full)
{
    return tb_full() ? full : 1;
}

static bool in_ci_shared(const char *group)
{
    for (const char *const *g = tb_ci_shared; *g; g++)
        if (!strcmp(*g, group))
            return true;
    return false;
}

static void run_group(const char *group, const struct tb_scenario *s, size_t n, unsigned repeat,
                      char *out, size_t len);

void tb_run(const char *group, const struct tb_scenario *s, size_t n, unsigned repeat, char *out,
            size_t len)
{
    const char *bin = env_or_fail("HVPROF_BINARY_DIR");
    if (!tb_full() && in_ci_shared(group)) {
        char done[PATH_MAX];
        snprintf(done, sizeof(done), "%s/linux-runs/ci/.complete", bin);
        struct stat st;
        if (stat(done, &st) == 0) {
            snprintf(out, len, "%s/linux-runs/ci", bin);
            printf("linux-testbed: group %s, CI's matrix: %zu scenario(s) run with the other "
                   "groups of CI's shared run in %s\n",
                   group, n, out);
            return;
        }
    }
    run_group(group, s, n, repeat, out, len);
}

size_t tb_run_group(const char *group, unsigned full_repeat, struct tb_scenario *sel,
                    unsigned *repeat, char *out, size_t len)
{
    size_t all_n;
    const struct tb_scenario *all = tb_group(group, &all_n);
    if (!all)
        fail_msg("no test bed group %s (tests/linux/matrix.c)", group);
    assert_true(all_n <= TB_MAX_GROUP);
    size_t n = tb_select(all, all_n, sel);
    *repeat = tb_repeat(full_repeat);
    tb_run(group, sel, n, *repeat, out, len);
    return n;
}

void tb_run_ci_shared(void)
{
    const char *bin = env_or_fail("HVPROF_BINARY_DIR");
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof(cmd), "rm -f '%s/linux-runs/ci/.complete'", bin);
    assert_int_equal(system(cmd), 0);
    if (tb_full()) {
        printf("linux-testbed: the full matrix: each test runs its own groups\n");
        return;
    }
    struct tb_scenario all[64];
    size_t n = 0;
    for (const char *const *g = tb_ci_shared; *g; g++) {
        size_t gn;
        const struct tb_scenario *gs = tb_group(*g, &gn);
        assert_non_null(gs);
        assert_true(n + gn <= sizeof(all) / sizeof(all[0]));
        n += tb_select(gs, gn, all + n);
    }
    char out[PATH_MAX];
    run_group("ci", all, n, 1, out, sizeof(out));
    snprintf(cmd, sizeof(cmd), "touch '%s/.complete'", out);
    assert_int_equal(system(cmd), 0);
}

static void run_group(const char *group, const struct tb_scenario *s, size_t n, unsigned repeat,
                      char *out, size_t len)
{
    const char *bin = env_or_fail("HVPROF_BINARY_DIR"), *src = env_or_fail("HVPROF_SOURCE_DIR");
    snprintf(out, len, "%s/linux-runs/%s", bin, group);
    printf("linux-testbed: group %s, %s matrix: %zu scenario(s), %u run(s) each\n", group,
           tb_full() ? "the full" : "CI's", n, repeat);
    /* Developers changing a check: HVPROF_TB_REUSE=1 checks the last runs again (docs/linux.md). */
    const char *reuse = getenv("HVPROF_TB_REUSE");
    if (reuse && !strcmp(reuse, "1")) {
        printf("linux-testbed: HVPROF_TB_REUSE=1: checking the runs in %s again\n", out);
        return;
    }
    /* All L1 boots of a group within 10 minutes plus 2 a run in CI's matrix (run.sh's
     * HVPROF_TB_DEADLINE): a run takes 1-2 minutes here, and a few L1 deaths (2-3 minutes each)
     * fit in the rest; in the full one at least 25 minutes. */
    bool own_deadline = !getenv("HVPROF_TB_DEADLINE");
    if (own_deadline) {
        char secs[32];
        size_t by_runs = 600 + 120 * n * repeat;
        snprintf(secs, sizeof(secs), "%zu", tb_full() && by_runs < 1500 ? (size_t)1500 : by_runs);
        setenv("HVPROF_TB_DEADLINE", secs, 1);
    }
    char cmd[6 * PATH_MAX];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", out, out);
    assert_int_equal(system(cmd), 0);
    char scen[PATH_MAX];
    snprintf(scen, sizeof(scen), "%s.scenarios", out);
    FILE *f = fopen(scen, "w");
    assert_non_null(f);
    /* Repeats interleaved (all first runs, then all second runs): a scenario's runs are never
     * back to back, so a disturbance of the host hits different scenarios. */
    for (unsigned k = 1; k <= repeat; k++)
        for (size_t i = 0; i < n; i++) {
            char name[80];
            if (repeat > 1)
                snprintf(name, sizeof(name), "%s.%u", s[i].name, k);
            else
                snprintf(name, sizeof(name), "%s", s[i].name);
            fprintf(f, "%s|%s|%s|%u|%s|%s %s|%s|%s\n", name, s[i].cmd, s[i].kernel, s[i].vcpus,
                    s[i].mem, TB_BASE_CMDLINE, s[i].cmdline ? s[i].cmdline : "",
                    s[i].opts ? s[i].opts : "", s[i].env ? s[i].env : "");
        }
    fclose(f);
    /* The warm-up (docs/linux.md, "The first run after L1's boot"): the first hvprof record
     * scenario at one vCPU, once at the start of every L1 boot. */
    char warm[PATH_MAX + 32] = "";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s[i].cmd, "record"))
            continue;
        char wpath[PATH_MAX];
        snprintf(wpath, sizeof(wpath), "%s.warmup", out);
        FILE *w = fopen(wpath, "w");
        assert_non_null(w);
        fprintf(w, "warmup|record|%s|1|%s|%s %s|%s|%s\n", s[i].kernel, s[i].mem, TB_BASE_CMDLINE,
                s[i].cmdline ? s[i].cmdline : "", s[i].opts ? s[i].opts : "",
                s[i].env ? s[i].env : "");
        fclose(w);
        snprintf(warm, sizeof(warm), "HVPROF_TB_WARMUP='%s' ", wpath);
        break;
    }
    snprintf(cmd, sizeof(cmd), "%sbash '%s/tests/linux/run.sh' '%s' '%s/cli/hvprof' '%s' '%s' >&2",
             warm, src, tb_cache(), bin, scen, out);
    int st = system(cmd);
    if (own_deadline)
        unsetenv("HVPROF_TB_DEADLINE");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the test bed could not run group %s (run.sh: status %d; see %s/l1.log and "
                 "l1-console.*.log)",
                 group, WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
}

/* The length of the kernel's message time stamp at `s` ("[   12.345678] ", CONFIG_PRINTK_TIME),
 * or 0 if `s` does not start with one. */
static size_t printk_stamp(const char *s)
{
    const char *p = s;
    if (*p++ != '[')
        return 0;
    while (*p == ' ')
        p++;
    if (!isdigit((unsigned char)*p))
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p++ != '.' || !isdigit((unsigned char)*p))
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p++ != ']')
        return 0;
    return (size_t)(p - s);
}

/* The guest's programs write to the console through the tty, a whole write() at a time, but the
 * kernel writes its messages straight to the UART (printk's console driver) between any two
 * characters of that output: "HVTEST map 12 2000[    3.1] clocksource: ...\n0000-2001000 ...".
 * tb_each_line hands `fn` the programs' lines whole again: the part before a message that cut a
 * line waits for the next line that is not a kernel message and is joined to it. */
void tb_each_line(const char *console, void (*fn)(const char *line, void *arg), void *arg)
{
    char cut[512] = "";
    for (const char *line = console; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        size_t have = 0;
        if (printk_stamp(line)) {
            /* A message of the kernel's own, whole: a cut line stays waiting. */
            have = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
            memcpy(buf, line, have);
        } else {
            /* A line of its own is no line's rest: the waiting part goes alone. */
            if (cut[0] && !strncmp(line, "HVTEST ", 7)) {
                fn(cut, arg);
                cut[0] = 0;
            }
            have = strlen(cut);
            memcpy(buf, cut, have);
            cut[0] = 0;
            size_t take = n < sizeof(buf) - 1 - have ? n : sizeof(buf) - 1 - have;
            memcpy(buf + have, line, take);
            have += take;
        }
        buf[have] = 0;
        line = end ? end + 1 : NULL;
        char *stamp = NULL;
        for (char *p = buf + 1; *p && !stamp; p++)
            if (*p == '[' && printk_stamp(p))
                stamp = p;
        if (stamp && !printk_stamp(buf)) {
            size_t keep = (size_t)(stamp - buf);
            if (keep >= sizeof(cut))
                keep = sizeof(cut) - 1;
            memcpy(cut, buf, keep);
            cut[keep] = 0;
            fn(stamp, arg);
            continue;
        }
        fn(buf, arg);
    }
    if (cut[0])
        fn(cut, arg);
}

static void parse_line(const char *buf, void *arg)
{
    struct tb_result *r = arg;
    {
        const char *h = strstr(buf, "HVTEST ");
        if (h) {
            char name[40], path[96], type;
            int pid, tid;
            unsigned long long lo, hi;
            const char *c = strstr(h, " cpus=");
            if (!strncmp(h, "HVTEST userspace", 16)) {
                r->userspace = true;
                if (c)
                    r->cpus = (unsigned)atoi(c + 6);
                r->paging_levels = strstr(h, " paging=5-level") ? 5 : 4;
                r->pti = strstr(h, " pti=on") != NULL;
            } else if (!strncmp(h, "HVTEST done", 11)) {
                r->done = true;
            } else if (sscanf(h, "HVTEST proc %39s pid=%d tid=%d", name, &pid, &tid) == 3 &&
                       r->nprocs < TB_MAX_PROCS) {
                struct tb_gproc *p = &r->procs[r->nprocs++];
                snprintf(p->name, sizeof(p->name), "%s", name);
                p->pid = pid;
                p->tid = tid;
                p->cpu_ms = -1;
            } else if (sscanf(h, "HVTEST cpu pid=%d user_ms=%llu sys_ms=%llu", &pid, &lo, &hi) ==
                       3) {
                for (unsigned k = 0; k < r->nprocs; k++)
                    if (r->procs[k].pid == pid && r->procs[k].tid == pid)
                        r->procs[k].cpu_ms = (long)(lo + hi);
            } else if (sscanf(h, "HVTEST ksym %llx %c %39s", &lo, &type, name) == 3 &&
                       r->nksyms < TB_MAX_KSYMS) {
                r->ksyms[r->nksyms].addr = lo;
                r->ksyms[r->nksyms].type = type;
                snprintf(r->ksyms[r->nksyms].name, sizeof(r->ksyms[r->nksyms].name), "%s", name);
                r->nksyms++;
            } else if (sscanf(h, "HVTEST kmodsym %llx %c %39s", &lo, &type, name) == 3 &&
                       r->nkmodsyms < TB_MAX_KMODSYMS) {
                r->kmodsyms[r->nkmodsyms].addr = lo;
                r->kmodsyms[r->nkmodsyms].type = type;
                snprintf(r->kmodsyms[r->nkmodsyms].name, sizeof(r->kmodsyms[r->nkmodsyms].name),
                         "%s", name);
                r->nkmodsyms++;
            } else if (!strncmp(h, "HVTEST kmod ", 12) &&
                       sscanf(h + 12, "%31s %15s", r->kmod, path) == 2) {
                r->kmod_loaded = !strcmp(path, "loaded");
            } else if (sscanf(h, "HVTEST map %d %llx-%llx %95s", &pid, &lo, &hi, path) == 4 &&
                       r->nmaps < TB_MAX_MAPS) {
                struct tb_map *m = &r->maps[r->nmaps++];
                m->pid = pid;
                m->lo = lo;
                m->hi = hi;
                snprintf(m->path, sizeof(m->path), "%s", path);
            }
        }
    }
}

static void parse_console(struct tb_result *r)
{
    tb_each_line(r->console, parse_line, r);
}

void tb_load(struct tb_result *r, const char *out, const char *name)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", name);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/status", out, name);
    char *status = slurp(path);
    if (!status)
        return;
    r->present = true;
    r->status = atoi(status);
    free(status);
    snprintf(path, sizeof(path), "%s/%s/time", out, name);
    char *t = slurp(path);
    double t0 = 0, t1 = 0;
    if (t && sscanf(t, "%lf %lf", &t0, &t1) == 2)
        r->seconds = t1 - t0;
    free(t);
    snprintf(path, sizeof(path), "%s/%s/console.log", out, name);
    r->console = slurp(path);
    snprintf(path, sizeof(path), "%s/%s/summary.txt", out, name);
    r->summary = slurp(path);
    if (!r->console)
        r->console = strdup("");
    if (!r->summary)
        r->summary = strdup("");
    snprintf(path, sizeof(path), "%s/%s/kvm-clock.txt", out, name);
    r->kvm_clock = slurp(path);
    snprintf(r->rec, sizeof(r->rec), "%s/%s/rec.fxt", out, name);
    parse_console(r);
}

void tb_free(struct tb_result *r)
{
    free(r->console);
    free(r->summary);
    free(r->kvm_clock);
    r->console = r->summary = r->kvm_clock = NULL;
}

bool tb_triple_fault(const struct tb_result *r)
{
    return r->present && r->summary && strstr(r->summary, "guest stopped (triple-fault)");
}

static void print_l1_interrupts(const struct tb_result *r);

bool tb_hung_in_boot(const struct tb_result *r)
{
    return r->present && !r->userspace && r->summary &&
           strstr(r->summary, "guest stopped (timeout)");
}

/* The summary's "total" row: user, kernel and idle samples, missed ticks. */
static bool tick_counts(const struct tb_result *r, unsigned long long c[4])
{
    const char *t = r->summary ? strstr(r->summary, "\n  total ") : NULL;
    return t && sscanf(t + 9, "%llu %llu %llu %llu", &c[0], &c[1], &c[2], &c[3]) == 4;
}

bool tb_starved(const struct tb_result *r)
{
    unsigned long long c[4];
    /* Under 1 % user samples with more ticks missed than taken; or under 0.1 % whatever was
     * missed (one CI run: 0 user samples against 30117 kernel ones, 20955 ticks missed, while
     * the guest ran its workloads and rebooted). */
    return tick_counts(r, c) && c[0] * 100 < c[1] &&
           (c[3] > c[0] + c[1] + c[2] || c[0] * 1000 < c[1]);
}

bool tb_starved_partly(const struct tb_result *r)
{
    unsigned long long c[4];
    return tick_counts(r, c) && c[0] * 10 < c[1] && 2 * c[3] > c[0] + c[1] + c[2];
}

unsigned tb_l1_deaths(const char *out, const char *name, bool print)
{
    unsigned deaths = 0;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/l1.log", out);
    char *log = slurp(path);
    for (const char *l = log; l && (l = strstr(l, "L1 boot ")); l++) {
        unsigned boot;
        char died[80];
        if (sscanf(l, "L1 boot %u died in %79s", &boot, died) != 2 || strcmp(died, name))
            continue;
        deaths++;
        if (!print)
            continue;
        snprintf(path, sizeof(path), "%s/l1-console.%u.log", out, boot);
        char *con = slurp(path);
        const char *bug = con ? strstr(con, "BUG: ") : NULL;
        if (!bug && con)
            bug = strstr(con, "Kernel panic");
        /* No panic: the watchdog's reason, if it stopped that boot (run.sh: "L1 boot N went
         * quiet: ...", "stalled: ...", "wedged: ..."). */
        const char *why = NULL;
        char prefix[32];
        int plen = snprintf(prefix, sizeof(prefix), "L1 boot %u ", boot);
        for (const char *w = log; !bug && (w = strstr(w, prefix)); w++)
            if ((w == log || w[-1] == '\n') && strncmp(w + plen, "died in ", 8)) {
                why = w + plen;
                break;
            }
        const char *text = bug ? bug : why ? why : "no panic report on its console";
        printf("  L1 boot %u died in it: %.*s\n", boot, (int)strcspn(text, "\n"), text);
        free(con);
    }
    free(log);
    return deaths;
}

/* The control L1 ran at once after a starved recording (l1_init.sh, starved_control), in
 * DIR/control: QEMU/KVM kicked at the recording's rate in the same L1. Its kicker missing more
 * ticks than it took is the platform's starvation, seen by the reference VMM too; a control
 * that kept its ticks leaves the starvation hvprof's. Prints what the control showed. */
static bool starved_on_evidence(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/control/summary.txt", dir);
    char *sum = slurp(path);
    const char *k = sum ? strstr(sum, "hvtest_kick: ") : NULL;
    const char *t = k ? strstr(k, "; ") : NULL;
    unsigned long long taken, missed;
    bool platform = false;
    if (t && sscanf(t, "; %llu ticks taken, %llu missed", &taken, &missed) == 2) {
        platform = missed > taken;
        printf("  its control, QEMU/KVM kicked in the same L1 right after: %llu ticks taken, %llu "
               "missed: %s\n",
               taken, missed,
               platform ? "L1's timers starved for the reference VMM too (the platform's)"
                        : "the reference kept its ticks (the starvation stays hvprof's)");
    } else
        printf("  no control ran after it (%s)\n", sum ? "no kicker report" : path);
    free(sum);
    return platform;
}

unsigned tb_each_run(const char *out, const struct tb_scenario *s, unsigned repeat,
                     void (*check)(const struct tb_result *r, const struct tb_scenario *s,
                                   void *ctx),
                     void *ctx)
{
    /* Losses with their own evidence: starved attempts or runs whose control starved too. */
    unsigned checked = 0, faults = 0, attempts = 0, evidenced = 0;
    for (unsigned k = 1; k <= repeat; k++) {
        char name[80];
        if (repeat > 1)
            snprintf(name, sizeof(name), "%s.%u", s->name, k);
        else
            snprintf(name, sizeof(name), "%s", s->name);
        /* Attempts that triple-faulted or had no user-mode exits and were booted again in L1
         * (tests/linux/l1_init.sh). */
        for (unsigned a = 1; a <= 2; a++) {
            static const char *const why[][2] = {{"fault", "triple-faulted"},
                                                 {"starved", "had no user-mode exits"}};
            for (size_t w = 0; w < 2; w++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s/%s.%u/summary.txt", out, name, why[w][0], a);
                char *sum = slurp(path);
                if (sum) {
                    printf("NOTE %s: attempt %u %s and was booted again:\n%.1500s\n", name, a,
                           why[w][1], sum);
                    attempts++;
                    snprintf(path, sizeof(path), "%s/%s/%s.%u", out, name, why[w][0], a);
                    if (w == 1 && starved_on_evidence(path))
                        evidenced++;
                }
                free(sum);
            }
        }
        struct tb_result r;
        tb_load(&r, out, name);
        if (!r.present) {
            /* docs/linux.md, "When L1 itself dies": the outer VM's kernel panicked during this
             * run in every boot that ran it (the emulated SVM hands L1's interrupt path the
             * inner guest's GS base), or other runs' panics used up the L1 boots before it
             * ran; tolerated like a triple fault. */
            if (tb_l1_deaths(out, name, false)) {
                printf("NOTE %s: the outer VM (L1) died during it in every boot that ran it "
                       "(tolerated once per scenario, docs/linux.md):\n",
                       name);
                tb_l1_deaths(out, name, true);
            } else
                printf("NOTE %s: not run: the outer VM died in other runs until the test bed's "
                       "L1 boots or its deadline ran out (see l1.log; tolerated once per "
                       "scenario, docs/linux.md)\n",
                       name);
            faults++;
        } else if (tb_starved(&r)) {
            /* docs/linux.md, "Runs without user-mode exits": the platform's, tolerated like a
             * triple fault; the scenario's other run must pass every check. */
            printf("NOTE %s: no user-mode exits (the emulated platform did not interrupt the "
                   "guest's user mode; tolerated once per scenario, docs/linux.md):\n%.1200s\n",
                   name, r.summary);
            print_l1_interrupts(&r);
            faults++;
            char dir[PATH_MAX];
            snprintf(dir, sizeof(dir), "%s/%s", out, name);
            if (starved_on_evidence(dir))
                evidenced++;
        } else if (tb_hung_in_boot(&r)) {
            /* Seen once in ~60 runs (cloud-la57): both vCPUs looping through asm_exc_int3 in
             * text patching 3 s into the boot, for the whole timeout; the platform's, like a
             * triple fault. The kernel profile shows where it hung. */
            printf("NOTE %s: the guest hung in its boot before /init (tolerated once per "
                   "scenario on the emulated SVM, docs/linux.md):\n%.1500s\n",
                   name, r.summary);
            faults++;
        } else if (tb_triple_fault(&r)) {
            /* The first lines of the summary: the stop, the registers now (reset state), the
             * registers at the last exit. */
            printf("NOTE %s: the guest triple-faulted (tolerated once per scenario on the "
                   "emulated SVM, docs/linux.md):\n%.1500s\n",
                   name, r.summary);
            faults++;
        } else {
            check(&r, s, ctx);
            checked++;
        }
        tb_free(&r);
    }
    if (!checked)
        fail_msg("%s: the guest triple-faulted, hung in its boot, had no user-mode exits or its "
                 "outer VM died in all %u runs",
                 s->name, faults);
    /* A loss is hvprof's until the reference VMM under the same load shows otherwise
     * (docs/linux.md, "The reference under hvprof's load"). */
    if (faults + attempts > evidenced) {
        char why[PATH_MAX + 256];
        if (!tb_platform_evidence(out, why, sizeof(why)))
            fail_msg("%s: %u run(s) and %u attempt(s) lost (%u of them starved on a control's "
                     "evidence), and no control run of QEMU/KVM under hvprof's load lost its guest "
                     "in this test bed session: the losses are hvprof's until the reference shows "
                     "otherwise",
                     s->name, faults, attempts, evidenced);
        printf("NOTE %s: %u run(s) and %u attempt(s) lost; tolerated on the reference VMM's "
               "evidence: %s\n",
               s->name, faults, attempts, why);
    } else if (evidenced)
        printf("NOTE %s: %u run(s) and %u attempt(s) lost, each starved with its control's "
               "evidence (above)\n",
               s->name, faults, attempts);
    return checked;
}

void tb_check_boot(const struct tb_result *r, const struct tb_scenario *s)
{
    if (!r->present)
        fail_msg("%s: did not finish: the outer VM died during it in every boot (see l1.log)",
                 r->name);
    if (r->status != 0)
        fail_msg("%s: exit status %d\n%s", r->name, r->status, r->summary);
    if (!strcmp(s->cmd, "qemu"))
        return;
    if (!strstr(r->summary, "guest stopped (reset)") &&
        !strstr(r->summary, "guest stopped (poweroff)"))
        fail_msg("%s: no clean stop (reset or power-off):\n%s", r->name, r->summary);
    if (!r->userspace)
        fail_msg("%s: the guest never reached /init", r->name);
    if (!r->done)
        fail_msg("%s: the guest's workloads did not finish", r->name);
    if (r->cpus != s->vcpus)
        fail_msg("%s: the guest brought up %u CPUs, --vcpus %u", r->name, r->cpus, s->vcpus);
}

/* Lines that report a problem, case-insensitively. */
static bool suspicious(const char *line)
{
    static const char *const words[] = {
        "warn",    "error",      "bug",       "fail",   "firmware",  "unstable", "invalid",
        "problem", "call trace", "panic",     "oops",   "timed out", "timeout",  "unable",
        "cannot",  "can't",      "not found", "broken", "mismatch",  "stuck",    "lockup"};
    char low[512];
    size_t i = 0;
    for (; line[i] && line[i] != '\n' && i + 1 < sizeof(low); i++)
        low[i] = (char)tolower((unsigned char)line[i]);
    low[i] = 0;
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
        if (strstr(low, words[w]))
            return true;
    return false;
}

/* A console line without its timestamp, with every run of digits and hex letters after "0x"
 * folded to '#': what stays the same from one boot to the next. */
static void normalize(const char *line, char *out, size_t len)
{
    const char *p = line;
    if (*p == '[') {
        const char *e = strchr(p, ']');
        if (e && (size_t)(e - p) < 20)
            p = e + 1;
    }
    while (*p == ' ')
        p++;
    size_t o = 0;
    while (*p && *p != '\n' && *p != '\r' && o + 1 < len) {
        if (isdigit((unsigned char)*p)) {
            while (isxdigit((unsigned char)*p) || *p == 'x')
                p++;
            out[o++] = '#';
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = 0;
}

/* The kernel message a console line carries: the line itself, or for a line of our workloads'
 * output ("HVTEST ...") the kernel message printed into it before its newline (the serial
 * port interleaves the two: "HVTEST map ... /bin/hv_nofp[   26.150076] clocksource: ..."). */
static const char *kernel_message(const char *line)
{
    if (strncmp(line, "HVTEST", 6))
        return line;
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    for (const char *p = line; (p = memchr(p, '[', len - (size_t)(p - line))); p++) {
        const char *q = p + 1;
        while (*q == ' ')
            q++;
        if (!isdigit((unsigned char)*q))
            continue;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q++ != '.' || !isdigit((unsigned char)*q))
            continue;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q == ']')
            return p;
    }
    return line;
}

static bool reference_has(const char *reference, const char *norm)
{
    char buf[512];
    for (const char *line = reference; line && *line;) {
        normalize(kernel_message(line), buf, sizeof(buf));
        if (!strcmp(buf, norm))
            return true;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return false;
}

/* The console of QEMU/KVM booting `kernel` in this test bed session with its vCPU threads
 * kicked at hvprof's rate (a control, control.c), or NULL: a warning it prints too is the
 * platform's, not hvprof's. */
static char *control_console(const char *kernel)
{
    static const char *const groups[] = {"reference", "kernels", "ci"};
    const char *bin = getenv("HVPROF_BINARY_DIR");
    for (size_t g = 0; bin && g < sizeof(groups) / sizeof(groups[0]); g++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/linux-runs/%s/%s-kicked/console.log", bin, groups[g],
                 kernel);
        char *c = slurp(path);
        if (c)
            return c;
    }
    return NULL;
}

/* What a clocksource-watchdog warning needs to be understood (docs/linux.md, "L1's clock"): the
 * two intervals the guest compared (7.2's watchdog prints them after "frequency skew") and what
 * L1's KVM did to the guest's clocks meanwhile, as l1_init.sh traced it. */
static void print_clock_evidence(const struct tb_result *r)
{
    printf("%s: the guest's clock lines:\n", r->name);
    for (const char *line = r->console; line && *line;) {
        const char *eol = strchr(line, '\n');
        int len = eol ? (int)(eol - line) : (int)strlen(line);
        if ((memmem(line, (size_t)len, "interval:", 9) ||
             memmem(line, (size_t)len, "clocksource", 11) || memmem(line, (size_t)len, "tsc", 3) ||
             memmem(line, (size_t)len, "TSC", 3)) &&
            !memmem(line, (size_t)len, "mask:", 5))
            printf("    %.*s\n", len > 200 ? 200 : len, line);
        line = eol ? eol + 1 : NULL;
    }
    if (!r->kvm_clock) {
        printf("%s: no trace of L1's KVM clock events (kvm-clock.txt)\n", r->name);
        return;
    }
    /* Every event but the kvmclock page writes, which a guest gets at each clock update. */
    unsigned pages = 0, shown = 0;
    printf("%s: L1's KVM clock events in the run:\n", r->name);
    for (const char *line = r->kvm_clock; *line;) {
        const char *eol = strchr(line, '\n');
        int len = eol ? (int)(eol - line) : (int)strlen(line);
        if (memmem(line, (size_t)len, "kvm_pvclock_update", 18)) {
            if (pages++ < 4)
                printf("    %.*s\n", len > 240 ? 240 : len, line);
        } else if (shown++ < 40) {
            printf("    %.*s\n", len > 240 ? 240 : len, line);
        }
        line = eol ? eol + 1 : NULL;
    }
    printf("%s: %u other event(s), %u kvmclock page write(s)\n", r->name, shown, pages);
    fflush(stdout); /* before the failure cmocka prints on stderr */
}

/* The rewritten clocksource watchdog (kernel/time/clocksource.c, watchdog_check_freq(); in
 * Debian sid's 7.2, not in 6.12 or earlier, whose cs_watchdog_read() prints "read-back delay")
 * compares the TSC's and kvm-clock's advance since its last readout and marks the TSC unstable
 * ("due to frequency skew") when they differ by more than interval >> 11 (>> 8 for a clock not
 * calibrated) plus the current readout's window; it then prints both intervals. Its timer is
 * re-armed at the old expiry plus 0.5 s, so after the guest's timers stood still for longer
 * than that (the vCPU not run), the catching-up timer softirq runs the watchdog twice within
 * microseconds: a margin of a few nanoseconds plus one readout's window, against the
 * difference of two readouts' gaps, each up to 50 us (WATCHDOG_READOUT_MAX_NS). The test bed's
 * QEMU/KVM control printed exactly that: kvm-clock 54,791 ns against the TSC's 53,318 ns. Such
 * a verdict says the guest stood still, not that its clocks disagree; it is recognised by its
 * own numbers: both intervals under half the watchdog's period, within one readout window of
 * each other, and hvprof's longest exit (its summary) far shorter than the period. Any other
 * skew fails, with the guest's clock lines and L1's KVM clock events printed. */
#define WATCHDOG_REFIRE_MAX_NS  250000000LL
#define WATCHDOG_READOUT_MAX_NS 50000LL

static bool interval_after(const char *from, const char *label, long long *ns)
{
    const char *eol = strchr(from, '\n');
    for (unsigned n = 0; eol && n < 4; n++) {
        const char *line = eol + 1;
        eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *l = memmem(line, len, label, strlen(label));
        const char *iv = memmem(line, len, "interval:", 9);
        if (l && iv && sscanf(iv, "interval: %lldns", ns) == 1)
            return true;
    }
    return false;
}

/* Every watchdog verdict on the console is a re-fire after a stall (above); the two intervals
 * the first printed in *wd and *cs. */
static bool watchdog_refire(const char *console, long long *wd, long long *cs)
{
    const char *m = strstr(console, "unstable due to frequency skew");
    if (!m)
        return false;
    for (bool first = true; m; m = strstr(m + 1, "unstable due to frequency skew"), first = false) {
        long long w, c;
        if (!interval_after(m, "Watchdog", &w) || !interval_after(m, "Clocksource", &c))
            return false;
        long long diff = w > c ? w - c : c - w;
        if (w >= WATCHDOG_REFIRE_MAX_NS || c >= WATCHDOG_REFIRE_MAX_NS ||
            diff > WATCHDOG_READOUT_MAX_NS)
            return false;
        if (first) {
            *wd = w;
            *cs = c;
        }
    }
    return true;
}

static bool refire_line(const char *norm)
{
    return strstr(norm, "unstable due to frequency skew") ||
           strstr(norm, "Marking TSC unstable due to clocksource watchdog");
}

void tb_check_console_clean(const struct tb_result *r, const struct tb_scenario *s,
                            const char *reference)
{
    if (!reference)
        fail_msg("%s: no reference console (the linux_reference fixture did not run)", r->name);
    char *control = control_console(s->kernel);
    char extra[4096] = "";
    size_t used = 0;
    unsigned n = 0, platform = 0, refired = 0;
    long long wd_ns = 0, cs_ns = 0;
    bool refire = watchdog_refire(r->console, &wd_ns, &cs_ns);
    /* ... unless hvprof's own exit held the vCPU that long: its summary's longest exit. */
    const char *mx = strstr(r->summary, "exit path: mean ");
    double max_us = 0;
    if (refire && mx && sscanf(mx, "exit path: mean %*f us, max %lf us", &max_us) == 1 &&
        max_us * 1000.0 >= WATCHDOG_REFIRE_MAX_NS * 2.0)
        refire = false;
    for (const char *at = r->console; at && *at;) {
        const char *line = kernel_message(at);
        char norm[512];
        normalize(line, norm, sizeof(norm));
        /* Call-trace body lines (two spaces after the timestamp, "]  ---" closes a trace and
         * stays), our own output and the command line the scenario chose (it differs from the
         * reference boot's by design: "panic=-1" is no warning) are not kernel messages to
         * compare. The test looks at this line only, never on into the rest of the console. */
        const char *close = line[0] == '[' ? memchr(line, ']', strnlen(line, 20)) : NULL;
        const char *eol = strchr(line, '\n');
        bool body = close && (!eol || close < eol) && !strncmp(close, "]  ", 3) &&
                    strncmp(close, "]  ---", 6);
        bool skip = !strncmp(norm, "HVTEST", 6) || norm[0] == '?' || norm[0] == '<' || body ||
                    !strncmp(norm, "Kernel command line:", 20) ||
                    !strncmp(norm, "Command line:", 13);
        if (!skip && refire && refire_line(norm)) {
            refired++;
        } else if (!skip && suspicious(norm) && !reference_has(reference, norm) && control &&
                   reference_has(control, norm)) {
            platform++;
        } else if (!skip && suspicious(norm) && !reference_has(reference, norm) &&
                   used + 600 < sizeof(extra)) {
            used += (size_t)snprintf(extra + used, sizeof(extra) - used, "\n    %s", norm);
            n++;
        }
        at = strchr(at, '\n');
        if (at)
            at++;
    }
    if (platform)
        printf("NOTE %s: %u warning line(s) QEMU/KVM also printed booting %s in this L1 under "
               "hvprof's load (its kicked control): the platform's\n",
               r->name, platform, s->kernel);
    if (refired)
        printf("NOTE %s: the clocksource watchdog ran twice in a row after the guest stood still "
               "(kvm-clock %lld ns against the TSC's %lld ns, one readout window apart): %u "
               "line(s), the kernel's margin, not a clock that drifts (docs/linux.md, \"L1's "
               "clock\")\n",
               r->name, wd_ns, cs_ns, refired);
    free(control);
    if (n && (strstr(extra, "clocksource") || strstr(extra, "TSC")))
        print_clock_evidence(r);
    if (n)
        fail_msg("%s: %u warning/error line(s) that the same kernel does not print under "
                 "QEMU/KVM, unloaded or under hvprof's load:%s",
                 r->name, n, extra);
}

char *tb_reference(const char *kernel, unsigned vcpus)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/reference/%s-%u.log", tb_cache(), kernel, vcpus);
    char *c = slurp(path);
    if (!c) {
        snprintf(path, sizeof(path), "%s/reference/%s-2.log", tb_cache(), kernel);
        c = slurp(path);
    }
    return c;
}

void tb_keep_reference(const char *out, const char *name, const struct tb_scenario *s)
{
    if (tb_is_control(s)) {
        tb_keep_control(out, name);
        return;
    }
    struct tb_result r;
    tb_load(&r, out, name);
    tb_check_boot(&r, s);
    printf("reference %s: %.1f s\n", r.name, r.seconds);
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s/reference' && cp '%s/%s/console.log' '%s/reference/%s-%u.log'",
             tb_cache(), out, name, tb_cache(), s->kernel, s->vcpus);
    assert_int_equal(system(cmd), 0);
    tb_free(&r);
}

void tb_check_boot_run(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    struct tb_boot_totals *t = ctx;
    tb_check_boot(r, s);
    char *ref = tb_reference(s->kernel, s->vcpus);
    if (!ref)
        fail_msg("%s: no reference boot of kernel %s at %u vCPUs", r->name, s->kernel, s->vcpus);
    tb_check_console_clean(r, s, ref);
    free(ref);
    uint64_t with_user = tb_check_recording(r);
    tb_check_kernel_symbols(r, 0.95);
    tb_check_tasks(r);
    /* Chains through glibc to clone3 / __libc_start_call_main: a process's first samples may
     * come before its libraries' unwind tables are published (docs/cfi.md): 95 %, the issue's
     * target; the runs measured 97.4-100 %. */
    t->judged += tb_check_user_stacks(r, 0.95, strstr(s->opts, "--symbols") != NULL);
    t->syscall += tb_check_syscall_stacks(r, 0.95);
    /* Once each kind is verified, other runs need not repeat it (~10 s a run). */
    if (t->pprof && t->pprof_kinds != (1u << TB_PPROF_FNS) - 1)
        t->pprof_kinds |= tb_check_pprof_disasm(r);
    printf("%s: %.1f s, %u CPUs, %" PRIu64 " kernel samples with user stacks\n", r->name,
           r->seconds, r->cpus, with_user);
}

/* The first user-space address of a sample: its pc at CPL 3, else the user pc its completion
 * added. 0 if none. */
static uint64_t user_pc(const struct profile *p, const struct prof_sample *s)
{
    for (uint32_t i = 0; i < s->nframes; i++) {
        const struct prof_frame *f = &p->frames.v[s->first + i];
        if (!(f->flags & PROF_FRAME_KERNEL))
            return f->addr;
    }
    return 0;
}

/* L1's timer, IPI and call-function interrupt counts before and after a scenario (irq.before,
 * irq.after, written by l1_init.sh): what reached L1's CPUs while L2 ran. */
static void print_l1_interrupts(const struct tb_result *r)
{
    static const char *const which[] = {"before", "after"};
    for (int k = 0; k < 2; k++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s", r->rec);
        char *slash = strrchr(path, '/');
        if (!slash)
            return;
        snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "irq.%s", which[k]);
        char *t = slurp(path);
        if (!t) {
            printf("%s: no %s\n", r->name, path);
            continue;
        }
        printf("%s: L1's /proc/interrupts %s the run:\n", r->name, which[k]);
        for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
            const char *p = line + strspn(line, " ");
            if (line == t || !strncmp(p, "LOC:", 4) || !strncmp(p, "RES:", 4) ||
                !strncmp(p, "CAL:", 4) || !strncmp(p, "TLB:", 4))
                printf("  %s\n", line);
        }
        free(t);
    }
}

/* The run's recording into p (profile_free it), or the test fails. */
static void load_recording(const struct tb_result *r, struct profile *p, struct fxt_load_stats *st)
{
    profile_init(p);
    struct hv_err err = {0};
    if (fxt_load_profile_file(r->rec, p, st, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
}

void tb_load_profile(const struct tb_result *r, struct profile *p)
{
    load_recording(r, p, NULL);
    struct hv_err err = {0};
    if (profile_symbolize(p, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
}

uint64_t tb_check_recording(const struct tb_result *r)
{
    struct profile p;
    struct fxt_load_stats st;
    load_recording(r, &p, &st);
    /* Kernel samples get their user stack at once (from the ORC walk's user entry frame) or
     * through a continuation: count both. */
    uint64_t user = 0, kernel = 0, with_user = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        if (s->cpl != PROF_CPL_KERNEL) {
            user++;
            continue;
        }
        kernel++;
        for (uint32_t j = 0; j < s->nframes; j++)
            if (!(p.frames.v[s->first + j].flags & PROF_FRAME_KERNEL)) {
                with_user++;
                break;
            }
    }
    if (!user || !kernel || !with_user) {
        print_l1_interrupts(r);
        printf("%s: hvprof's summary:\n%s\n", r->name, r->summary);
        fail_msg("%s: %" PRIu64 " user and %" PRIu64 " kernel samples, %" PRIu64
                 " kernel samples with user stacks (%" PRIu64 " completions): all must be present",
                 r->name, user, kernel, with_user, st.completions);
    }

    /* One workload executable mapping at a time (the first mapping of each /bin/hv_* path per
     * guest pid): the guest pids that have it, and the recorded pids with samples inside it. */
    for (unsigned m = 0; m < r->nmaps; m++) {
        const struct tb_map *mp = &r->maps[m];
        if (strncmp(mp->path, "/bin/hv_", 8))
            continue;
        bool first = true;
        for (unsigned k = 0; k < m; k++)
            if (r->maps[k].lo == mp->lo && r->maps[k].hi == mp->hi &&
                !strcmp(r->maps[k].path, mp->path))
                first = false; /* the same range again (another pid or thread of it) */
        if (!first)
            continue;
        unsigned guest_pids = 0;
        for (unsigned k = 0; k < r->nmaps; k++)
            guest_pids += r->maps[k].lo == mp->lo && r->maps[k].hi == mp->hi &&
                          !strcmp(r->maps[k].path, mp->path);
        uint64_t seen[64];
        unsigned nseen = 0;
        uint64_t samples = 0;
        for (size_t i = 0; i < p.samples.n; i++) {
            uint64_t pc = user_pc(&p, &p.samples.v[i]);
            if (pc < mp->lo || pc >= mp->hi)
                continue;
            /* Another process may use the same addresses for something else (a library of
             * its own where this program lies): only the guest pids that map this count. */
            uint64_t gpid = profile_shown_pid(&p, p.samples.v[i].pid);
            bool maps_it = !p.guest_ids;
            for (unsigned k = 0; k < r->nmaps && !maps_it; k++)
                maps_it = (uint64_t)r->maps[k].pid == gpid && r->maps[k].lo == mp->lo &&
                          r->maps[k].hi == mp->hi && !strcmp(r->maps[k].path, mp->path);
            if (!maps_it)
                continue;
            samples++;
            uint64_t pid = p.samples.v[i].pid;
            bool known = false;
            for (unsigned k = 0; k < nseen; k++)
                known |= seen[k] == pid;
            if (!known && nseen < 64)
                seen[nseen++] = pid;
        }
        if (nseen > guest_pids)
            fail_msg("%s: %s [%" PRIx64 ", %" PRIx64 ") of %u guest process(es) was recorded "
                     "as %u processes (%" PRIu64 " samples)",
                     r->name, mp->path, mp->lo, mp->hi, guest_pids, nseen, samples);
    }
    profile_free(&p);
    return with_user;
}

unsigned tb_vcpus_sampled(const struct tb_result *r)
{
    struct profile p;
    load_recording(r, &p, NULL);
    uint64_t seen[1024 / 64] = {0};
    unsigned n = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        uint32_t v = p.samples.v[i].vcpu;
        if (v < 1024 && !(seen[v / 64] & (1ull << (v % 64)))) {
            seen[v / 64] |= 1ull << (v % 64);
            n++;
        }
    }
    profile_free(&p);
    return n;
}

/* The kernel module the guest loaded: recorded as "[name]" over its code, with every code symbol
 * the guest's /proc/kallsyms shows for it at the same address, under that name or an alias the
 * guest lists at the same address; and its
 * samples, if any, named from those symbols. */
static void check_module_symbols(const struct tb_result *r, const struct profile *p)
{
    if (!r->kmod_loaded)
        fail_msg("%s: the guest did not load its kernel module (HVTEST kmod %s)", r->name,
                 r->kmod[0] ? r->kmod : "line missing");
    if (r->nkmodsyms < 4)
        fail_msg("%s: the guest printed %u symbols of module %s", r->name, r->nkmodsyms, r->kmod);
    char want[40];
    snprintf(want, sizeof(want), "[%s]", r->kmod);
    const struct prof_mapping *mm = NULL;
    for (size_t i = 0; i < p->mappings.n; i++)
        if (p->mappings.v[i].pid == PROF_PID_ANY &&
            !strcmp(p->modules.v[p->mappings.v[i].module].name, want))
            mm = &p->mappings.v[i];
    if (!mm)
        fail_msg("%s: no module %s in the recording", r->name, want);
    const struct symtab *st = p->modules.v[mm->module].src.table;
    if (!st)
        fail_msg("%s: module %s recorded without symbols", r->name, want);
    for (unsigned i = 0; i < r->nkmodsyms; i++) {
        const struct tb_ksym *g = &r->kmodsyms[i];
        if (g->addr < mm->start || g->addr - mm->start >= mm->size)
            fail_msg("%s: %s %s at 0x%" PRIx64 " is outside the recorded [0x%" PRIx64
                     ", +0x%" PRIx64 ")",
                     r->name, want, g->name, g->addr, mm->start, mm->size);
        const struct sym *s = symtab_lookup(st, g->addr - mm->bias);
        /* Aliases (brd_exit and cleanup_module, module_exit's alias) share an address: the
         * recorded name must be one of the guest's names for it. */
        bool alias = false;
        for (unsigned k = 0; s && k < r->nkmodsyms && !alias; k++)
            alias =
                r->kmodsyms[k].addr == g->addr && !strcmp(symtab_name(st, s), r->kmodsyms[k].name);
        if (!s || s->addr != g->addr - mm->bias || !alias)
            fail_msg("%s: the guest's %s %s at 0x%" PRIx64 " is %s in the recording", r->name, want,
                     g->name, g->addr, s ? symtab_name(st, s) : "(nothing)");
    }
    uint64_t in_mod = 0;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *smp = &p->samples.v[i];
        for (uint32_t k = 0; k < smp->nframes; k++) {
            const struct prof_frame *f = &p->frames.v[smp->first + k];
            if (f->addr < mm->start || f->addr - mm->start >= mm->size)
                continue;
            in_mod++;
            if (f->loc == PROF_NONE || !p->locs.v[f->loc].resolved)
                fail_msg("%s: a frame at 0x%" PRIx64 " in %s is not named", r->name, f->addr, want);
        }
    }
    printf("%s: module %s at 0x%" PRIx64 ": its %u code symbols match the guest's; %" PRIu64
           " frames in it, all named\n",
           r->name, want, mm->start, r->nkmodsyms, in_mod);
}

void tb_check_kernel_symbols(const struct tb_result *r, double min_named)
{
    struct profile p;
    tb_load_profile(r, &p);
    const struct prof_module *km = NULL;
    const struct prof_mapping *kmap = NULL;
    for (size_t i = 0; i < p.mappings.n; i++) {
        const struct prof_mapping *mp = &p.mappings.v[i];
        if (mp->pid == PROF_PID_ANY && p.modules.v[mp->module].src.table &&
            !strcmp(p.modules.v[mp->module].name, "[kernel.kallsyms]")) {
            kmap = mp;
            km = &p.modules.v[mp->module];
        }
    }
    if (!km)
        fail_msg("%s: the recording carries no kernel symbols", r->name);
    check_module_symbols(r, &p);
    if (r->nksyms < 4)
        fail_msg("%s: the guest printed %u of its kernel symbols (HVTEST ksym): its "
                 "/proc/kallsyms hides addresses?",
                 r->name, r->nksyms);
    for (unsigned i = 0; i < r->nksyms; i++) {
        const struct tb_ksym *g = &r->ksyms[i];
        if (g->addr < kmap->start || g->addr - kmap->start >= kmap->size)
            fail_msg("%s: %s at 0x%" PRIx64 " (guest's /proc/kallsyms) is outside the recorded "
                     "kernel text [0x%" PRIx64 ", +0x%" PRIx64 ")",
                     r->name, g->name, g->addr, kmap->start, kmap->size);
        const struct sym *s = symtab_lookup(km->src.table, g->addr - kmap->bias);
        if (!s || s->addr != g->addr - kmap->bias || strcmp(symtab_name(km->src.table, s), g->name))
            fail_msg("%s: the guest's %s at 0x%" PRIx64 " is %s+0x%" PRIx64 " in the recording",
                     r->name, g->name, g->addr, s ? symtab_name(km->src.table, s) : "(nothing)",
                     s ? g->addr - kmap->bias - s->addr : 0);
    }
    uint64_t upper = 0, named = 0, low = 0, low_named = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *smp = &p.samples.v[i];
        if (smp->cpl != PROF_CPL_KERNEL || !smp->nframes)
            continue;
        const struct prof_frame *f = &p.frames.v[smp->first];
        if (f->addr < 0xffff800000000000ull) {
            low++; /* boot code before the kernel maps itself (decompressor, startup_64) */
            const struct prof_loc *lc = f->loc != PROF_NONE ? &p.locs.v[f->loc] : NULL;
            low_named +=
                lc && lc->resolved && !strcmp(p.funcs.v[lc->func].name, "bzImage_decompressor");
            continue;
        }
        upper++;
        named += f->loc != PROF_NONE && p.locs.v[f->loc].resolved;
    }
    double frac = upper ? (double)named / (double)upper : 0;
    printf("%s: %u guest symbols match; %" PRIu64 " of %" PRIu64
           " kernel-half samples named (%.1f%%), %" PRIu64 " in boot code below it, %" PRIu64
           " of them in the bzImage decompressor\n",
           r->name, r->nksyms, named, upper, 100 * frac, low, low_named);
    if (frac < min_named)
        fail_msg("%s: %.1f%% of kernel samples named, %.0f%% expected", r->name, 100 * frac,
                 100 * min_named);
    profile_free(&p);
}

/* The announced process a guest (pid, tid) belongs to, NULL if none. */
static const struct tb_gproc *announced(const struct tb_result *r, uint64_t pid, uint64_t tid)
{
    for (unsigned i = 0; i < r->nprocs; i++)
        if ((uint64_t)r->procs[i].pid == pid && (uint64_t)r->procs[i].tid == tid)
            return &r->procs[i];
    return NULL;
}

/* The comm Linux gives a program run as /bin/NAME: the file name, cut to TASK_COMM_LEN - 1. */
static void program_comm(const char *announced_name, char out[16])
{
    size_t n = strcspn(announced_name, "/");
    if (n > 15)
        n = 15;
    memcpy(out, announced_name, n);
    out[n] = 0;
}

void tb_check_tasks(const struct tb_result *r)
{
    if (!strstr(r->summary, "guest tasks: pid, tid and name of every stop"))
        fail_msg("%s: the summary does not say guest tasks were read:\n%s", r->name, r->summary);
    struct profile p;
    load_recording(r, &p, NULL);
    if (!p.guest_ids)
        fail_msg("%s: the recording has no guest pids", r->name);
    /* Stops whose task could not be read keep the generic identity; the summary counts them
     * (docs/linux-introspection.md), and only those may lack an announced pid. */
    const char *u = strstr(r->summary, " stops could not be read");
    while (u && u > r->summary && u[-1] >= '0' && u[-1] <= '9')
        u--;
    uint64_t unreadable = u ? strtoull(u, NULL, 10) : 0, generic = 0;
    uint64_t in_workloads = 0, pid_samples[TB_MAX_PROCS] = {0};
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        uint64_t pc = user_pc(&p, s);
        const struct tb_map *m = NULL;
        for (unsigned k = 0; k < r->nmaps && !m; k++)
            if ((!strncmp(r->maps[k].path, "/bin/hv_", 8) ||
                 !strncmp(r->maps[k].path, "/lib/hvtest/", 12)) &&
                pc >= r->maps[k].lo && pc < r->maps[k].hi)
                m = &r->maps[k];
        if (!m)
            continue;
        in_workloads++;
        uint64_t pid = profile_shown_pid(&p, s->pid), tid = profile_shown_tid(&p, s->pid, s->tid);
        const struct tb_gproc *g = announced(r, pid, tid);
        const char *comm = profile_thread_name(&p, s->pid, s->tid);
        if (!g && strstr(comm, " fs=0x") && ++generic <= unreadable)
            continue; /* one of the stops the summary counts as unread */
        if (!g)
            fail_msg("%s: a sample at 0x%" PRIx64 " in %s is pid %" PRIu64 " tid %" PRIu64
                     " (\"%s\"), which no workload announced (%" PRIu64
                     " unread stops in the summary)",
                     r->name, pc, m->path, pid, tid, comm, unreadable);
        char want[16];
        program_comm(g->name, want);
        if (strcmp(comm, want) || strcmp(profile_process_name(&p, s->pid), want))
            fail_msg("%s: %s (pid %d tid %d) is recorded as thread \"%s\" of process \"%s\"",
                     r->name, g->name, g->pid, g->tid, comm, profile_process_name(&p, s->pid));
    }
    /* Each program runs in some thread: hv_threads in its workers, the others in their main
     * thread. Unless the run has the emulated platform's known starvation (docs/linux.md, "the
     * first run after L1's boot": the timer reaches the vCPU only when the
     * guest exits for its own reasons, in its kernel), each has samples under its own pid. */
    uint64_t user = 0, first_user = UINT64_MAX;
    for (size_t i = 0; i < p.samples.n; i++)
        if (p.samples.v[i].cpl != PROF_CPL_KERNEL) {
            user++;
            if (p.samples.v[i].ts < first_user)
                first_user = p.samples.v[i].ts;
        }
    /* The boot, before user space and before the kernel was described, is the "[boot]"
     * process's (lx_boot_identity), not an address space's "asN cr3=0x..." (only the stops the
     * summary counts as unread may be). */
    uint64_t boot = 0, anonymous = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        if (s->ts >= first_user)
            continue;
        const char *name = profile_process_name(&p, s->pid);
        boot += !strcmp(name, "[boot]");
        anonymous += strstr(name, " cr3=0x") != NULL;
    }
    printf("%s: before user space: %" PRIu64 " samples of [boot], %" PRIu64
           " of unnamed address spaces (%" PRIu64 " unread stops in the summary)\n",
           r->name, boot, anonymous, unreadable);
    if (anonymous > unreadable)
        fail_msg("%s: %" PRIu64 " samples before user space in unnamed address spaces", r->name,
                 anonymous);
    if (!boot) /* every recording starts with the guest's boot */
        fail_msg("%s: no sample of the guest's boot is the [boot] process's", r->name);
    if (user < 50 || tb_starved_partly(r)) {
        printf("%s: only %" PRIu64 " user samples in the whole run, missed ticks over a third of "
               "them (the platform's starvation for part of the run, docs/linux.md): workload "
               "presence not checked\n",
               r->name, user);
        profile_free(&p);
        return;
    }
    /* Any sample under the pid counts (a program whose time goes into libc, as hv_libcall's,
     * may have few in its own mapping at one vCPU with five workloads). */
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        uint64_t pid = profile_shown_pid(&p, s->pid);
        for (unsigned k = 0; k < r->nprocs; k++)
            if ((uint64_t)r->procs[k].pid == pid)
                pid_samples[k]++;
    }
    /* Per program (a process's threads together) its samples and the CPU time the guest gave
     * it. The programs run side by side for the same wall time, so each should have samples in
     * proportion to its CPU time at the run's own rate; a program with none where that rate
     * expects at least 20 is a fault (e^-20 by chance). One the guest scheduler gave little time
     * in a run the platform slowed (docs/linux.md) is only noted. */
    uint64_t prog_n[TB_MAX_PROCS] = {0}, all_n = 0;
    long prog_cpu[TB_MAX_PROCS], all_cpu = 0;
    bool first[TB_MAX_PROCS] = {false};
    unsigned nprog = 0;
    char counts[512] = "";
    size_t cused = 0;
    for (unsigned i = 0; i < r->nprocs; i++) {
        char prog[16];
        program_comm(r->procs[i].name, prog);
        prog_cpu[i] = -1;
        first[i] = true;
        for (unsigned k = 0; k < r->nprocs; k++) {
            char other[16];
            program_comm(r->procs[k].name, other);
            if (strcmp(prog, other))
                continue;
            first[i] = first[i] && k >= i;
            prog_n[i] += pid_samples[k];
            if (r->procs[k].cpu_ms >= 0)
                prog_cpu[i] = r->procs[k].cpu_ms;
        }
        if (!first[i])
            continue;
        nprog++;
        all_n += prog_n[i];
        if (prog_cpu[i] >= 0)
            all_cpu += prog_cpu[i];
        int w = snprintf(counts + cused, sizeof(counts) - cused, "%s%s %" PRIu64 " (%ld ms)",
                         cused ? ", " : "", prog, prog_n[i], prog_cpu[i]);
        if (w > 0 && (size_t)w < sizeof(counts) - cused)
            cused += (size_t)w;
    }
    printf("%s: samples per program (the guest's CPU time for it): %s\n", r->name, counts);
    for (unsigned i = 0; i < r->nprocs; i++) {
        if (!first[i] || prog_n[i])
            continue;
        double expect = prog_cpu[i] >= 0 && all_cpu > 0
                            ? (double)all_n * (double)prog_cpu[i] / (double)all_cpu
                            : (double)all_n / nprog;
        if (expect >= 20)
            fail_msg("%s: no sample of %s under its guest pid %d, where its %ld ms of CPU time "
                     "expect %.0f at this run's rate (%" PRIu64 " samples for %ld ms of all "
                     "programs' CPU time)",
                     r->name, r->procs[i].name, r->procs[i].pid, prog_cpu[i], expect, all_n,
                     all_cpu);
        printf("%s: no sample of %s under its guest pid %d, but its %ld ms of CPU time expect "
               "only %.1f at this run's rate: the platform slowed the run (docs/linux.md)\n",
               r->name, r->procs[i].name, r->procs[i].pid, prog_cpu[i], expect);
    }
    unsigned kthreads = 0, named = 0;
    char some[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < p.names.n; i++) {
        const struct prof_name *n = &p.names.v[i];
        if (n->tid || n->guest_id < 0)
            continue;
        named++;
        if (strstr(n->name, "kworker") || strstr(n->name, "ksoftirqd") ||
            !strcmp(n->name, "swapper"))
            kthreads++;
        int w = snprintf(some + used, sizeof(some) - used, "%s%s %" PRId64, used ? ", " : "",
                         n->name, n->guest_id);
        if (w > 0 && (size_t)w < sizeof(some) - used)
            used += (size_t)w;
        else
            some[used] = 0; /* the list is only a sample */
    }
    printf("%s: %" PRIu64 " workload samples all under the pid/tid/name their process announced "
           "(%" PRIu64 " of them with the generic identity of a stop the summary counts as unread, "
           "%" PRIu64 " such stops in all); %u processes with guest pids (%u kernel threads or "
           "idle): %s...\n",
           r->name, in_workloads, generic, unreadable, named, kthreads, some);
    /* Unread stops are rare (2 in 517,052 over 20 runs before the fix for the first user-mode
     * stop after discovery): a run with many is a regression. */
    if (unreadable > 10)
        fail_msg("%s: %" PRIu64 " stops' tasks could not be read", r->name, unreadable);
    profile_free(&p);
}

/* The workloads' known call chains (tests/linux/workloads/): each function's possible callers,
 * up to the chain's root (main, or a thread's start function). */
/* Each known function's callers. "@libc" stands for one or more frames inside glibc's
 * libc.so.6 (qsort's internals between hv_nofp's sort and its callback). Chains end where a
 * caller is not in the table: at the program's entry in glibc (__libc_start_call_main) or a
 * thread's start (clone3), which the frames below them must reach through glibc's own frames,
 * built without frame pointers: DWARF CFI (docs/cfi.md). */
static const struct {
    const char *fn, *callers[3];
} known_callers[] = {
    {"spin", {"leaf_a", "hot_b", NULL}},
    {"leaf_a", {"hot_a", NULL, NULL}},
    {"hot_a", {"main", NULL, NULL}},
    {"hot_b", {"main", NULL, NULL}},
    {"spin_left", {"left_loop", NULL, NULL}},
    {"left_loop", {"left_worker", NULL, NULL}},
    {"left_worker", {"start_thread", NULL, NULL}},
    {"spin_right", {"right_loop", NULL, NULL}},
    {"right_loop", {"right_worker", NULL, NULL}},
    {"right_worker", {"start_thread", NULL, NULL}},
    {"start_thread", {"clone3", "__clone3", NULL}},
    {"plug_spin", {"plug_loop", NULL, NULL}},
    {"plug_loop", {"plug_work", NULL, NULL}},
    {"plug_work", {"run_plugin", NULL, NULL}},
    {"run_plugin", {"main", NULL, NULL}},
    {"nofp_spin", {"nofp_middle", NULL, NULL}},
    {"nofp_middle", {"nofp_outer", "nofp_worker", NULL}},
    {"nofp_outer", {"main", NULL, NULL}},
    {"nofp_worker", {"start_thread", NULL, NULL}},
    {"nofp_key_spin", {"nofp_by_key", NULL, NULL}},
    {"nofp_by_key", {"@libc", "nofp_sort", NULL}},
    {"nofp_sort", {"main", NULL, NULL}},
    {"main", {"__libc_start_call_main", NULL, NULL}},
};

static int known_index(const char *fn)
{
    for (size_t i = 0; i < sizeof(known_callers) / sizeof(known_callers[0]); i++)
        if (!strcmp(known_callers[i].fn, fn))
            return (int)i;
    return -1;
}

static const char *frame_func(const struct profile *p, const struct prof_frame *f)
{
    if (f->loc == PROF_NONE || !p->locs.v[f->loc].resolved)
        return NULL;
    return p->funcs.v[p->locs.v[f->loc].func].name;
}

/* The file name of the module a frame's function is in, "" if none. */
static const char *frame_module(const struct profile *p, const struct prof_frame *f)
{
    if (f->loc == PROF_NONE || !p->locs.v[f->loc].resolved)
        return "";
    uint32_t m = p->funcs.v[p->locs.v[f->loc].func].module;
    if (m == PROF_NONE)
        return "";
    const char *n = p->modules.v[m].name, *slash = strrchr(n, '/');
    return slash ? slash + 1 : n;
}

/* Does the chain from frame j (a caller of known function k) continue as the table says?
 * Returns the frame index of the matched caller (after any "@libc" frames), or 0. */
static unsigned match_caller(const struct profile *p, const struct prof_frame *f, unsigned n,
                             unsigned j, int k)
{
    const char *const *c = known_callers[k].callers;
    bool libc = false;
    for (unsigned i = 0; i < 3 && c[i]; i++)
        libc |= !strcmp(c[i], "@libc");
    if (libc) {
        unsigned i = j;
        while (i < n && !strncmp(frame_module(p, &f[i]), "libc.so", 7))
            i++;
        if (i == j || i >= n)
            return 0;
        j = i;
    }
    const char *fn = frame_func(p, &f[j]);
    for (unsigned i = 0; fn && i < 3 && c[i]; i++)
        if (!strcmp(c[i], fn))
            return j;
    return 0;
}

/* The run's recording, symbolized with the workloads' own files (`--symbols` over them) and
 * glibc's separate debug file (libc6-dbg, /usr/lib/debug/.build-id). */
static void load_symbolized_with(const struct tb_result *r, struct profile *p, bool workloads)
{
    struct hv_err err = {0};
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/workloads", tb_cache());
    struct symbol_path sp;
    symbol_path_init(&sp);
    if (fxt_load_profile_file(r->rec, p, NULL, NULL, NULL, &err) < 0 ||
        (workloads && symbol_path_add_dir(&sp, dir, &err) < 0) ||
        symbol_path_add_dir(&sp, "/usr/lib/debug", &err) < 0 ||
        profile_load_symbols(p, &sp, NULL, &err) < 0 || profile_symbolize(p, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
    symbol_path_free(&sp);
}

static void load_symbolized(const struct tb_result *r, struct profile *p)
{
    load_symbolized_with(r, p, true);
}

void tb_load_judged(const struct tb_result *r, struct profile *p)
{
    profile_init(p);
    load_symbolized_with(r, p, false);
}

void tb_user_stacks(const struct tb_result *r, const char *name, uint64_t *samples,
                    uint64_t *to_main)
{
    char path[64];
    snprintf(path, sizeof(path), "/bin/%s", name);
    uint64_t lo = 0, hi = 0;
    for (unsigned m = 0; m < r->nmaps && !hi; m++)
        if (!strcmp(r->maps[m].path, path)) {
            lo = r->maps[m].lo;
            hi = r->maps[m].hi;
        }
    if (!hi) {
        /* What the console has of the program, to tell a lost line from a program that never
         * ran. */
        for (const char *l = r->console; l && *l;) {
            const char *e = strchr(l, '\n');
            int n = e ? (int)(e - l) : (int)strlen(l);
            if (memmem(l, (size_t)n, name, strlen(name)))
                print_message("%s: console: %.*s\n", r->name, n, l);
            l = e ? e + 1 : NULL;
        }
        fail_msg("%s: the guest printed no mapping of %s", r->name, path);
    }
    struct profile p;
    profile_init(&p);
    load_symbolized(r, &p);
    *samples = *to_main = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        if (s->cpl == PROF_CPL_KERNEL || !s->nframes)
            continue;
        uint64_t pc = user_pc(&p, s);
        /* The program's own functions (built with frame pointers), not the static libc's
         * startup code linked into the same mapping. */
        const char *fn = frame_func(&p, &p.frames.v[s->first]);
        if (pc < lo || pc >= hi || !fn || known_index(fn) < 0)
            continue;
        (*samples)++;
        for (uint32_t k = 0; k + 1 < s->nframes; k++) {
            const char *f = frame_func(&p, &p.frames.v[s->first + k]);
            if (f && !strcmp(f, "main")) {
                (*to_main)++;
                break;
            }
        }
    }
    profile_free(&p);
}

/* User samples under the guest pid the guest printed a mapping of `path` for, with their PC
 * in that mapping's range. */
static uint64_t samples_in_mapping(const struct tb_result *r, const struct profile *p,
                                   const char *path)
{
    uint64_t n = 0;
    for (unsigned m = 0; m < r->nmaps; m++) {
        if (strcmp(r->maps[m].path, path))
            continue;
        for (size_t i = 0; i < p->samples.n; i++) {
            const struct prof_sample *s = &p->samples.v[i];
            if (s->cpl == PROF_CPL_KERNEL || !s->nframes ||
                profile_shown_pid(p, s->pid) != (uint64_t)r->maps[m].pid)
                continue;
            uint64_t pc = user_pc(p, s);
            n += pc >= r->maps[m].lo && pc < r->maps[m].hi;
        }
    }
    return n;
}

uint64_t tb_check_user_stacks(const struct tb_result *r, double min_exact, bool workload_files)
{
    struct profile p;
    profile_init(&p);
    load_symbolized_with(r, &p, workload_files);

    /* Exact chains: from a known leaf through its callers to the root, nothing lost or added. */
    uint64_t known = 0, exact = 0, shown = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        if (s->cpl != PROF_CPL_USER || !s->nframes)
            continue;
        const struct prof_frame *f = &p.frames.v[s->first];
        const char *leaf = frame_func(&p, &f[0]);
        int k = leaf ? known_index(leaf) : -1;
        if (k < 0)
            continue;
        known++;
        bool ok = false;
        for (unsigned j = 1; j < s->nframes; j++) {
            j = match_caller(&p, f, s->nframes, j, k);
            if (!j)
                break;
            k = known_index(frame_func(&p, &f[j]));
            if (k < 0) { /* a root: the program's entry or a thread's start in glibc */
                ok = true;
                break;
            }
        }
        exact += ok;
        if (!ok && shown++ < 5) {
            printf("%s: inexact user stack:", r->name);
            for (unsigned j = 0; j < s->nframes && j < 8; j++) {
                const char *fn = frame_func(&p, &f[j]);
                printf(" %s", fn ? fn : "?");
                if (!fn)
                    printf("(0x%" PRIx64 ")", f[j].addr);
            }
            printf("\n");
        }
    }

    /* Shared objects named by their guest paths, with exported functions from guest memory. */
    bool libc_named = false;
    size_t libc_syms = 0;
    for (size_t i = 0; i < p.modules.n; i++) {
        const struct prof_module *m = &p.modules.v[i];
        if (!strcmp(m->name, "/lib/x86_64-linux-gnu/libc.so.6")) {
            libc_named = true;
            libc_syms = m->src.table ? m->src.table->n : 0;
        }
    }
    printf("%s: %" PRIu64 " of %" PRIu64 " user samples in the workloads' known functions carry "
           "the exact chain (%.2f%%); libc.so.6 %s, %zu symbols from guest memory\n",
           r->name, exact, known, known ? 100.0 * (double)exact / (double)known : 0,
           libc_named ? "named by its path" : "NOT named", libc_syms);
    if (known < 50) {
        /* The emulated platform's starvation of user-mode exits (docs/linux.md) can leave a
         * run's workload phase with almost no user samples: too few to judge chains, and no user
         * sample to start the modules' discovery from; the test sums the judged runs. */
        printf("NOTE %s: only %" PRIu64 " user samples in the workloads' functions: exactness "
               "and module names not judged on this run\n",
               r->name, known);
        profile_free(&p);
        return 0;
    }
    if ((double)exact < min_exact * (double)known)
        fail_msg("%s: %.2f%% exact user chains, %.0f%% expected", r->name,
                 100.0 * (double)exact / (double)known, 100 * min_exact);
    if (!libc_named || libc_syms < 1000)
        fail_msg("%s: libc.so.6 is not named by its path with its dynamic symbols", r->name);
    /* Executables and the library hv_dlopen loaded by their guest paths, found by the modules'
     * discovery in each address space, which user code run there starts (sampler/sources/user_modules/user_modules.c):
     * judged where the run has samples in the code range the guest printed, enough for a look
     * to follow them. A program the guest scheduler gave no time in a slowed run (CI once saw
     * hv_dlopen with 0 ms) has nothing to be found by. */
    static const char *const by_path[] = {"/bin/hv_busy", "/bin/hv_threads",
                                          "/lib/hvtest/libhvplug.so"};
    for (size_t k = 0; k < sizeof(by_path) / sizeof(by_path[0]); k++) {
        bool named = false;
        for (size_t i = 0; i < p.modules.n; i++)
            named |= !strcmp(p.modules.v[i].name, by_path[k]);
        uint64_t in_code = samples_in_mapping(r, &p, by_path[k]);
        if (!named && in_code >= 10)
            fail_msg("%s: %s is not in the recording by its path, with %" PRIu64
                     " samples in its code",
                     r->name, by_path[k], in_code);
        if (!named)
            printf("NOTE %s: %s is not named, with only %" PRIu64 " samples in its code: "
                   "not judged\n",
                   r->name, by_path[k], in_code);
    }
    profile_free(&p);
    return known;
}

static bool name_has(const char *fn, const char *part)
{
    return fn && strstr(fn, part) != NULL;
}

/* Entry code: the system-call entry and exit path (arch/x86/entry/entry_64.S: entry_SYSCALL_64
 * and its inner labels, syscall_return_via_sysret, entry_SYSRETQ_*), or an interrupt or
 * exception entry (asm_* stubs, error_entry). A sample there has the chain that ends at the
 * entry: it is in it. */
static bool syscall_entry_code(const char *fn)
{
    return fn && (!strncmp(fn, "entry_SYSCALL_64", 16) ||
                  !strcmp(fn, "syscall_return_via_sysret") || !strncmp(fn, "entry_SYSRETQ", 13));
}

static bool irq_entry_code(const char *fn)
{
    return fn && (!strncmp(fn, "asm_", 4) || !strcmp(fn, "error_entry"));
}

/* hv_syscalls' user chain from the kernel entry: a wrapper, its loop, main. */
static bool syscall_user_chain(const struct profile *p, const struct prof_frame *f, uint32_t n)
{
    if (n < 2)
        return false;
    const char *w = frame_func(p, &f[0]), *c = frame_func(p, &f[1]);
    if (!(name_has(w, "read") || name_has(w, "write") || name_has(w, "getppid")) || !c)
        return false;
    if (!strcmp(c, "main"))
        return true; /* the echo child calls read and write from main */
    if (strcmp(c, "getppid_loop") && strcmp(c, "read_loop") && strcmp(c, "pipe_loop"))
        return false;
    const char *m = n > 2 ? frame_func(p, &f[2]) : NULL;
    return m && !strcmp(m, "main");
}

uint64_t tb_check_syscall_stacks(const struct tb_result *r, double min_ok)
{
    struct profile p;
    profile_init(&p);
    load_symbolized(r, &p);
    uint64_t all = 0, syscall_ok = 0, loops = 0, irq_ok = 0, in_exec = 0, exiting = 0, shown = 0;
    uint64_t fork_ok = 0, unmapped = 0, pre_exec = 0, announcing = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        if (s->cpl != PROF_CPL_KERNEL || !s->nframes)
            continue;
        uint64_t pid = profile_shown_pid(&p, s->pid);
        bool ours = false;
        for (unsigned k = 0; k < r->nprocs; k++)
            ours |=
                (uint64_t)r->procs[k].pid == pid && !strncmp(r->procs[k].name, "hv_syscalls", 11);
        if (!ours)
            continue;
        const struct prof_frame *f = &p.frames.v[s->first];
        uint32_t nk = 0;
        bool exec = false, exit = false;
        while (nk < s->nframes && (f[nk].flags & PROF_FRAME_KERNEL)) {
            const char *fn = frame_func(&p, &f[nk++]);
            exec |= name_has(fn, "execve");
            exit |= fn && !strcmp(fn, "do_exit");
        }
        if (exec) { /* the shell that becomes hv_syscalls: its registers are busybox's */
            in_exec++;
            continue;
        }
        if (exit) { /* after exit_mm() the process has no user stack left */
            exiting++;
            continue;
        }
        /* A user PC in none of the executable mappings the process listed for itself (its
         * HVTEST map lines): the shell's fork child before it runs execve (busybox's code,
         * copy-on-write faults and all, under the pid that becomes hv_syscalls'). */
        uint64_t upc = s->nframes > nk && f[nk].loc != PROF_NONE ? p.locs.v[f[nk].loc].addr : 0;
        bool own = false;
        for (unsigned k = 0; k < r->nmaps && !own; k++)
            own = (uint64_t)r->maps[k].pid == pid && upc >= r->maps[k].lo && upc < r->maps[k].hi;
        if (upc && !own) {
            pre_exec++;
            continue;
        }
        /* A user PC in no mapping hvprof had recorded for the process when it was sampled
         * (module discovery looks at address spaces as they change, docs/user-modules.md):
         * its name cannot say whether the PC is the exact one, so it is not judged. */
        if (upc && p.locs.v[f[nk].loc].mapping == PROF_NONE) {
            unmapped++;
            continue;
        }
        all++;
        const char *outer = nk ? frame_func(&p, &f[nk - 1]) : NULL;
        bool ok = false;
        /* The user leaf is the exact PC at entry: inside the system-call wrapper, named. */
        bool named = s->nframes > nk && frame_func(&p, &f[nk]) != NULL;
        if (syscall_entry_code(outer)) {
            ok = named && ++syscall_ok;
            loops += syscall_user_chain(&p, f + nk, s->nframes - nk);
            /* Writing its announcement (HVTEST map lines) to the serial console: slow on the
             * emulated platform, up to 340 samples of the echo child in a 4-vCPU run. */
            for (uint32_t j = nk; j < s->nframes; j++)
                if (name_has(frame_func(&p, &f[j]), "hv_announce")) {
                    announcing++;
                    break;
                }
        } else if (irq_entry_code(outer)) {
            ok = named && ++irq_ok; /* the interrupted user PC, named */
        } else if (outer && !strcmp(outer, "ret_from_fork")) {
            /* A forked child before its first return to user space: its kernel stack starts at
             * ret_from_fork, whose saved registers are the user state it will resume in (the
             * fork's return in libc): as whole as a stack can be. One run of generic-nokaslr
             * had 82.8 % without these, its children page-faulting in schedule_tail. */
            ok = named && ++fork_ok;
        }
        if (!ok && shown++ < 5) {
            printf("%s: hv_syscalls kernel sample:", r->name);
            for (uint32_t j = 0; j < s->nframes && j < 24; j++) {
                /* Unnamed: the module and offset hvprof's fallback gives, else "?". */
                const char *fn = frame_func(&p, &f[j]);
                if (!fn && f[j].loc != PROF_NONE)
                    fn = p.funcs.v[p.locs.v[f[j].loc].func].name;
                printf(" %s%s", j == nk ? "| " : "", fn ? fn : "?");
            }
            printf("\n");
        }
    }
    printf("%s: %" PRIu64 " kernel samples of hv_syscalls (%" PRIu64 " more in its exec, %" PRIu64
           " in its exit): %" PRIu64
           " (%.1f%%) from the system-call entry with the user PC at entry named (%" PRIu64
           " of them in a loop's wrapper with the loop and main above it, %" PRIu64
           " in its announcement), %" PRIu64
           " from an interrupt or exception entry with the interrupted user PC named, %" PRIu64
           " in a forked child from ret_from_fork with the user PC it resumes at named\n",
           r->name, all, in_exec, exiting, syscall_ok,
           all ? 100.0 * (double)syscall_ok / (double)all : 0, loops, announcing, irq_ok, fork_ok);
    profile_free(&p);
    if (unmapped || pre_exec)
        printf("%s: not judged: %" PRIu64 " more with the user PC in no mapping recorded yet, "
               "%" PRIu64 " in the shell's fork child before its execve\n",
               r->name, unmapped, pre_exec);
    /* Most of them unjudged would be module discovery missing the process: a fault. */
    if (unmapped * 4 > all + unmapped)
        fail_msg("%s: %" PRIu64 " of %" PRIu64 " hv_syscalls kernel samples have their user PC "
                 "in no recorded mapping",
                 r->name, unmapped, all + unmapped);
    if (all < 50) {
        printf("NOTE %s: only %" PRIu64 " kernel samples of hv_syscalls: not judged\n", r->name,
               all);
        return 0;
    }
    /* Most of the program's time is its loops (after its announcement): their chains must be
     * whole too. */
    if (loops * 2 < syscall_ok - announcing)
        fail_msg("%s: only %" PRIu64 " of %" PRIu64 " system-call samples outside the "
                 "announcement (%" PRIu64 ") carry the loops' exact user chains",
                 r->name, loops, syscall_ok - announcing, announcing);
    if ((double)(syscall_ok + irq_ok + fork_ok) < min_ok * (double)all)
        fail_msg("%s: %.1f%% of hv_syscalls' kernel samples end at their entry with the user "
                 "stack from there, %.0f%% expected",
                 r->name, 100.0 * (double)(syscall_ok + irq_ok + fork_ok) / (double)all,
                 100 * min_ok);
    return all;
}

char *tb_beside(const struct tb_result *r, const char *file)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%.*s/%s", (int)(strrchr(r->rec, '/') - r->rec), r->rec, file);
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 16384);
    assert_non_null(buf);
    if (f) {
        size_t n = fread(buf, 1, 16383, f);
        buf[n] = 0;
        fclose(f);
    }
    return buf;
}
