/* cli/run_opts.c: option handling, --guest demo resolution, and `hvprof run` end to end (the
 * real binary, the real loader, real KVM) with a tiny ELF64 kernel written by the test. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/tiny_elf.h"
#include "cli/run_opts.h"
#include "tests/common/need_kvm.h"

static const char *hvprof_bin;
static char tmpdir[64];

static int handle(struct run_opts *o, int opt, const char *arg, struct hv_err *err)
{
    return run_opts_handle(o, opt, arg, err);
}

static void test_defaults_and_values(void **state)
{
    (void)state;
    struct run_opts o;
    struct hv_err err = {0};
    run_opts_init(&o);
    assert_int_equal(o.vcpus, 1);
    assert_true(o.mem_bytes == 256ull << 20);
    assert_int_equal(handle(&o, RUN_OPT_VCPUS, "2", &err), 1);
    assert_int_equal(handle(&o, RUN_OPT_MEM, "1G", &err), 1);
    assert_int_equal(handle(&o, RUN_OPT_TIMEOUT, "1.5s", &err), 1);
    assert_int_equal(o.vcpus, 2);
    assert_true(o.mem_bytes == 1ull << 30);
    assert_true(o.timeout_s > 1.49 && o.timeout_s < 1.51);
    assert_int_equal(handle(&o, 'x', "", &err), 0); /* not ours */
}

static void test_errors(void **state)
{
    (void)state;
    struct run_opts o;
    struct hv_err err = {0};
    run_opts_init(&o);
    assert_int_equal(handle(&o, RUN_OPT_VCPUS, "0", &err), -1);
    assert_string_equal(err.msg, "--vcpus: 0 is out of range (1..1024)");
    assert_int_equal(handle(&o, RUN_OPT_VCPUS, "10000", &err), -1);
    assert_int_equal(handle(&o, RUN_OPT_MEM, "1M", &err), -1);
    assert_string_equal(err.msg, "--mem: 1M is below the minimum 16M");
    assert_int_equal(handle(&o, RUN_OPT_MEM, "16777217", &err), -1);
    assert_non_null(strstr(err.msg, "multiple of 4K"));
    assert_int_equal(handle(&o, RUN_OPT_GUEST, "linux", &err), -1);
    assert_non_null(strstr(err.msg, "only built-in one is 'demo'"));
    assert_int_equal(run_opts_finish(&o, &err), -1);
    assert_non_null(strstr(err.msg, "no guest given"));
    o.kernel = "/nonexistent/vmlinux";
    assert_int_equal(run_opts_finish(&o, &err), -1);
    assert_string_equal(err.msg,
                        "cannot read kernel '/nonexistent/vmlinux': No such file or directory");
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void test_demo_dir_from_env(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/hvprof-guest.elf", tmpdir);
    write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/hvprof-guest.cpio", tmpdir);
    write_file(path, "x", 1);
    setenv("HVPROF_GUEST_DIR", tmpdir, 1);
    struct run_opts o;
    struct hv_err err = {0};
    run_opts_init(&o);
    assert_int_equal(run_opts_handle(&o, RUN_OPT_GUEST, "demo", &err), 1);
    assert_int_equal(run_opts_finish(&o, &err), 0);
    assert_non_null(strstr(o.kernel, "/hvprof-guest.elf"));
    assert_non_null(o.initrd);
    assert_non_null(strstr(o.initrd, "/hvprof-guest.cpio"));
    setenv("HVPROF_GUEST_DIR", "/nonexistent", 1);
    run_opts_init(&o);
    o.guest = "demo";
    assert_int_equal(run_opts_finish(&o, &err), -1);
    assert_non_null(strstr(err.msg, "HVPROF_GUEST_DIR=/nonexistent"));
    unsetenv("HVPROF_GUEST_DIR");
}

/* An ELF64 ET_EXEC with one PT_LOAD at 1 MiB: writes "hi\n" to COM1, then 0x12a to the
 * debug-exit port (status 0x2a). Same bytes as vmm/tests' hello guest. */
static const uint8_t code_hello[] = {0x66, 0xba, 0xf8, 0x03, 0xb0, 0x68, 0xee, 0xb0, 0x69,
                                     0xee, 0xb0, 0x0a, 0xee, 0x66, 0xba, 0xf4, 0x00, 0xb8,
                                     0x2a, 0x01, 0x00, 0x00, 0xef, 0xf4, 0xeb, 0xfd};
/* cli; 1: hlt; jmp 1b */
static const uint8_t code_idle[] = {0xfa, 0xf4, 0xeb, 0xfd};

static void write_tiny_elf(const char *path, const uint8_t *code, size_t code_len)
{
    uint8_t img[TINY_ELF_CODE + 64];
    assert_true(tiny_elf_image(img, sizeof(img), code, code_len) > 0);
    write_file(path, img, sizeof(img));
}

/* Whether process pid has a handler for signal sig (proc(5): SigCgt, a hexadecimal mask whose
 * bit sig-1 stands for sig). */
static bool catches_signal(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool yes = false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long mask;
        if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
            yes = (mask >> (sig - 1)) & 1;
            break;
        }
    }
    fclose(f);
    return yes;
}

