/* The sandbox on this kernel (sandbox.h), in a child process of its own: after sandbox_enter
 * the process shows Seccomp 2, NoNewPrivs 1 and no capability; what a thread kind may not do
 * fails with EPERM, is reported by name and thread, and calls the stop hook once; a process
 * cannot be made, a thread can; a clone3 answers ENOSYS. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/sandbox.h"

static int stops;

static void on_stop(void *ctx)
{
    (void)ctx;
    stops++;
}

/* The value of a /proc/self/status field ("Seccomp:"), or "". */
static const char *status_field(const char *key)
{
    static char val[128];
    val[0] = 0;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, key, strlen(key))) {
            sscanf(line + strlen(key), " %127s", val);
            break;
        }
    if (f)
        fclose(f);
    return val;
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #c);                      \
            _exit(10 + __LINE__ % 100);                                                            \
        }                                                                                          \
    } while (0)

static void *disk_thread(void *arg)
{
    (void)arg;
    CHECK(sandbox_thread_enter(SANDBOX_DISK) == 0);
    /* Reading what it holds is allowed; opening anything is not. */
    errno = 0;
    int fd = open("/etc/hostname", O_RDONLY);
    CHECK(fd < 0 && errno == EPERM);
    return NULL;
}

static void *vcpu_thread(void *arg)
{
    (void)arg;
    CHECK(sandbox_thread_enter(SANDBOX_VCPU) == 0);
    /* No network card in this run: no socket either. */
    errno = 0;
    CHECK(socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EPERM);
    return NULL;
}

static void *drain_thread(void *arg)
{
    (void)arg;
    CHECK(sandbox_thread_enter(SANDBOX_DRAIN) == 0);
    /* Files yes; a process or a socket no. */
    int fd = open("/etc/hostname", O_RDONLY);
    CHECK(fd >= 0);
    close(fd);
    errno = 0;
    CHECK(fork() < 0 && errno == EPERM);
    errno = 0;
    CHECK(socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EPERM);
    return NULL;
}

static void child(void)
{
    struct sandbox_config c = {.enabled = true};
    struct hv_err err;
    sandbox_on_violation(on_stop, NULL);
    if (sandbox_enter(&c, &err) < 0) {
        fprintf(stderr, "child: %s\n", err.msg);
        _exit(2);
    }
    CHECK(sandbox_active());
    CHECK(!strcmp(status_field("Seccomp:"), "2"));
    CHECK(!strcmp(status_field("NoNewPrivs:"), "1"));
    CHECK(!strcmp(status_field("CapEff:"), "0000000000000000"));
    CHECK(!strcmp(status_field("CapBnd:"), "0000000000000000"));
    /* The main thread's set: files, threads; no process, no raw socket. */
    int fd = open("/etc/hostname", O_RDONLY);
    CHECK(fd >= 0);
    close(fd);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, disk_thread, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(stops == 1);
    CHECK(pthread_create(&t, NULL, vcpu_thread, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(stops == 1); /* once, at the first refusal */
#ifndef __SANITIZE_ADDRESS__
    /* (A sanitizer build lets the main thread clone a process: LeakSanitizer's tracer.) */
    errno = 0;
    CHECK(fork() < 0 && errno == EPERM);
#endif
    CHECK(pthread_create(&t, NULL, drain_thread, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    errno = 0;
    CHECK(syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS);
    errno = 0;
    CHECK(socket(AF_PACKET, SOCK_RAW, 0) < 0 && errno == EPERM);
    /* The first refusal is the one reported, with its thread. */
    char buf[512] = "";
    FILE *m = fmemopen(buf, sizeof(buf), "w");
    CHECK(sandbox_report("hvprof test", m));
    fclose(m);
    fprintf(stderr, "child: %s", buf);
    CHECK(strstr(buf, "refused system call openat ("));
    CHECK(strstr(buf, "on the disk I/O thread"));
    _exit(0);
}

static void test_confined(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* the capability drop is only visible as root (CI runs as root) */
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0)
        child();
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Confinement refuses to start with threads it cannot see to (they would keep their
 * capabilities); the process stays as it was. */
static void *idle(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

static void test_refuses_with_threads(void **state)
{
    (void)state;
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        pthread_t t;
        pthread_create(&t, NULL, idle, NULL);
        struct sandbox_config c = {.enabled = true};
        struct hv_err err;
        CHECK(sandbox_enter(&c, &err) < 0);
        CHECK(strstr(err.msg, "2 threads at confinement"));
        CHECK(!sandbox_active());
        CHECK(!strcmp(status_field("Seccomp:"), "0"));
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Whom hvprof becomes: --user by name or number, sudo's user, else nobody else. */
static void test_choose_user(void **state)
{
    (void)state;
    struct sandbox_config c = {0};
    struct hv_err err;
    unsetenv("SUDO_UID");
    unsetenv("SUDO_GID");
    assert_int_equal(sandbox_choose_user(&c, NULL, &err), 0);
    assert_false(c.change_user);
    assert_int_equal(sandbox_choose_user(&c, "nobody", &err), 0);
    assert_true(c.change_user);
    assert_string_equal(c.user, "nobody");
    assert_int_equal(sandbox_choose_user(&c, "0", &err), 0);
    assert_int_equal(c.uid, 0);
    assert_int_equal(sandbox_choose_user(&c, "no-such-user-hvprof", &err), -1);
    assert_non_null(strstr(err.msg, "--user no-such-user-hvprof: no such user"));
    if (getuid() == 0) {
        setenv("SUDO_UID", "65534", 1);
        setenv("SUDO_GID", "65534", 1);
        assert_int_equal(sandbox_choose_user(&c, NULL, &err), 0);
        assert_true(c.change_user);
        assert_int_equal(c.uid, 65534);
        unsetenv("SUDO_UID");
        unsetenv("SUDO_GID");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_confined),
        cmocka_unit_test(test_refuses_with_threads),
        cmocka_unit_test(test_choose_user),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
