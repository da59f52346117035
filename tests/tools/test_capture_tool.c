/* hvprof-capture runs `hvprof record` whole and calls its capture once the guest stopped: on the
 * built-in test guest (no Linux, so no VMCOREINFO) the recording is written as by hvprof and the
 * capture says why it has nothing to keep; hvprof itself has no capture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "tests/common/need_kvm.h"

static char *run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = 0;
    *status = pclose(p);
    return out;
}

static void test_capture_hook(void **state)
{
    (void)state;
    const char *bin = getenv("HVPROF_BINARY_DIR");
    assert_non_null(bin);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "cd \"$(mktemp -d)\" && HVPROF_CAPTURE_GUEST=$PWD/cap.bin '%s/cli/hvprof-capture' "
             "record -o r.fxt --guest demo --duration 1s 2>&1; echo rc=$?; ls -s r.fxt; "
             "test -e cap.bin && echo captured",
             bin);
    int status;
    char *out = run(cmd, &status);
    printf("%s", out);
    assert_non_null(strstr(out, "rc=0"));
    assert_non_null(strstr(out, "hvprof-capture: capture: no VMCOREINFO in guest memory"));
    assert_null(strstr(out, "captured"));
    assert_null(strstr(out, "No such file"));
    /* The product has no capture. */
    snprintf(cmd, sizeof(cmd), "nm '%s/cli/hvprof' | grep -c lx_capture", bin);
    out = run(cmd, &status);
    assert_string_equal(out, "0\n");
    /* Without its file the tool refuses. */
    snprintf(cmd, sizeof(cmd), "env -u HVPROF_CAPTURE_GUEST '%s/cli/hvprof-capture' record 2>&1",
             bin);
    out = run(cmd, &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    assert_non_null(strstr(out, "usage: HVPROF_CAPTURE_GUEST=FILE hvprof-capture record"));
}

int main(void)
{
    hv_need_kvm("test_capture_tool");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_capture_hook)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
