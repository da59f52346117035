/* See guest_expect.h. */
#include "tests/integration/guest_expect.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static const char *need_line(const struct guest_run *r, const char *prefix, char *buf, size_t len)
{
    const char *l = guest_line(r, prefix, buf, len);
    if (!l)
        fail_msg("no console line starting with '%s'", prefix);
    return l;
}

void guest_expect_default_programs(const struct guest_run *r, unsigned vcpus, int nworkload)
{
    char line[512], want[128];
    int nprogs = nworkload + 4;

    assert_int_equal(r->status, 0);
    need_line(r, "hvprof-guest: boot ", line, sizeof(line));
    assert_int_equal(guest_field(line, "cpus"), vcpus);
    for (unsigned c = 1; c < vcpus; c++) {
        snprintf(want, sizeof(want), "hvprof-guest: cpu %u online", c);
        need_line(r, want, line, sizeof(line));
    }

    /* Every copy of workload ran in its own process and saw its ELF header mapped. */
    assert_int_equal(guest_count_lines(r, "workload: "), nworkload);
    long seen_pids[64] = {0};
    int nseen = 0;
    for (const char *p = r->console; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "workload: ", 10))
            continue;
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
        assert_true(guest_field(line, "units") > 0);
        assert_true(guest_field(line, "units_per_sec") > 0);
        assert_non_null(strstr(line, "elf_header=ok"));
        long pid = guest_field(line, "pid");
        for (int i = 0; i < nseen; i++)
            assert_int_not_equal(seen_pids[i], pid);
        if (nseen < 64)
            seen_pids[nseen++] = pid;
    }

    need_line(r, "syscall: ", line, sizeof(line));
    assert_true(guest_field(line, "kbusy_calls") > 0);
    assert_int_equal(guest_field(line, "errors"), 0);

    need_line(r, "threads: ", line, sizeof(line));
    assert_true(guest_field(line, "a_rounds") > 0);
    assert_true(guest_field(line, "b_rounds") > 0);
    assert_int_equal(guest_field(line, "fs_bad"), 0);
    assert_int_equal(guest_field(line, "ok"), 1);

    need_line(r, "recurse: ", line, sizeof(line));
    assert_int_equal(guest_field(line, "depth"), 250);
    assert_true(guest_field(line, "rounds") > 0);

    need_line(r, "nofp: ", line, sizeof(line));
    assert_true(guest_field(line, "rounds") > 0);

    /* One start and one exit line per program, every exit status 0. */
    assert_int_equal(guest_count_lines(r, "hvprof-guest: start pid="), nprogs);
    assert_int_equal(guest_count_lines(r, "hvprof-guest: exit pid="), nprogs);
    assert_int_equal(guest_count_lines(r, "hvprof-guest: PANIC"), 0);
    assert_int_equal(guest_count_lines(r, "hvprof-guest: pid="), 0); /* no process killed */
    for (const char *p = r->console; p && (p = strstr(p, "hvprof-guest: exit pid=")); p++) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
        assert_int_equal(guest_field(line, "status"), 0);
    }

    need_line(r, "hvprof-guest: summary ", line, sizeof(line));
    assert_int_equal(guest_field(line, "programs"), nprogs);
    assert_int_equal(guest_field(line, "ok"), nprogs);
    assert_int_equal(guest_field(line, "failed"), 0);
    assert_int_equal(guest_field(line, "cpus"), vcpus);
    need_line(r, "hvprof-guest: status 0", line, sizeof(line));
}