/* Run the hvprof binary; returns its exit status, stderr in errbuf. With sig != 0, send it
 * that signal 300 ms after it has a handler for it. */
static int run_hvprof_sig(char *const args[], char *errbuf, size_t errlen, int sig)
{
    char errpath[128];
    snprintf(errpath, sizeof(errpath), "%s/stderr", tmpdir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execv(hvprof_bin, args);
        _exit(127);
    }
    if (sig) {
        /* The signal is meant for hvprof, not for a process still loading it: wait until its
         * handler is installed (SigCgt in /proc/PID/status; a slow host may take long to exec
         * and load its libraries), then give the VM time to run. */
        for (int i = 0; i < 3000 && !catches_signal(pid, sig); i++)
            usleep(10 * 1000);
        usleep(300 * 1000);
        kill(pid, sig);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    FILE *f = fopen(errpath, "r");
    size_t n = f ? fread(errbuf, 1, errlen - 1, f) : 0;
    errbuf[n] = 0;
    if (f)
        fclose(f);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static int run_hvprof(char *const args[], char *errbuf, size_t errlen)
{
    return run_hvprof_sig(args, errbuf, errlen, 0);
}

static void test_cli_errors(void **state)
{
    (void)state;
    char err[1024], txt[128];
    snprintf(txt, sizeof(txt), "%s/notes.txt", tmpdir);
    write_file(txt, "hello, I am text\n", 17);
    char *a1[] = {"hvprof", "run", "--kernel", "/nonexistent", NULL};
    assert_int_equal(run_hvprof(a1, err, sizeof(err)), 2);
    assert_string_equal(err, "hvprof run: cannot read kernel '/nonexistent': No such file or "
                             "directory\n");
    char *a2[] = {"hvprof", "run", "--kernel", txt, NULL};
    assert_int_equal(run_hvprof(a2, err, sizeof(err)), 1);
    assert_non_null(strstr(err, "not an ELF64 kernel or a Linux bzImage"));
    char *a3[] = {"hvprof", "run", "--kernel", txt, "--vcpus", "0", NULL};
    assert_int_equal(run_hvprof(a3, err, sizeof(err)), 2);
    assert_string_equal(err, "hvprof run: --vcpus: 0 is out of range (1..1024)\n");
    char *a4[] = {"hvprof", "run", "--kernel", txt, "--mem", "1M", NULL};
    assert_int_equal(run_hvprof(a4, err, sizeof(err)), 2);
    assert_string_equal(err, "hvprof run: --mem: 1M is below the minimum 16M\n");
    char *a5[] = {"hvprof", "run", "--bogus", NULL};
    assert_int_equal(run_hvprof(a5, err, sizeof(err)), 2);
    assert_non_null(strstr(err, "unknown option '--bogus'"));
    char *a6[] = {"hvprof", "run", "--help", NULL};
    assert_int_equal(run_hvprof(a6, err, sizeof(err)), 0);
}

static void test_cli_runs_tiny_kernel(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char elf[128], con[128], err[1024];
    snprintf(elf, sizeof(elf), "%s/tiny.elf", tmpdir);
    snprintf(con, sizeof(con), "%s/console.txt", tmpdir);
    write_tiny_elf(elf, code_hello, sizeof(code_hello));
    char *args[] = {"hvprof", "run",   "--kernel", elf,         "--console", con, "--vcpus",
                    "2",      "--mem", "64M",      "--timeout", "30",        NULL};
    assert_int_equal(run_hvprof(args, err, sizeof(err)), 0x2a);
    assert_string_equal(err, "");
    char buf[64] = {0};
    FILE *f = fopen(con, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    assert_string_equal(buf, "hi\n");
}

/* SIGINT stops the VM cleanly (the vCPUs are kicked, the process exits 128 + 2). */
static void test_cli_sigint(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char elf[128], err[1024];
    snprintf(elf, sizeof(elf), "%s/idle.elf", tmpdir);
    write_tiny_elf(elf, code_idle, sizeof(code_idle));
    char *args[] = {"hvprof", "run", "--kernel", elf, "--vcpus", "2", "--timeout", "60", NULL};
    assert_int_equal(run_hvprof_sig(args, err, sizeof(err), SIGINT), 130);
    assert_string_equal(err, "hvprof run: stopped by signal 2\n");
    char *args2[] = {"hvprof", "run", "--kernel", elf, "--timeout", "200ms", NULL};
    assert_int_equal(run_hvprof(args2, err, sizeof(err)), 124);
    assert_non_null(strstr(err, "timeout"));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/hvprof\n", argv[0]);
        return 2;
    }
    hvprof_bin = argv[1];
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hvprof-cli-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_values),  cmocka_unit_test(test_errors),
        cmocka_unit_test(test_demo_dir_from_env),    cmocka_unit_test(test_cli_errors),
        cmocka_unit_test(test_cli_runs_tiny_kernel), cmocka_unit_test(test_cli_sigint),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return r;
}
