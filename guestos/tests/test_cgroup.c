/* guestos/linux/cgroup.h on a synthetic guest (cgroup_guest.h: structures laid out as a BTF
 * would give them): a task in a container's cgroup and a child pid namespace, the path and the
 * namespace pid as the guest would show them (/proc/PID/cgroup, NSpid); the task moved to
 * another cgroup; and what a hostile guest can write instead: a cycle, a chain deeper than any,
 * a name with no end or with a '/', pointers that are not the kernel's, a namespace level past
 * the kernel's limit. (The members' offsets in real kernels: test_guestos_captured.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/tests/cgroup_guest.h"

#define L CG_LAYOUT

static struct tg x;

static int path_of(uint64_t css, char *out, size_t len)
{
    lx_kread_forget(&x.kr);
    return lx_cgroup_path(&x.kr, &L, css, out, len);
}

static int setup(void **state)
{
    (void)state;
    if (tg_build(&x, false) < 0)
        return -1;
    cg_build(&x);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tg_free(&x);
    return 0;
}

static void test_container_task(void **state)
{
    (void)state;
    uint64_t got;
    assert_true(lx_task_css_set(&x.kr, &L, TG_TASK(1), &got));
    assert_int_equal(got, CG_CSS);
    char path[LX_CGROUP_PATH_MAX + 1];
    int n = path_of(got, path, sizeof(path));
    assert_string_equal(path, "/system.slice/docker-" CG_ID ".scope");
    assert_int_equal(n, (int)strlen(path));
    struct lx_ns_pid np;
    assert_true(lx_task_ns_pid(&x.kr, &L, TG_TASK(1), &np));
    assert_int_equal(np.nr, 1);
    assert_int_equal(np.level, 1);
    assert_int_equal(np.inum, CG_CHILD_INUM);
    char host[LX_UTS_NODENAME_LEN];
    uint32_t mnt = 0;
    assert_true(lx_task_uts(&x.kr, &L, TG_TASK(1), host, &mnt));
    assert_string_equal(host, CG_HOSTNAME);
    assert_int_equal(mnt, CG_MNT_INUM);
    /* An exiting task has no nsproxy; a name with control bytes is shown with '?'. */
    cg_put64(&x, TG_TASK(1) + L.task_nsproxy, 0);
    assert_false(lx_task_uts(&x.kr, &L, TG_TASK(1), host, &mnt));
    cg_put64(&x, TG_TASK(1) + L.task_nsproxy, CG_AREA(0x5000));
    memcpy(tg_at(&x, CG_AREA(0x5100) + L.uts_nodename - TG_DIRECT), "a\x1b[2Jb",
           sizeof("a\x1b[2Jb"));
    assert_true(lx_task_uts(&x.kr, &L, TG_TASK(1), host, &mnt));
    assert_string_equal(host, "a?[2Jb");
    memcpy(tg_at(&x, CG_AREA(0x5100) + L.uts_nodename - TG_DIRECT), CG_HOSTNAME,
           sizeof(CG_HOSTNAME));
    /* The root cgroup is "/"; the task moved there is seen there. */
    assert_int_equal(path_of(CG_CSS_ROOT, path, sizeof(path)), 1);
    assert_string_equal(path, "/");
    cg_put64(&x, TG_TASK(1) + L.task_cgroups, CG_CSS_ROOT);
    assert_true(lx_task_css_set(&x.kr, &L, TG_TASK(1), &got));
    assert_int_equal(got, CG_CSS_ROOT);
    cg_put64(&x, TG_TASK(1) + L.task_cgroups, CG_CSS);
    /* A buffer too small for the whole path keeps its innermost end. */
    char small[90]; /* "…/docker-<id>.scope" fits, "/system.slice/" too does not */
    n = path_of(CG_CSS, small, sizeof(small));
    assert_true(n > 0 && (size_t)n < sizeof(small));
    assert_string_equal(small, "\xe2\x80\xa6/docker-" CG_ID ".scope");
}

