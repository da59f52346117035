/* bench_exit_events: what `record --events exits` costs per exit (docs/exits.md). The test
 * guest's hostile_pio writes port 0x80 from its kernel as fast as it can for S seconds: every
 * write is an exit the VMM handles in user space. Side by side, rounds interleaved, the same
 * recording at 250 Hz:
 *   plain:   no exit events (the samples only);
 *   every:   --events exits --exit-stacks-every 1 (each exit recorded with its stacks);
 *   budget:  --events exits (stacks while their walks take at most 5 % of the vCPU's time).
 * Per kind: the guest's writes per second (its own count over its own clock), hvprof's own time
 * per recorded event (the summary's, timed at the exit), and the cost per exit as the guest
 * sees it, 1/rate(kind) - 1/rate(plain) (the guest counts its writes in batches of 1000 until its
 * clock reaches S). Numbers only, never a failure on a number.
 * Usage: bench_exit_events [rounds] [seconds]   (default 5 rounds of 2 s) */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "tests/integration/record_run.h"

#define MAX_ROUNDS 32

enum kind { PLAIN, EVERY, BUDGET, KINDS };
static const char *const kind_name[KINDS] = {"plain", "every", "budget"};

struct point {
    double writes_per_s; /* the guest's */
    double us_each;      /* hvprof's time per recorded event (0 for plain) */
    double stacks_pct;   /* events with stacks */
};

/* One run; false if it did not give its numbers. */
static bool run(enum kind k, const char *cmdline, int seconds, struct point *p)
{
    struct record_result r;
    int rc;
    if (k == PLAIN)
        rc = record_run(&r, 0, 0, 0, "--vcpus", "1", "--hz", "250", "--buffer", "16M", "--cmdline",
                        cmdline, NULL);
    else if (k == EVERY)
        rc = record_run(&r, 0, 0, 0, "--vcpus", "1", "--hz", "250", "--buffer", "16M", "--events",
                        "exits", "--exit-stacks-every", "1", "--cmdline", cmdline, NULL);
    else
        rc = record_run(&r, 0, 0, 0, "--vcpus", "1", "--hz", "250", "--buffer", "16M", "--events",
                        "exits", "--cmdline", cmdline, NULL);
    if (rc != 0 || r.status != 0) {
        fprintf(stderr, "bench_exit_events: %s run failed (status %d)\n", kind_name[k],
                rc ? rc : r.status);
        return false;
    }
    bool ok = false;
    const char *g = strstr(r.console, "hostile_pio: pid=");
    const char *o = g ? strstr(g, "kernel_outs=") : NULL;
    uint64_t outs;
    /* It writes in batches of 1000 until its own clock reaches `seconds`. */
    if (o && sscanf(o, "kernel_outs=%" SCNu64, &outs) == 1) {
        p->writes_per_s = (double)outs / seconds;
        p->us_each = p->stacks_pct = 0;
        ok = true;
        const char *l = strstr(r.summary, "  exit events: ");
        uint64_t events, stacks;
        const char *us = l ? strstr(l, " us of hvprof's time each") : NULL;
        if (k != PLAIN) {
            ok = l && us &&
                 sscanf(l, "  exit events: %" SCNu64 " recorded, %" SCNu64, &events, &stacks) == 2;
            if (ok) {
                const char *b = us;
                while (b > l && b[-1] != ' ')
                    b--;
                p->us_each = atof(b);
                p->stacks_pct = events ? 100.0 * (double)stacks / (double)events : 0;
            }
        }
    }
    if (!ok)
        fprintf(stderr, "bench_exit_events: %s: no numbers in the console or summary:\n%s\n%s\n",
                kind_name[k], r.console, r.summary);
    remove(r.out_path);
    remove(r.console_path);
    record_result_free(&r);
    return ok;
}

static double median_of(struct point *v, size_t n, size_t field)
{
    double x[MAX_ROUNDS];
    for (size_t i = 0; i < n; i++)
        x[i] = *(double *)((char *)&v[i] + field);
    qsort(x, n, sizeof(x[0]), cmp_double);
    return n ? (n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2) : 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    int seconds = argc > 2 ? atoi(argv[2]) : 2;
    if (rounds < 1 || rounds > MAX_ROUNDS || seconds < 1 || seconds > 60) {
        fprintf(stderr, "usage: bench_exit_events [rounds 1..%d] [seconds 1..60]\n", MAX_ROUNDS);
        return 2;
    }
    char cmdline[64];
    snprintf(cmdline, sizeof(cmdline), "progs=hostile_pio seconds=%d", seconds);
    static struct point pts[KINDS][MAX_ROUNDS];
    size_t n[KINDS] = {0};
    for (int i = 0; i < rounds; i++)
        for (int k = 0; k < KINDS; k++)
            if (run((enum kind)k, cmdline, seconds, &pts[k][n[k]]))
                n[k]++;
    if (!n[PLAIN]) {
        fprintf(stderr, "bench_exit_events: no plain run gave numbers\n");
        return 1;
    }
    double base = median_of(pts[PLAIN], n[PLAIN], offsetof(struct point, writes_per_s));
    printf("exit events: hostile_pio (port 0x80 writes from the guest kernel), %d s runs at "
           "250 Hz, 1 vCPU, medians of %d interleaved rounds\n",
           seconds, rounds);
    for (int k = 0; k < KINDS; k++) {
        if (!n[k])
            continue;
        double rate = median_of(pts[k], n[k], offsetof(struct point, writes_per_s));
        double us = median_of(pts[k], n[k], offsetof(struct point, us_each));
        double st = median_of(pts[k], n[k], offsetof(struct point, stacks_pct));
        printf("  %-6s %10.0f exits/s  (%.3fx plain)", kind_name[k], rate, rate / base);
        if (k != PLAIN)
            printf("  +%.2f us per exit as the guest sees it; hvprof %.2f us per event, %.0f%% "
                   "with stacks",
                   1e6 / rate - 1e6 / base, us, st);
        printf("\n");
    }
    return 0;
}
