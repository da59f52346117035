#include <string.h>

#include "symbolize/report.h"

static const struct {
    const char *name, *file;
} formats[REPORT_NFORMATS] = {
    [REPORT_TOP] = {"top", "top.txt"},
    [REPORT_FOLDED] = {"folded", "stacks.folded"},
    [REPORT_PPROF] = {"pprof", "profile.pb.gz"},
    [REPORT_PERF_SCRIPT] = {"perf-script", "perf-script.txt"},
    [REPORT_SVG] = {"svg", "flamegraph.svg"},
    [REPORT_TIMELINE] = {"timeline", "timeline.fxt"},
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

int report_write(enum report_format f, const struct profile *p, const struct report_opts *o,
                 FILE *out, struct hv_err *err)
{
    static const struct report_opts defaults = {0};
    if (!o)
        o = &defaults;
    int rc;
    switch (f) {
    case REPORT_TOP:
        rc = report_write_top(p, o, out, err);
        break;
    case REPORT_FOLDED:
        rc = report_write_folded(p, o, out, err);
        break;
    case REPORT_PPROF:
        rc = report_write_pprof(p, o, out, err);
        break;
    case REPORT_PERF_SCRIPT:
        rc = report_write_perf_script(p, o, out, err);
        break;
    case REPORT_SVG:
        rc = report_write_svg(p, o, out, err);
        break;
    case REPORT_TIMELINE:
        rc = report_write_timeline(p, o, out, err);
        break;
    default:
        return hv_errf(err, "unknown report format %d", (int)f);
    }
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
