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
 * clock reaches S). Then, where perf can count KVM's tracepoints, one more run under `perf stat`:
 * the kernel's count of the exits it handed to the VMM beside hvprof's own. Numbers only, never a
 * failure on a number. Usage: bench_exit_events [rounds] [seconds]   (default 5 rounds of 2 s) */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "tests/common/run_cmd.h"
#include "tests/integration/guest_run.h"
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

/* The value of `event` in perf stat's CSV output (-x,: "count,unit,event,..."), or -1. */
static long long perf_count(const char *csv, const char *event)
{
    for (const char *l = csv; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        long long v;
        char name[64];
        if (sscanf(l, "%lld,,%63[^,]", &v, name) == 2 && !strcmp(name, event))
            return v;
    }
    return -1;
}

/* hvprof's own exit accounting beside the kernel's, in one run: `perf stat` counts KVM's
 * tracepoints for the VMM's process while it records with exit events. kvm:kvm_pio fires for
 * each port access KVM hands to the VMM; kvm:kvm_userspace_exit for each return of KVM_RUN to
 * it (the port exits and the timer's kicks). `perf kvm stat` reads kvm:kvm_exit for its exit
 * reasons, which this host's KVM (PVM) does not emit: hence the tracepoints themselves. */
static void perf_check(const char *cmdline)
{
    static char out[1 << 16], csv[4096];
    char path[] = "/tmp/hvprof-bench-perf-XXXXXX", cmd[2048];
    int fd = mkstemp(path);
    if (fd < 0)
        return;
    close(fd);
    snprintf(cmd, sizeof(cmd),
             "perf stat -x, -o %s -e kvm:kvm_pio,kvm:kvm_userspace_exit -- %s record -o %s.fxt "
             "--guest demo --vcpus 1 --hz 250 --buffer 16M --events exits --cmdline '%s'",
             path, guest_build_path("cli/hvprof"), path, cmdline);
    int rc = hv_run_cmd(cmd, out, sizeof(out));
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(csv, 1, sizeof(csv) - 1, f) : 0;
    csv[n] = 0;
    if (f)
        fclose(f);
    remove(path);
    strncat(path, ".fxt", sizeof(path) - strlen(path) - 1);
    remove(path);
    long long pio = perf_count(csv, "kvm:kvm_pio"), ue = perf_count(csv, "kvm:kvm_userspace_exit");
    const char *h = strstr(out, "the VMM handled ");
    const char *t = strstr(out, " timer exits, ");
    uint64_t in, outs, timer = 0;
    const char *bol = t;
    while (bol && bol > out && bol[-1] != '\n')
        bol--;
    if (rc != 0 || pio < 0 || ue < 0 || !h || !t ||
        sscanf(h, "the VMM handled %" SCNu64 " pio in, %" SCNu64, &in, &outs) != 2 ||
        sscanf(bol, " %" SCNu64, &timer) != 1) {
        printf("  perf: no comparison (perf stat could not count KVM's tracepoints here)\n");
        return;
    }
    printf("  perf stat, the same run: kvm:kvm_pio %lld, hvprof's port exits %" PRIu64
           " (%+.3f%%); kvm:kvm_userspace_exit %lld, hvprof's port exits + timer exits %" PRIu64
           " (%+.3f%%)\n",
           pio, in + outs, 100.0 * ((double)(in + outs) - (double)pio) / (double)pio, ue,
           in + outs + timer, 100.0 * ((double)(in + outs + timer) - (double)ue) / (double)ue);
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
    perf_check(cmdline);
    return 0;
}
