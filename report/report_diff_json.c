/* `hvprof diff --format json`: the comparison for programs (docs/json.md, "hvprof-diff"): each
 * function's self and children samples in both recordings, each stack's counts in both (BASE's
 * scaled to NEW's total unless --raw, as the table and folded output count them). Names are
 * written as the report's JSON writes them: bytes outside ASCII as '?', so it always parses. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "report/report_diff.h"
#include "report/report_json.h"

int report_diff_write_json(const struct report_diff *d, const struct report_diff_opts *o, FILE *out,
                           struct hv_err *err)
{
    (void)err;
    fprintf(out, "{\"format\": \"hvprof-diff\", \"version\": %d,\n\"base\": {\"file\": ",
            REPORT_JSON_VERSION);
    report_json_str(out, o->base_name ? o->base_name : "base");
    fprintf(out, ", \"samples\": %" PRIu64 "},\n\"new\": {\"file\": ", d->base_total);
    report_json_str(out, o->new_name ? o->new_name : "new");
    fprintf(out, ", \"samples\": %" PRIu64 "},\n\"base_scaled\": %s,\n\"functions\": [",
            d->new_total, o->raw ? "false" : "true");
    for (size_t i = 0; i < d->funcs.n; i++) {
        const struct diff_func *f = &d->funcs.v[i];
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
        report_json_str(out, f->name);
        fputs(", \"dso\": ", out);
        report_json_str(out, f->dso);
        fprintf(out,
                ", \"kernel\": %s, \"base_self\": %" PRIu64 ", \"base_total\": %" PRIu64
                ", \"new_self\": %" PRIu64 ", \"new_total\": %" PRIu64 "}",
                f->kernel ? "true" : "false", f->base_self, f->base_total, f->new_self,
                f->new_total);
    }
    fputs("],\n\"stacks\": [", out);
    for (size_t i = 0; i < d->nstacks; i++) {
        const struct diff_stack *s = &d->stacks[i];
        fputs(i ? ",\n  {\"frames\": [" : "\n  {\"frames\": [", out);
        /* The folded text, root first, split at its ';' (names hold none). */
        const char *t = s->text;
        for (int k = 0; *t; k++) {
            const char *e = strchr(t, ';');
            size_t n = e ? (size_t)(e - t) : strlen(t);
            fputs(k ? ", " : "", out);
            report_json_strn(out, t, n);
            t += n + (e != NULL);
        }
        fprintf(out, "], \"base\": %.0f, \"new\": %" PRIu64 "}",
                round(report_diff_scaled_base(d, o, s->base)), s->new);
    }
    fputs("]}\n", out);
    return 0;
}
