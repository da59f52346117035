/* common/container_id.h on cgroup paths as the engines make them (their documented names: see
 * container_id.h), the monitors that are not containers, pods with both cgroup drivers, nested
 * containers, and paths that only look like ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/container_id.h"

#define ID   "3f4e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081"
#define ID2  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID  "8d6a1c52-2b1e-4f0a-9c3d-5e7f8a9b0c1d"
#define UID_ "8d6a1c52_2b1e_4f0a_9c3d_5e7f8a9b0c1d"

static void expect(const char *path, enum container_engine e, const char *id, const char *pod)
{
    struct container_id c;
    bool any = container_from_cgroup(path, strlen(path), &c);
    assert_int_equal(any, e != CT_NONE || pod[0]);
    assert_int_equal(c.engine, e);
    assert_string_equal(c.id, id);
    assert_string_equal(c.pod_uid, pod);
}

static void test_engines(void **state)
{
    (void)state;
    expect("/system.slice/docker-" ID ".scope", CT_DOCKER, ID, "");
    expect("/docker/" ID, CT_DOCKER, ID, "");
    expect("/machine.slice/libpod-" ID ".scope", CT_PODMAN, ID, "");
    expect("/machine.slice/libpod-" ID ".scope/container", CT_PODMAN, ID, "");
    expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
           CT_PODMAN, ID, "");
    expect("/libpod_parent/libpod-" ID, CT_PODMAN, ID, "");
    expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID
           ".scope",
           CT_CRIO, ID, UID);
    expect("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope", CT_CONTAINERD,
           ID, UID);
    expect("/kubepods/besteffort/pod" UID "/" ID, CT_KUBERNETES, ID, UID);
    expect("/machine.slice/systemd-nspawn@debian12.service/payload", CT_NSPAWN, "debian12", "");
    expect("/machine.slice/machine-web.scope", CT_NSPAWN, "web", "");
    expect("/lxc.payload.c1", CT_LXC, "c1", "");
    expect("/lxc/c1", CT_LXC, "c1", "");
}

static void test_not_containers(void **state)
{
    (void)state;
    expect("/", CT_NONE, "", "");
    expect("", CT_NONE, "", "");
    expect("/system.slice/ssh.service", CT_NONE, "", "");
    expect("/user.slice/user-1000.slice/session-2.scope", CT_NONE, "", "");
    /* The monitors: the engine's cgroup, not the container's. */
    expect("/machine.slice/libpod-conmon-" ID ".scope", CT_NONE, "", "");
    expect("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope", CT_NONE, "", UID);
    /* A pod's own cgroup: the pod, no container (its pause process's parent). */
    expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice", CT_NONE,
           "", UID);
    /* Looks like one, is not: short, upper case, not hex, a bare id under no engine. */
    expect("/system.slice/docker-3f4e5a6b7c8d.scope", CT_NONE, "", "");
    expect("/system.slice/docker-"
           "3F4E5A6B7C8D9E0F1A2B3C4D5E6F708192A3B4C5D6E7F8091A2B3C4D5E6F7081"
           ".scope",
           CT_NONE, "", "");
    expect("/" ID, CT_NONE, "", "");
    expect("/system.slice/machine-.scope", CT_NONE, "", "");
    expect("/kubepods/pod1234/" ID, CT_NONE, "", "");
}

static void test_nested_and_bytes(void **state)
{
    (void)state;
    /* Docker in a podman container: the inner one. */
    expect("/machine.slice/libpod-" ID ".scope/docker/" ID2, CT_DOCKER, ID2, "");
    /* The length bounds the path; a NUL ends it. */
    const char p[] = "/system.slice/docker-" ID ".scope/extra";
    struct container_id c;
    assert_false(container_from_cgroup(p, 20, &c));
    assert_true(container_from_cgroup(p, sizeof(p) - 1, &c));
    const char q[] = "/docker/" ID "\0/docker/" ID2;
    assert_true(container_from_cgroup(q, sizeof(q) - 1, &c));
    assert_string_equal(c.id, ID);
    /* A deep path keeps its innermost components. */
    char deep[4096] = "";
    for (int i = 0; i < 100; i++)
        strcat(deep, "/a");
    strcat(deep, "/docker/" ID);
    expect(deep, CT_DOCKER, ID, "");
    char buf[80];
    assert_string_equal(container_short_id(&c, buf, sizeof(buf)), "3f4e5a6b7c8d");
    expect("/machine.slice/machine-web.scope", CT_NSPAWN, "web", "");
    assert_string_equal(container_engine_name(CT_CRIO), "cri-o");
    assert_string_equal(container_engine_name(CT_NONE), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engines),
        cmocka_unit_test(test_not_containers),
        cmocka_unit_test(test_nested_and_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
