/* `report --header`: what a recording says of itself, as perf's --header prints a perf.data's
 * header: when it ran and for how long, the sampling settings, the guest, hvprof's version and
 * record's command line (profile.header, from the session markers and the guest_kernel
 * event). */
#include <inttypes.h>
#include <time.h>

#include "report/report.h"

double report_duration_s(const struct profile *p)
{
    uint64_t first, last;
    profile_time_span(p, &first, &last);
    uint64_t from = p->start_ts ? p->start_ts : first;
    uint64_t to = p->header.stop_ts > last ? p->header.stop_ts : last;
    double tps = p->ticks_per_sec ? (double)p->ticks_per_sec : 1e9;
    return from != UINT64_MAX && to > from ? (double)(to - from) / tps : 0;
}

int report_write_header(const struct profile *p, FILE *out, struct hv_err *err)
{
    (void)err;
    const struct prof_header *h = &p->header;
    fputs("# ========\n", out);
    if (h->start_unix_ns) {
        time_t t = (time_t)(h->start_unix_ns / 1000000000ull);
        struct tm tm;
        char when[64];
        if (gmtime_r(&t, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
            fprintf(out, "# captured on    : %s\n", when);
    }
    fprintf(out, "# duration       : %.3f s%s\n", report_duration_s(p),
            h->stop_ts ? "" : " (no session_stop: the recording was cut short)");
    if (h->hz || p->period_ns)
        fprintf(out, "# sample rate    : %" PRIu64 " Hz per vCPU (period %" PRIu64 " ns)\n",
                h->hz ? h->hz : (uint64_t)1000000000 / p->period_ns, p->period_ns);
    if (h->mode[0])
        fprintf(out, "# mode           : %s%s%s\n", h->mode, h->exit_events ? ", exit events" : "",
                h->off_cpu ? ", off-CPU time" : "");
    if (h->vcpus)
        fprintf(out, "# vCPUs          : %u\n", h->vcpus);
    if (h->guest[0])
        fprintf(out, "# guest          : %s\n", h->guest);
    if (h->osrelease[0])
        fprintf(out, "# guest kernel   : Linux %s\n", h->osrelease);
    fprintf(out, "# recorded by    : hvprof %s\n",
            h->version[0] ? h->version : "(unknown version)");
    if (h->command[0])
        fprintf(out, "# command line   : %s\n", h->command);
    fprintf(out, "# samples        : %" PRIu64 "%s\n", profile_total_weight(p),
            p->weight_us ? " us" : "");
    fputs("# ========\n#\n", out);
    return 0;
}
