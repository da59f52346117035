/* The `top` table, like `perf report --children`: per function the share of samples in which it
 * is on the stack (total) and at the leaf (self), then totals per guest process and per vCPU. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "schema/schema.h"

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* One container's share (the samples of every group whose path names it), "-" the rest. */
struct ct_row {
    const struct prof_group *g; /* the first group of the container; NULL: no container */
    uint64_t weight, kernel;
    uint64_t pids[3]; /* its first processes, for the Processes column */
    unsigned npids;
};

static int by_weight(const void *a, const void *b)
{
    const struct ct_row *x = a, *y = b;
    return x->weight != y->weight ? (x->weight > y->weight ? -1 : 1) : 0;
}

/* The per-container table (docs/containers.md), when some sample was in a container. */
static int write_containers(const struct profile *p, uint64_t total, const char *unit, FILE *out)
{
    bool any = false;
    for (size_t i = 0; i < p->groups.n && !any; i++)
        any = p->groups.v[i].ct.id[0] != 0;
    if (!any)
        return 0;
    struct ct_row *rows = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        const struct prof_group *g = profile_sample_group(p, s);
        if (g && !g->ct.id[0])
            g = NULL;
        size_t r = 0;
        while (r < n &&
               !(rows[r].g == g || (g && rows[r].g && rows[r].g->ct.engine == g->ct.engine &&
                                    !strcmp(rows[r].g->ct.id, g->ct.id))))
            r++;
        if (r == n) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                struct ct_row *nr = realloc(rows, nc * sizeof(*rows));
                if (!nr) {
                    free(rows);
                    return -1;
                }
                rows = nr;
                cap = nc;
            }
            rows[n++] = (struct ct_row){.g = g};
        }
        rows[r].weight += s->weight;
        rows[r].kernel += s->cpl == PROF_CPL_KERNEL ? s->weight : 0;
        bool have = false;
        for (unsigned k = 0; k < rows[r].npids; k++)
            have |= rows[r].pids[k] == s->pid;
        if (!have && rows[r].npids < 3)
            rows[r].pids[rows[r].npids++] = s->pid;
    }
    qsort(rows, n, sizeof(*rows), by_weight);
    fprintf(out, "\n# Per container\n# %8s %10s %8s  %-14s %-16s %s\n", "Percent", unit, "Kernel",
            "Container", "Engine", "Processes");
    for (size_t r = 0; r < n; r++) {
        char id[CONTAINER_ID_MAX + 1];
        fprintf(out, "  %7.2f%% %10" PRIu64 " %7.2f%%  %-14s %-16s ", pct(rows[r].weight, total),
                rows[r].weight, pct(rows[r].kernel, rows[r].weight),
                rows[r].g ? profile_group_container(rows[r].g, id, sizeof(id)) : "-",
                rows[r].g ? container_engine_name(rows[r].g->ct.engine) : "(none)");
        for (unsigned k = 0; k < rows[r].npids; k++)
            fprintf(out, "%s%s", k ? ", " : "", profile_process_name(p, rows[r].pids[k]));
        fputc('\n', out);
    }
    free(rows);
    return 0;
}

int report_write_top(const struct profile *p, const struct report_opts *o, FILE *out,
                     struct hv_err *err)
{
    unsigned limit = o->top_limit ? o->top_limit : 50;
    if (o->header && report_write_header(p, out, err) < 0)
        return -1;
    if (p->exits && report_write_exit_table(p, out, err) < 0)
        return -1;
    uint64_t total = profile_total_weight(p);
    struct report_group *procs = NULL, *vcpus = NULL;
    size_t nprocs = 0, nvcpus = 0;
    int rc = -1;
    if (report_group_by(p, false, &procs, &nprocs) < 0 ||
        report_group_by(p, true, &vcpus, &nvcpus) < 0)
        goto oom;

