/* Folded stacks: "proc;root;...;leaf count" per distinct stack (brendangregg/FlameGraph
 * stackcollapse output, read by flamegraph.pl, inferno and speedscope; docs/sources.md §5). */
#include <inttypes.h>

#include "report/report.h"
#include "report/report_stacks.h"

int report_write_folded(const struct profile *p, const struct report_opts *o, FILE *out,
                        struct hv_err *err)
{
    struct report_stacks st;
    const struct report_stacks_opts so = {
        .max_depth = o->max_depth, .fold_recursion = o->fold_recursion, .container_root = true};
    if (report_stacks_build(p, &so, &st, err) < 0)
        return -1;
    for (size_t i = 0; i < st.n; i++)
        fprintf(out, "%s %" PRIu64 "\n", st.v[i].text, st.v[i].weight);
    report_stacks_free(&st);
    return 0;
}
