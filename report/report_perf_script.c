/* `perf script` text, the layout Linux perf 6.1's `perf script` prints for a sample with a
 * callchain (tools/perf/builtin-script.c, perf_sample__fprintf_start and the callchain printer),
 * which FlameGraph's stackcollapse-perf.pl, speedscope, Firefox Profiler and Perfetto import:
 *
 *     comm %5d/%-5d [cpu] %5lu.%06lu: %10period event:    comm unpadded: perf prints it with
 *     \t%16addr sym+0xoff (dso)                          "%s " when a callchain follows, and
 *     (empty line)                                        importers need a non-space first
 *
 * one line per frame, leaf first. Samples come in time order, as perf sorts them (the recording
 * holds them per vCPU stream). comm is the thread's name, or its process's when the recorder
 * only had a synthetic one ("t12 fs=0x..."): perf shows the task's comm, and for a program
 * that is its name. pid/tid are the guest's own when recorded (a Linux guest's tgid/pid),
 * else the recording's koids. Unresolved frames print perf's "[unknown]" symbol; kernel frames
 * perf's
 * "[kernel.kallsyms]" dso. The vCPU stands in for the CPU. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report.h"

/* The recorder names threads it knows nothing about "t<n> fs=0x<FS base>" (sampler/drain.c). */
static bool synthetic_thread_name(const char *n)
{
    unsigned id;
    unsigned long long fs;
    int end = 0;
    return sscanf(n, "t%u fs=0x%llx%n", &id, &fs, &end) == 2 && n[end] == 0;
}

static void comm_of(const struct profile *p, const struct prof_sample *s, char *comm, size_t len)
{
    const char *tn = profile_thread_name(p, s->pid, s->tid);
    if (synthetic_thread_name(tn))
        tn = profile_process_name(p, s->pid);
    /* Parsers split the header on spaces: a comm cannot contain any. */
    size_t k = 0;
    for (; tn[k] && k + 1 < len; k++)
        comm[k] = (unsigned char)tn[k] <= ' ' ? '_' : tn[k];
    comm[k] = 0;
}

static int by_time(const void *a, const void *b, void *ctx)
{
    const struct profile *p = ctx;
    const struct prof_sample *x = &p->samples.v[*(const uint32_t *)a];
    const struct prof_sample *y = &p->samples.v[*(const uint32_t *)b];
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1; /* stable */
}

int report_write_perf_script(const struct profile *p, const struct report_opts *o, FILE *out,
                             struct hv_err *err)
{
    const char *event = o->event_name ? o->event_name : "cpu-clock";
    uint64_t tps = p->ticks_per_sec ? p->ticks_per_sec : 1000000000ull;
    uint32_t *order = malloc((p->samples.n ? p->samples.n : 1) * sizeof(*order));
    if (!order)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < p->samples.n; i++)
        order[i] = (uint32_t)i;
    if (p->samples.n > 1)
        qsort_r(order, p->samples.n, sizeof(*order), by_time, (void *)p);
    char comm[64], name[SYMTAB_MAX_NAME_LEN + 64];
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[order[i]];
        comm_of(p, s, comm, sizeof(comm));
        uint64_t sec = s->ts / tps;
        uint64_t usec = (uint64_t)((double)(s->ts % tps) * 1e6 / (double)tps);
        /* perf's period: nanoseconds (an off-CPU record's time, as perf's offcpu-time). */
        uint64_t period = p->weight_us   ? s->weight * 1000
                          : p->period_ns ? p->period_ns * s->weight
                                         : s->weight;
        const struct prof_group *g = o->cgroup ? profile_sample_group(p, s) : NULL;
        fprintf(out,
                "%s %5" PRIu64 "/%-5" PRIu64 " [%03u] %5" PRIu64 ".%06" PRIu64 ": %10" PRIu64
                " %s: %s%s\n",
                comm, profile_shown_pid(p, s->pid), profile_shown_tid(p, s->pid, s->tid), s->vcpu,
                sec, usec, period, event, o->cgroup ? (g ? g->path : "unknown") : "",
                o->cgroup ? " " : "");
        for (uint32_t f = 0; f < s->nframes; f++) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            const char *dso = "[unknown]";
            uint64_t off = 0, addr = fr->addr;
            bool resolved = false;
            if (fr->loc < p->locs.n) {
                const struct prof_loc *l = &p->locs.v[fr->loc];
                addr = profile_loc_address(p, l);
                if (l->mapping != PROF_NONE) {
                    const struct prof_module *m = &p->modules.v[p->mappings.v[l->mapping].module];
                    dso = m->kernel ? "[kernel.kallsyms]" : m->name;
                } else if (p->funcs.v[l->func].runtime && p->funcs.v[l->func].module != PROF_NONE) {
                    dso = p->modules.v[p->funcs.v[l->func].module].name; /* its source file */
                }
                off = l->func_off;
                resolved = l->resolved;
            }
            if (resolved)
                fprintf(out, "\t%16" PRIx64 " %s+0x%" PRIx64 " (%s)\n", addr,
                        report_frame_name(p, fr, name, sizeof(name)), off, dso);
            else
                fprintf(out, "\t%16" PRIx64 " [unknown] (%s)\n", addr, dso);
            /* perf script -F +srcline: "  file.c:12" under the frame (map__fprintf_srcline's
             * prefix; the file's base name, perf's default without --full-source-path). */
            if (o->srcline && fr->loc < p->locs.n && p->locs.v[fr->loc].line) {
                const struct prof_func *fn = &p->funcs.v[p->locs.v[fr->loc].func];
                const char *b = fn->file ? strrchr(fn->file, '/') : NULL;
                if (fn->file)
                    fprintf(out, "  %s:%u\n", b ? b + 1 : fn->file, p->locs.v[fr->loc].line);
            }
        }
        fputc('\n', out);
    }
    free(order);
    return 0;
}
