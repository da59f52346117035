#include <string.h>

#include "report/report.h"

typedef int (*report_writer)(const struct profile *p, const struct report_opts *o, FILE *out,
                             struct hv_err *err);

/* Every output format in one place: its --format name, its file in `--format all -o DIR`,
 * whether it is binary (never to a terminal) and its writer. */
static const struct {
    const char *name, *file;
    bool binary;
    report_writer write;
} formats[REPORT_NFORMATS] = {
    [REPORT_TOP] = {"top", "top.txt", false, report_write_top},
    [REPORT_FOLDED] = {"folded", "stacks.folded", false, report_write_folded},
    [REPORT_PPROF] = {"pprof", "profile.pb.gz", true, report_write_pprof},
    [REPORT_PERF_SCRIPT] = {"perf-script", "perf-script.txt", false, report_write_perf_script},
    [REPORT_SVG] = {"svg", "flamegraph.svg", false, report_write_svg},
    [REPORT_TIMELINE] = {"timeline", "timeline.fxt", true, report_write_timeline},
};

int report_format_parse(const char *name)
{
    for (int i = 0; i < REPORT_NFORMATS; i++) {
        if (!strcmp(name, formats[i].name))
            return i;
    }
    return -1;
}

const char *report_format_name(enum report_format f)
{
    return (unsigned)f < REPORT_NFORMATS ? formats[f].name : "?";
}

const char *report_format_filename(enum report_format f)
{
    return (unsigned)f < REPORT_NFORMATS ? formats[f].file : "out";
}

bool report_format_is_binary(enum report_format f)
{
    return (unsigned)f < REPORT_NFORMATS && formats[f].binary;
}

int report_write(enum report_format f, const struct profile *p, const struct report_opts *o,
                 FILE *out, struct hv_err *err)
{
    static const struct report_opts defaults = {0};
    if (!o)
        o = &defaults;
    if ((unsigned)f >= REPORT_NFORMATS)
        return hv_errf(err, "unknown report format %d", (int)f);
    int rc = formats[f].write(p, o, out, err);
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        return hv_errf_errno(err, "writing %s output", report_format_name(f));
    return rc;
}

const char *report_frame_name(const struct profile *p, const struct prof_frame *fr, char *buf,
                              size_t len)
{
    const char *name = "?";
    if (fr->loc < p->locs.n)
        name = p->funcs.v[p->locs.v[fr->loc].func].name;
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++) {
        char c = name[i];
        buf[i] = (unsigned char)c < 0x20 || c == 0x7f ? '?' : c == ';' ? ':' : c;
    }
    buf[i] = 0;
    return buf;
}
