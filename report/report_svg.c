/* A self-contained flame graph: one SVG with inline CSS and script (report_svg_script.h), no
 * external references, so it opens offline in any browser. Root ("all") at the bottom, then
 * the guest process, then the stack root to leaf upwards; widths proportional to samples;
 * siblings in alphabetical order (the FlameGraph convention). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/vector.h"
#include "report/report.h"
#include "report/report_stacks.h"
#include "report/report_svg_script.h"

#define SVG_WIDTH 1200
#define SVG_PAD   10
#define FRAME_H   16
/* The controls' bar: title and buttons on its first line, the hovered frame's details and the
 * search's share on its second; kept at the top of the view by the script. */
#define TOP_SPACE 60
#define BOT_SPACE 24
#define MAX_DEPTH 1024
/* Frames narrower than this (pixels at the full width) are left out, and said to be: a long
 * recording's SVG would otherwise hold every one of its distinct stacks (flamegraph.pl's
 * --minwidth, whose default is the same 0.1). */
#define SVG_MIN_WIDTH 0.1

struct node {
    const char *name;
    uint32_t depth;
    uint64_t x, w;    /* first sample and samples drawn (a differential graph's widths) */
    double base, now; /* differential graphs: the base's samples here (scaled), the new's */
};

/* XML text/attribute escaping. Bytes outside printable ASCII become '?': symbol names are not
 * guaranteed UTF-8, and one bad byte would make the whole document ill-formed. */
static void xml_put(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            fputc(c < 0x20 || c >= 0x7f ? '?' : c, out);
        }
    }
}

static bool is_kernel(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, "_[k]");
}

/* Stable per name. User frames red to orange, guest-kernel frames ("_[k]") yellow-orange as
 * FlameGraph's --color=java draws kernel frames, the process roots grey-blue. */
static void color(const char *name, uint32_t depth, unsigned *r, unsigned *g, unsigned *b)
{
    uint32_t h = 2166136261u;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    if (depth <= 1) {
        *r = 150 + h % 30;
        *g = 160 + (h >> 8) % 30;
        *b = 190 + (h >> 16) % 40;
    } else if (is_kernel(name)) {
        *r = 220 + h % 35;
        *g = 170 + (h >> 8) % 50;
        *b = (h >> 16) % 60;
    } else {
        *r = 200 + h % 55;
        *g = (h >> 8) % 110 + 20;
        *b = (h >> 16) % 55;
    }
}

/* Differential colouring (FlameGraph's difference flame graphs): red where the new profile has
 * more than the base (scaled to the same total), blue where less, deeper the larger the change
 * against the largest one; white-grey where nothing changed. */
static void diff_color(double delta, double maxdelta, unsigned *r, unsigned *g, unsigned *b)
{
    double i = maxdelta > 0 ? (delta < 0 ? -delta : delta) / maxdelta : 0;
    unsigned pale = (unsigned)(210.0 * (1.0 - i) + 0.5);
    if (delta > 0) {
        *r = 255;
        *g = *b = pale;
    } else if (delta < 0) {
        *r = *g = pale;
        *b = 255;
    } else {
        *r = *g = *b = 215;
    }
}

/* The frames as <g class="f"> elements; those narrower than SVG_MIN_WIDTH counted in
 * *hidden. */