static void test_hostile(void **state)
{
    (void)state;
    char path[LX_CGROUP_PATH_MAX + 1];
    /* A node that is its own parent. */
    uint64_t self = cg_kn(&x, 0x5000, 0x5100, "loop", CG_AREA(0x5000));
    assert_int_equal(path_of(cg_css(&x, 0x5200, self), path, sizeof(path)), -1);
    /* A cycle of two. */
    uint64_t a = cg_kn(&x, 0x5400, 0x5500, "a", CG_AREA(0x5600));
    cg_kn(&x, 0x5600, 0x5700, "b", a);
    assert_int_equal(path_of(cg_css(&x, 0x5800, a), path, sizeof(path)), -1);
    /* A chain deeper than any real one: cut at LX_CGROUP_MAX_DEPTH, innermost kept. */
    uint64_t up = cg_kn(&x, 0x6000, 0x6010, "", 0);
    for (unsigned i = 1; i <= 100; i++) {
        char name[16];
        snprintf(name, sizeof(name), "d%u", i);
        up = cg_kn(&x, 0x6000 + 0x40 * i, 0x9000 + 0x10 * i, name, up);
    }
    int n = path_of(cg_css(&x, 0xb000, up), path, sizeof(path));
    assert_true(n > 0);
    assert_memory_equal(path, "\xe2\x80\xa6/", 4);
    assert_non_null(strstr(path, "/d99/d100"));
    assert_null(strstr(path, "/d36/"));
    /* A name with no NUL within NAME_MAX, one with a '/', one empty below the root. */
    uint64_t root = cg_kn(&x, 0xc000, 0xc010, "", 0);
    memset(tg_at(&x, CG_AREA(0xd000) - TG_DIRECT), 'x', 600);
    cg_put64(&x, CG_AREA(0xc100) + L.kn_name, CG_AREA(0xd000));
    cg_put64(&x, CG_AREA(0xc100) + L.kn_parent, root);
    assert_int_equal(path_of(cg_css(&x, 0xc200, CG_AREA(0xc100)), path, sizeof(path)), -1);
    uint64_t slash = cg_kn(&x, 0xc400, 0xc410, "a/b", root);
    assert_int_equal(path_of(cg_css(&x, 0xc500, slash), path, sizeof(path)), -1);
    uint64_t empty = cg_kn(&x, 0xc600, 0xc610, "", root);
    assert_int_equal(path_of(cg_css(&x, 0xc700, empty), path, sizeof(path)), -1);
    /* Pointers into user space, or misaligned, or unmapped. */
    cg_put64(&x, CG_AREA(0xc800) + L.css_dfl_cgrp, 0x400000);
    assert_int_equal(path_of(CG_AREA(0xc800), path, sizeof(path)), -1);
    assert_int_equal(path_of(CG_AREA(0xc800) + 1, path, sizeof(path)), -1);
    uint64_t far = cg_kn(&x, 0xc900, 0xc910, "far", 0xffffc90000000000ull);
    assert_int_equal(path_of(cg_css(&x, 0xca00, far), path, sizeof(path)), -1);
    /* A namespace level past MAX_PID_NS_LEVEL; a negative pid; a task with no cgroups. */
    uint64_t pid = CG_AREA(0xe000);
    cg_put64(&x, TG_TASK(2) + L.task_thread_pid, pid);
    cg_put32(&x, pid + L.pid_level, LX_PID_NS_LEVELS);
    struct lx_ns_pid np;
    assert_false(lx_task_ns_pid(&x.kr, &L, TG_TASK(2), &np));
    cg_put32(&x, pid + L.pid_level, 0);
    cg_put32(&x, pid + L.pid_numbers + L.upid_nr, 0xffffffffu);
    cg_put64(&x, pid + L.pid_numbers + L.upid_ns, CG_AREA(0xe800));
    assert_false(lx_task_ns_pid(&x.kr, &L, TG_TASK(2), &np));
    cg_put64(&x, TG_TASK(2) + L.task_cgroups, 0);
    uint64_t css;
    assert_false(lx_task_css_set(&x.kr, &L, TG_TASK(2), &css));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_container_task),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
