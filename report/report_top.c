/* The `top` table, like `perf report --children`: per function the share of samples in which it
 * is on the stack (total) and at the leaf (self), then totals per guest process and per vCPU. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "schema/schema.h"

struct row {
    uint32_t func;
    uint64_t self, total;
    bool kernel;
};

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    return x->func < y->func ? -1 : x->func > y->func;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

int report_write_top(const struct profile *p, const struct report_opts *o, FILE *out,
                     struct hv_err *err)
{
    unsigned limit = o->top_limit ? o->top_limit : 50;
    if (p->exits && report_write_exit_table(p, out, err) < 0)
        return -1;
    uint64_t total = profile_total_weight(p);
    size_t nf = p->funcs.n;
    struct row *rows = calloc(nf ? nf : 1, sizeof(*rows));
    struct report_func_weight *w = report_func_weights(p);
    struct report_group *procs = NULL, *vcpus = NULL;
    size_t nprocs = 0, nvcpus = 0;
    int rc = -1;
    if (!rows || !w)
        goto oom;
    for (size_t i = 0; i < nf; i++)
        rows[i] = (struct row){(uint32_t)i, w[i].self, w[i].total, w[i].kernel};
    if (report_group_by(p, false, &procs, &nprocs) < 0 ||
        report_group_by(p, true, &vcpus, &nvcpus) < 0)
        goto oom;
    /* qsort with a NULL array is undefined even for 0 elements (C11 7.22.5): no samples, no
     * groups. */
    if (nf > 1)
        qsort(rows, nf, sizeof(*rows), cmp_row);

    /* Off-CPU and wall-clock profiles weigh in microseconds (profile.weight_us). */
    const char *unit = p->weight_us ? "Time(us)" : "Samples";
    if (p->weight_us)
        fprintf(out, "# hvprof report: %.6f s %s, %zu processes, %zu vCPUs", (double)total / 1e6,
                p->off_cpu ? "off-CPU (the threads' time off their CPUs)"
                           : "of wall-clock time (on-CPU samples and off-CPU time)",
                nprocs, nvcpus);
    else
        fprintf(out, "# hvprof report: %" PRIu64 " samples, %zu processes, %zu vCPUs", total,
                nprocs, nvcpus);
    if (p->period_ns)
        fprintf(out, ", period %" PRIu64 " ns", p->period_ns);
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
    fprintf(out, "\n#\n# %8s %8s %10s  %-24s %s\n", "Children", "Self", unit, "Shared Object",
            "Symbol");
    for (size_t i = 0; i < nf && i < limit; i++) {
        const struct row *r = &rows[i];
        if (!r->total)
            break;
        const struct prof_func *fn = &p->funcs.v[r->func];
        const char *dso =
            fn->module == PROF_NONE ? "[unknown]" : profile_module_basename(p, fn->module);
        fprintf(out, "  %7.2f%% %7.2f%% %10" PRIu64 "  %-24s [%c] %s\n", pct(r->total, total),
                pct(r->self, total), r->self, dso, r->kernel ? 'k' : '.', fn->name);
    }
    fprintf(out, "\n# Per process\n# %8s %10s %8s  %-12s %s\n", "Percent", unit, "Kernel", "PID",
            "Command");
    for (size_t i = 0; i < nprocs; i++)
        fprintf(out, "  %7.2f%% %10" PRIu64 " %7.2f%%  %-12" PRIu64 " %s\n",
                pct(procs[i].weight, total), procs[i].weight, pct(procs[i].kernel, procs[i].weight),
                profile_shown_pid(p, procs[i].key), profile_process_name(p, procs[i].key));
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
    free(rows);
    free(w);
    free(procs);
    free(vcpus);
    return rc;
}