    /* Off-CPU and wall-clock profiles weigh in microseconds (profile.weight_us). */
    const char *unit = p->weight_us ? "Time(us)" : "Samples";
    if (p->weight_us)
        fprintf(out, "# hvprof report: %.6f s %s, %zu process%s, %zu vCPU%s", (double)total / 1e6,
                p->off_cpu ? "off-CPU (the threads' time off their CPUs)"
                           : "of wall-clock time (on-CPU samples and off-CPU time)",
                nprocs, nprocs == 1 ? "" : "es", nvcpus, nvcpus == 1 ? "" : "s");
    else
        fprintf(out, "# hvprof report: %" PRIu64 " sample%s, %zu process%s, %zu vCPU%s", total,
                total == 1 ? "" : "s", nprocs, nprocs == 1 ? "" : "es", nvcpus,
                nvcpus == 1 ? "" : "s");
    if (p->period_ns)
        fprintf(out, ", period %" PRIu64 " ns", p->period_ns);
    fprintf(out, ", %.3f s", report_duration_s(p));
    if (p->stacks_cut)
        fprintf(out,
                "\n# %" PRIu64 " stack walks were cut at --max-depth or the record size: their "
                "outermost frames are missing (record with a larger --max-depth)",
                p->stacks_cut);
    for (int half = 1; half >= 0; half--) {
        const uint64_t *c = p->callers[half];
        uint64_t patterns = c[HVFXT_CALLER_ENTRY] + c[HVFXT_CALLER_ENTRY_ENDBR] +
                            c[HVFXT_CALLER_AFTER_PUSH] + c[HVFXT_CALLER_RET] +
                            c[HVFXT_CALLER_AFTER_POP];
        if (c[HVFXT_CALLER_ORC])
            fprintf(out,
                    "\n# %s walks: every frame from the guest kernel's ORC tables in %" PRIu64
                    " (docs/orc.md)",
                    half ? "user" : "kernel", c[HVFXT_CALLER_ORC]);
        if (c[HVFXT_CALLER_CFI])
            fprintf(out,
                    "\n# %s walks: the interrupted function's caller from the binary's DWARF "
                    "call-frame information in %" PRIu64 " (docs/cfi.md)",
                    half ? "user" : "kernel", c[HVFXT_CALLER_CFI]);
        if (patterns + c[HVFXT_CALLER_FRAMELESS])
            fprintf(out,
                    "\n# %s walks: the interrupted function's caller read from the frame chain in "
                    "%" PRIu64 ", at a prologue/epilogue in %" PRIu64
                    ", by decoding a frameless function to its ret in %" PRIu64
                    " (docs/guestwalk.md)",
                    half ? "user" : "kernel", c[HVFXT_CALLER_CHAIN], patterns,
                    c[HVFXT_CALLER_FRAMELESS]);
    }
    fputs("\n#\n", out);
    struct report_sort_opts so = {.sort = o->sort,
                                  .no_children = o->no_children,
                                  .percent_limit = o->percent_limit,
                                  .limit = limit};
    if (report_sort_write(p, &so, out, err) < 0)
        goto done;
    /* A --sort of the user's is the whole table, as perf's is. */
    if (o->sort.n) {
        rc = 0;
        goto done;
    }
    fprintf(out, "\n# Per process\n# %8s %10s %8s  %-12s %s\n", "Percent", unit, "Kernel", "PID",
            "Command");
    for (size_t i = 0; i < nprocs; i++)
        fprintf(out, "  %7.2f%% %10" PRIu64 " %7.2f%%  %-12" PRIu64 " %s\n",
                pct(procs[i].weight, total), procs[i].weight, pct(procs[i].kernel, procs[i].weight),
                profile_shown_pid(p, procs[i].key), profile_process_name(p, procs[i].key));
    if (write_containers(p, total, unit, out) < 0)
        goto oom;
    fprintf(out, "\n# Per vCPU%s\n# %8s %10s %8s  %s\n",
            p->weight_us ? " (off-CPU time: the CPU a thread last ran on)" : "", "Percent", unit,
            "Kernel", "vCPU");
    for (size_t i = 0; i < nvcpus; i++)
        fprintf(out, "  %7.2f%% %10" PRIu64 " %7.2f%%  %" PRIu64 "\n", pct(vcpus[i].weight, total),
                vcpus[i].weight, pct(vcpus[i].kernel, vcpus[i].weight), vcpus[i].key);
    rc = 0;
    goto done;
oom:
    hv_errk(err, HV_ERR_NO_MEMORY, "top: out of memory");
done:
    free(procs);
    free(vcpus);
    return rc;
}