static void write_frames(FILE *out, const struct node *nodes, size_t nn, uint64_t total,
                         const double *base, double maxdelta, unsigned height, size_t *hidden)
{
    double scale = total ? (double)(SVG_WIDTH - 2 * SVG_PAD) / (double)total : 0;
    for (size_t i = 0; i < nn; i++) {
        const struct node *n = &nodes[i];
        double x = SVG_PAD + (double)n->x * scale, w = (double)n->w * scale;
        double y = height - BOT_SPACE - (double)(n->depth + 1) * FRAME_H;
        if (w < SVG_MIN_WIDTH) { /* too narrow to see (flamegraph.pl's --minwidth) */
            (*hidden)++;
            continue;
        }
        unsigned r, g, b;
        if (base)
            diff_color(n->now - n->base, maxdelta, &r, &g, &b);
        else
            color(n->name, n->depth, &r, &g, &b);
        fputs("<g class=\"f\" data-n=\"", out);
        xml_put(out, n->name);
        fprintf(out, "\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%u\"><title>", n->x,
                n->w, n->depth);
        xml_put(out, n->name);
        if (base)
            fprintf(out, " (new %.0f samples, base %.0f scaled: %+.2f%%)", n->now, n->base,
                    total ? 100.0 * (n->now - n->base) / (double)total : 0.0);
        else
            fprintf(out, " (%" PRIu64 " samples, %.2f%%)", n->w,
                    total ? 100.0 * (double)n->w / (double)total : 0.0);
        fprintf(out,
                "</title><rect x=\"%.2f\" y=\"%.1f\" "
                "width=\"%.2f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/>"
                "<text x=\"%.2f\" y=\"%.1f\">",
                x, y, w, FRAME_H - 1, r, g, b, x + 3, y + FRAME_H - 4);
        /* The same label the script computes (7 px per character), for viewers without JS. */
        int fit = (int)((w - 6) / 7);
        if (fit >= 3) {
            size_t len = strlen(n->name);
            if (len <= (size_t)fit) {
                xml_put(out, n->name);
            } else {
                char cut[256];
                size_t k = (size_t)fit - 2 < sizeof(cut) - 3 ? (size_t)fit - 2 : sizeof(cut) - 3;
                memcpy(cut, n->name, k);
                strcpy(cut + k, "..");
                xml_put(out, cut);
            }
        }
        fputs("</text></g>\n", out);
    }
}

/* A differential graph's key, on the bar's second line at the right. */
static void write_legend(FILE *out, const char *legend)
{
    fprintf(out,
            "<g id=\"legend\"><rect x=\"%d\" y=\"34\" width=\"10\" height=\"10\" "
            "fill=\"#ff7878\"/><rect x=\"%d\" y=\"34\" width=\"10\" height=\"10\" "
            "fill=\"#7878ff\"/><text id=\"legendtext\" x=\"%d\" y=\"44\">",
            SVG_WIDTH / 2 - 250, SVG_WIDTH / 2 - 236, SVG_WIDTH / 2 - 220);
    xml_put(out, legend);
    fputs("</text></g>\n", out);
}

int report_write_svg(const struct profile *p, const struct report_opts *o, FILE *out,
                     struct hv_err *err)
{
    struct report_stacks st;
    const struct report_stacks_opts so = {.kernel_suffix = true,
                                          .max_depth = o->max_depth,
                                          .fold_recursion = o->fold_recursion,
                                          .container_root = true};
    if (report_stacks_build(p, &so, &st, err) < 0)
        return -1;
    int rc = report_svg_render(&st, NULL, o->title ? o->title : "hvprof flame graph", out, err);
    report_stacks_free(&st);
    return rc;
}

