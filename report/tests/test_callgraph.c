/* The call graph and its two views on the synthetic profile (synth.c): 60 samples
 * _start > fixture_main > fixture_outer > fixture_middle > fixture_leaf, 25 ending in
 * fixture_middle, 5 + 4 unresolved, 6 in the kernel (100 in all). Exact edge weights, the tree
 * view's lines, and JSON that Python's parser reads back with the same numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/report.h"
#include "report/report_callgraph.h"
#include "synth.h"
#include "testutil.h"

static uint32_t func_index(const struct profile *p, const char *name)
{
    for (size_t i = 0; i < p->funcs.n; i++)
        if (!strcmp(p->funcs.v[i].name, name))
            return (uint32_t)i;
    fail_msg("no function %s", name);
    return 0;
}

static uint64_t edge(const struct callgraph *g, uint32_t caller, uint32_t callee)
{
    size_t first, n;
    callgraph_callees(g, caller, &first, &n);
    for (size_t k = 0; k < n; k++)
        if (g->edges.v[first + k].callee == callee)
            return g->edges.v[first + k].weight;
    return 0;
}

static void test_edges(void **state)
{
    (void)state;
    struct profile p;
    synth_profile(&p);
    struct callgraph g;
    struct hv_err err;
    assert_int_equal(callgraph_build(&p, &g, &err), 0);
    uint32_t leaf = func_index(&p, "fixture_leaf"), mid = func_index(&p, "fixture_middle"),
             outer = func_index(&p, "fixture_outer"), main_ = func_index(&p, "fixture_main"),
             start = func_index(&p, "_start");
    assert_int_equal(g.total, 100);
    assert_int_equal(edge(&g, mid, leaf), 60);
    assert_int_equal(edge(&g, outer, mid), 85);
    assert_int_equal(edge(&g, main_, outer), 85);
    assert_int_equal(edge(&g, start, main_), 85);
    assert_int_equal(edge(&g, leaf, mid), 0);
    assert_int_equal(g.funcs[mid].self, 25);
    assert_int_equal(g.funcs[mid].total, 85);
    /* fixture_middle's one caller and one callee. */
    size_t first, n;
    callgraph_callers(&g, mid, &first, &n);
    assert_int_equal(n, 1);
    assert_int_equal(g.edges.v[g.by_callee[first]].caller, outer);
    callgraph_callees(&g, mid, &first, &n);
    assert_int_equal(n, 1);
    assert_int_equal(g.edges.v[first].callee, leaf);
    callgraph_free(&g);
    profile_free(&p);
}

static char *write_to_string(const struct profile *p, enum report_format f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct hv_err err;
    struct report_opts o = {.top_limit = 3};
    if (report_write(f, p, &o, out, &err) < 0)
        fail_msg("%s", err.msg);
    fclose(out);
    return buf;
}

static void test_tree_view(void **state)
{
    (void)state;
    struct profile p;
    synth_profile(&p);
    char *t = write_to_string(&p, REPORT_TREE);
    /* _start is on the stack in 90 samples (the unresolved frames' 5 too), then four functions
     * in 85; fixture_middle, with 25 of its own, comes first of those: its caller above it, its
     * callee below, each call's share. Three entries, a blank line before each. */
    assert_non_null(strstr(t, "\n\n    90.00%    0.00%  [.] _start (prog_static)\n"
                              "                     85.00%  -> [.] fixture_main (prog_static)\n"));
    assert_non_null(strstr(t, "\n                     85.00%  <- [.] fixture_outer (prog_static)\n"
                              "    85.00%   25.00%  [.] fixture_middle (prog_static)\n"
                              "                     60.00%  -> [.] fixture_leaf (prog_static)\n"));
    size_t entries = 0;
    for (const char *l = t; (l = strstr(l, "\n\n")); l++)
        entries++;
    assert_int_equal(entries, 3);
    free(t);
    profile_free(&p);
}

static void test_json(void **state)
{
    (void)state;
    struct profile p;
    synth_profile(&p);
    char *j = write_to_string(&p, REPORT_JSON);
    char *dir = make_temp_dir(), path[4096], cmd[8192];
    snprintf(path, sizeof(path), "%s/profile.json", dir);
    FILE *f = fopen(path, "w");
    fputs(j, f);
    fclose(f);
    /* Every function listed (--limit is the table's), the middle one's caller and callee by
     * index, the per-process and per-vCPU sums. */
    snprintf(
        cmd, sizeof(cmd),
        "python3 -c 'import json,sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "f = d[\"functions\"]\n"
        "ix = {x[\"name\"]: i for i, x in enumerate(f)}\n"
        "m = f[ix[\"fixture_middle\"]]\n"
        "assert d[\"samples\"] == 100, d[\"samples\"]\n"
        "assert (m[\"self\"], m[\"total\"], m[\"kernel\"]) == (25, 85, False), m\n"
        "assert m[\"callers\"] == [{\"function\": ix[\"fixture_outer\"], \"samples\": 85}], m\n"
        "assert m[\"callees\"] == [{\"function\": ix[\"fixture_leaf\"], \"samples\": 60}], m\n"
        "assert f[ix[\"do_syscall_64\"]][\"kernel\"] is True\n"
        "assert sum(x[\"samples\"] for x in d[\"processes\"]) == 100\n"
        "assert sum(x[\"samples\"] for x in d[\"vcpus\"]) == 100\n"
        "assert [x[\"total\"] for x in f] == sorted((x[\"total\"] for x in f), reverse=True)\n"
        "' '%s'",
        path);
    assert_int_equal(system(cmd), 0);
    remove_temp_dir(dir);
    free(j);
    profile_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_tree_view),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
