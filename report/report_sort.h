/* The top table's rows keyed as `perf report --sort` keys them: any of comm, pid, tid, dso,
 * sym, vcpu (perf's cpu), cpl, guest, cgroup (perf's name) and container, in the order given, each
 * row with its children (the samples with the row's key anywhere on the stack, once a sample) and
 * self (at the leaf) share. report_top.c prints it; docs/report.md lists the keys. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"
#include "report/profile.h"

enum report_sort_key {
    REPORT_SORT_COMM,
    REPORT_SORT_PID,
    REPORT_SORT_TID,
    REPORT_SORT_DSO,
    REPORT_SORT_SYM,
    REPORT_SORT_VCPU,
    REPORT_SORT_CPL,
    REPORT_SORT_GUEST,
    REPORT_SORT_CGROUP,    /* the sample's cgroup path (docs/containers.md) */
    REPORT_SORT_CONTAINER, /* the container that path names, "-" for none */
    REPORT_SORT_NKEYS
};
#define REPORT_SORT_MAX 8 /* keys of one --sort */

struct report_sort {
    enum report_sort_key keys[REPORT_SORT_MAX];
    unsigned n; /* 0: dso,sym (perf's default less comm: the process tables follow) */
};

/* "comm,dso,sym" (perf's names, "cpu" for vcpu too) into s: 0, or -1 with err naming the key
 * and the keys there are. */
int report_sort_parse(const char *arg, struct report_sort *s, struct hv_err *err);
/* Every key's name, ", " between them. */
const char *report_sort_key_list(void);

struct report_sort_opts {
    struct report_sort sort;
    bool no_children;     /* perf's --no-children: one Overhead column, by self */
    double percent_limit; /* rows under it (of the sorted column) left out, 0: none */
    unsigned limit;       /* rows at most */
};

/* The table: a header line of the columns, then the rows, heaviest first. */
int report_sort_write(const struct profile *p, const struct report_sort_opts *o, FILE *out,
                      struct hv_err *err);