int report_svg_render(struct report_stacks *stacks, const struct report_svg_diff *diff,
                      const char *title, FILE *out, struct hv_err *err)
{
    const double *base = diff ? diff->base : NULL;
    const char *legend = diff ? diff->legend : NULL;
    const struct report_stacks st = *stacks;
    uint64_t total = 0;
    for (size_t i = 0; i < st.n; i++)
        total += st.v[i].weight;

    struct node *nodes = NULL;
    size_t nn = 0, cap = 0;
    uint32_t path[MAX_DEPTH]; /* node index per depth on the current path */
    uint32_t plen = 0, maxdepth = 0;
    int rc = -1;
    /* "all" (depth 0) spans everything. */
    nodes = malloc(sizeof(*nodes) * (cap = 64));
    if (!nodes)
        goto oom;
    nodes[nn++] = (struct node){"all", 0, 0, total, 0, 0};
    uint64_t cum = 0;
    for (size_t i = 0; i < st.n; i++) {
        /* Split the stack text in place into frame names. */
        const char *frames[MAX_DEPTH];
        uint32_t nf = 0;
        char *s = st.v[i].text;
        while (nf < MAX_DEPTH - 1) {
            frames[nf++] = s;
            char *semi = strchr(s, ';');
            if (!semi)
                break;
            *semi = 0;
            s = semi + 1;
        }
        uint32_t common = 0;
        while (common < plen && common < nf && !strcmp(nodes[path[common]].name, frames[common]))
            common++;
        double bw = base ? base[i] : 0, nw = diff ? diff->now[i] : 0;
        nodes[0].base += bw;
        nodes[0].now += nw;
        for (uint32_t d = 0; d < common; d++) {
            nodes[path[d]].w += st.v[i].weight;
            nodes[path[d]].base += bw;
            nodes[path[d]].now += nw;
        }
        for (uint32_t d = common; d < nf; d++) {
            if (nn == cap) {
                struct node *nv = hv_vec_grow(nodes, &cap, nn + 1, sizeof(*nodes));
                if (!nv)
                    goto oom;
                nodes = nv;
            }
            nodes[nn] = (struct node){frames[d], d + 1, cum, st.v[i].weight, bw, nw};
            path[d] = (uint32_t)nn++;
        }
        plen = nf;
        if (nf > maxdepth)
            maxdepth = nf;
        cum += st.v[i].weight;
    }

    unsigned height = TOP_SPACE + BOT_SPACE + (maxdepth + 1) * FRAME_H;
    double maxdelta = 0;
    for (size_t i = 0; base && i < nn; i++) {
        double d = nodes[i].now - nodes[i].base;
        maxdelta = d > maxdelta ? d : -d > maxdelta ? -d : maxdelta;
    }
    fprintf(out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\" "
            "data-pad=\"%d\" data-total=\"%" PRIu64 "\" onload=\"init(evt)\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height, SVG_PAD, total ? total : 1);
    fputs("<style type=\"text/css\">\n"
          "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
          "#title { font-size: 17px; text-anchor: middle; }\n"
          "#unzoom, #search, #ignorecase { cursor: pointer; fill: #1a4fa0; }\n"
          ".hide { display: none; }\n"
          "g.f { cursor: pointer; }\n"
          "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
          "g.parent { opacity: 0.5; }\n"
          "g.match rect { fill: rgb(230,0,230); }\n"
          "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n",
          out);
    fputs(report_svg_script, out);
    fputs("]]></script>\n", out);
    fprintf(out,
            "<rect id=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%u\" "
            "fill=\"#f6f6f2\"/>\n",
            SVG_WIDTH, height);
    /* The frames first, the controls after them: drawn over the frames when the script keeps
     * the bar at the top of a scrolled view. */
    fputs("<g id=\"frames\">\n", out);
    size_t hidden = 0;
    write_frames(out, nodes, nn, total, base, maxdelta, height, &hidden);
    fputs("</g>\n", out);
    /* Said on the graph, as the frames left out are not there to zoom into. */
    if (hidden)
        fprintf(out,
                "<text id=\"minwidth\" x=\"%d\" y=\"%u\">%zu frames narrower than %.1f px "
                "left out</text>\n",
                SVG_PAD, height - 8, hidden, SVG_MIN_WIDTH);
    fprintf(out,
            "<g id=\"controls\"><rect id=\"bar\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
            "fill=\"#f6f6f2\" fill-opacity=\"0.92\"/>\n<text id=\"title\" x=\"%d\" y=\"24\">",
            SVG_WIDTH, TOP_SPACE - 8, SVG_WIDTH / 2);
    xml_put(out, title);
    fprintf(out,
            "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
            "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
            "<text id=\"ignorecase\" x=\"%d\" y=\"24\">ic</text>\n"
            "<text id=\"details\" x=\"%d\" y=\"44\"> </text>\n"
            "<text id=\"matched\" x=\"%d\" y=\"44\"> </text>\n",
            SVG_PAD, SVG_WIDTH - 110, SVG_WIDTH - 40, SVG_PAD, SVG_WIDTH - 200);
    if (legend)
        write_legend(out, legend);
    fputs("</g>\n</svg>\n", out);
    rc = 0;
    goto done;
oom:
    hv_errk(err, HV_ERR_NO_MEMORY, "svg: out of memory");
done:
    free(nodes);
    return rc;
}
