/* A busy Linux guest's churn (docs/identities.md): the shell starts thousands of short-lived
 * processes (hv_blip; hvtest.churn=N: 5,000 in the full matrix, 1,500 in CI's) one after another
 * beside hv_busy, through identity tables of 1,024 processes. The
 * guest kernel's task list must end each one's identity and give its slot back:
 * - no lookup finds a table full and no sample is unattributed; identities were ended;
 * - every sample of hv_busy is under its own pid and named, from the first to the last;
 * - every hv_blip sample is under a process named hv_blip whose pid is no other's, and the
 *   processes sampled are many (each its own, not a few merged). */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/fxt_load.h"
#include "report/profile.h"
#include "tests/linux/testbed.h"

struct totals {
    unsigned runs;
};

static const char *frame_func(const struct profile *p, const struct prof_frame *f)
{
    if (f->loc == PROF_NONE || !p->locs.v[f->loc].resolved)
        return "";
    return p->funcs.v[p->locs.v[f->loc].func].name;
}

/* Whether any of the sample's frames is one of the program's own functions. */
static bool in(const struct profile *p, const struct prof_sample *s, const char *const *fns)
{
    for (uint32_t k = 0; k < s->nframes; k++) {
        const char *f = frame_func(p, &p->frames.v[s->first + k]);
        for (const char *const *n = fns; *n; n++)
            if (!strcmp(f, *n))
                return true;
    }
    return false;
}

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    struct totals *t = ctx;
    tb_check_boot(r, s);
    const char *want = strstr(s->cmdline, "hvtest.churn=");
    int churn = want ? atoi(want + strlen("hvtest.churn=")) : 0;
    assert_true(churn > 1024); /* past the tables' size */
    const char *cl = strstr(r->console, "HVTEST churn started=");
    if (!cl || atoi(cl + strlen("HVTEST churn started=")) < churn)
        fail_msg("%s: the guest did not start its %d processes:\n%s", r->name, churn, r->console);
    double from = 0, to = 0;
    if (sscanf(cl, "HVTEST churn started=%*d from=%lf to=%lf", &from, &to) == 2)
        printf("%s: %d processes in %.1f s of the guest's time\n", r->name, churn, to - from);
    if (!strstr(r->summary, "guest identities: 0 table-full lookups") ||
        strstr(r->summary, "stops under the identity"))
        fail_msg("%s: the identity tables filled:\n%s", r->name, r->summary);
    const char *ended = strstr(r->summary, "guest identities ended and given back");
    if (!ended)
        fail_msg("%s: no identity was ended:\n%s", r->name, r->summary);
    printf("%s: %.*s\n", r->name, (int)strcspn(ended, "\n"), ended);
    /* The guest's list ends what is gone, not what runs: no process it still had came back. */
    const char *back = strstr(ended, "came back");
    if (back && back < ended + strcspn(ended, "\n"))
        fail_msg("%s: ended identities of processes still running", r->name);
    int busy_pid = 0;
    for (unsigned k = 0; k < r->nprocs; k++)
        if (!strcmp(r->procs[k].name, "hv_busy"))
            busy_pid = r->procs[k].pid;
    if (!busy_pid)
        fail_msg("%s: hv_busy did not announce itself", r->name);

    struct profile p;
    profile_init(&p);
    tb_load_profile(r, &p);
    static const char *const busy_fns[] = {"hot_a", "hot_b", "leaf_a", NULL};
    static const char *const blip_fns[] = {"blip_work", "blip_spin", NULL};
    uint64_t busy = 0, busy_wrong = 0, blip = 0, blip_wrong = 0;
    uint64_t first_ts = UINT64_MAX, last_ts = 0;
    /* The guest pids of hv_blip's samples: distinct ones, and none of another program's. */
    size_t cap = 1u << 16, nb = 0;
    uint64_t *blip_pids = calloc(cap, sizeof(*blip_pids));
    assert_non_null(blip_pids);
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        if (!sm->nframes)
            continue;
        uint64_t gpid = profile_shown_pid(&p, sm->pid);
        const char *pname = profile_process_name(&p, sm->pid);
        if (sm->cpl == 3 && in(&p, sm, busy_fns)) {
            busy++;
            busy_wrong += gpid != (uint64_t)busy_pid || strcmp(pname, "hv_busy");
            first_ts = sm->ts < first_ts ? sm->ts : first_ts;
            last_ts = sm->ts > last_ts ? sm->ts : last_ts;
        } else if (sm->cpl == 3 && in(&p, sm, blip_fns)) {
            blip++;
            if (strcmp(pname, "hv_blip") || gpid == (uint64_t)busy_pid) {
                blip_wrong++;
                continue;
            }
            bool seen = false;
            for (size_t k = 0; k < nb && !seen; k++)
                seen = blip_pids[k] == gpid;
            if (!seen && nb < cap)
                blip_pids[nb++] = gpid;
        }
    }
    double span = p.ticks_per_sec ? (double)(last_ts - first_ts) / (double)p.ticks_per_sec : 0;
    printf("%s: hv_busy %" PRIu64 " user samples over %.1f s (%" PRIu64
           " not under its pid and name); hv_blip %" PRIu64 " in %zu processes (%" PRIu64
           " not under a hv_blip of its own)\n",
           r->name, busy, span, busy_wrong, blip, nb, blip_wrong);
    if (busy < 500 || busy_wrong)
        fail_msg("%s: hv_busy's samples are not all its own", r->name);
    if (blip < 200 || blip_wrong * 1000 > blip)
        fail_msg("%s: hv_blip's samples are not under their own processes", r->name);
    if (nb * 4 < blip / 4) /* ~2 ms each at 1 kHz: one or two samples a process */
        fail_msg("%s: hv_blip's samples fall in too few processes (merged identities?)", r->name);
    free(blip_pids);
    profile_free(&p);
    t->runs++;
}

static void test_churn(void **state)
{
    (void)state;
    char out[4096];
    struct totals t = {0};
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("churn", 1, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, &t);
    assert_true(t.runs > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_churn)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
