/* `perf script` text, the layout `perf script -F +pid` prints for a sample with a callchain
 * (perf-script(1); Firefox Profiler, speedscope and Perfetto's "perf textual format"
 * import it):
 *
 *     comm  pid/tid [cpu] sec.usec:     period event:
 *     \t    addr sym+0xoff (dso)        one line per frame, leaf first
 *     (empty line)
 *
 * The vCPU stands in for the CPU. Unresolved frames print their `module+0xoff` or raw-address
 * name and perf's "[unknown]" dso. */
#include <inttypes.h>

#include "report/report.h"

int report_write_perf_script(const struct profile *p, const struct report_opts *o, FILE *out,
                             struct hv_err *err)
{
    (void)err;
    const char *event = o->event_name ? o->event_name : "cpu-clock";
    uint64_t tps = p->ticks_per_sec ? p->ticks_per_sec : 1000000000ull;
    char comm[64], name[SYMTAB_MAX_NAME_LEN + 64];
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *s = &p->samples.v[i];
        /* perf's comm is the thread's name; it cannot contain spaces for parsers that split on
         * them, so spaces become underscores. */
        const char *tn = profile_thread_name(p, s->pid, s->tid);
        size_t k = 0;
        for (; tn[k] && k + 1 < sizeof(comm); k++)
            comm[k] = (unsigned char)tn[k] <= ' ' ? '_' : tn[k];
        comm[k] = 0;
        uint64_t sec = s->ts / tps;
        uint64_t usec = (uint64_t)((double)(s->ts % tps) * 1e6 / (double)tps);
        uint64_t period = p->period_ns ? p->period_ns * s->weight : s->weight;
        fprintf(out,
                "%16s %6" PRIu64 "/%-6" PRIu64 " [%03u] %5" PRIu64 ".%06" PRIu64 ": %10" PRIu64
                " %s: \n",
                comm, s->pid, s->tid, s->vcpu, sec, usec, period, event);
        for (uint32_t f = 0; f < s->nframes; f++) {
            const struct prof_frame *fr = &p->frames.v[s->first + f];
            const char *dso = "[unknown]";
            uint64_t off = 0;
            bool resolved = false;
            if (fr->loc < p->locs.n) {
                const struct prof_loc *l = &p->locs.v[fr->loc];
                if (l->mapping != PROF_NONE) {
                    const struct prof_module *m = &p->modules.v[p->mappings.v[l->mapping].module];
                    dso = m->kernel && m->name[0] == '[' ? "[kernel.kallsyms]" : m->name;
                }
                off = l->func_off;
                resolved = l->resolved;
            }
            report_frame_name(p, fr, name, sizeof(name));
            if (resolved)
                fprintf(out, "\t%16" PRIx64 " %s+0x%" PRIx64 " (%s)\n", fr->addr, name, off, dso);
            else
                fprintf(out, "\t%16" PRIx64 " %s (%s)\n", fr->addr, name, dso);
        }
        fputc('\n', out);
    }
    return 0;
}
