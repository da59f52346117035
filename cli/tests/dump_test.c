/* `hvprof dump` on a third-party FXT file (counts, first records), on an hvprof recording (its
 * samples decoded with walk stop names), and on a file cut in the middle of a record (offset and
 * reason, status 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fxt/reader.h"
#include "schema/recording.h"

static const char *hvprof_bin;
static char fixture[4096];

static int run_dump(const char *args, char *out, size_t cap)
{
    char cmd[16384];
    int len = snprintf(cmd, sizeof(cmd), "%s dump %s 2>&1", hvprof_bin, args);
    assert_true(len > 0 && (size_t)len < sizeof(cmd));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_third_party_file(void **state)
{
    static char out[1 << 16];
    char args[8192];
    snprintf(args, sizeof(args), "--stats %s", fixture);
    assert_int_equal(run_dump(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "event          34592"));
    assert_non_null(strstr(out, "records        35463"));
    snprintf(args, sizeof(args), "%s | head -3", fixture);
    assert_int_equal(run_dump(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "0x00000008 metadata provider-info id=0 name=\"jane_tracing\""));
    assert_int_equal(run_dump("--help", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "usage: hvprof dump"));
}

static void test_hvprof_recording(void **state)
{
    char path[] = "/tmp/hvprof-dump-rec-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct fxt_writer w;
    struct hv_err err = {0};
    assert_int_equal(hvfxt_recording_open(&w, path, 1000000000ull, 1, "vm", &err), 0);
    uint64_t ks[2] = {0xffffffff81000010ull, 0xffffffff81000020ull}, rec[64];
    struct hvfxt_sample s = {
        .fields = HVFXT_SF_CONTINUATION | HVFXT_SF_PID | HVFXT_SF_BOOT_TS | HVFXT_SF_CPL |
                  HVFXT_SF_PC | HVFXT_SF_KERNEL_STACK | HVFXT_SF_WALK,
        .continuation = 9,
        .pid = hvfxt_koid_guest_process(2),
        .ts = 77,
        .pc = ks[0],
        .kernel_stack = ks,
        .n_kernel = 2,
        .walk = hvfxt_walk_word(HVFXT_STOP_UNMAPPED, HVFXT_STOP_DEFERRED, 0, 0)};
    size_t n = hvfxt_enc_sample(rec, 64, &s);
    assert_int_equal(fxt_writer_emit(&w, hvfxt_vcpu_provider(0), rec, n, &err), 0);
    assert_int_equal(fxt_writer_close(&w, &err), 0);
    static char out[1 << 16];
    char args[8192];
    snprintf(args, sizeof(args), "%s | grep sample", path);
    assert_int_equal(run_dump(args, out, sizeof(out)), 0);
    const char *want = " blob-type=0x80 bytes=80 sample continuation=9 pid=0x10000002 ts=77 cpl=0 "
                       "pc=0xffffffff81000010 kstack[2]=0xffffffff81000010,0xffffffff81000020 "
                       "walk=kstop:unmapped,ustop:deferred\n";
    if (!strstr(out, want))
        fail_msg("output lacks '%s':\n%s", want, out);
    snprintf(args, sizeof(args), "--stats %s", path);
    assert_int_equal(run_dump(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "samples            1"));
    unlink(path);
}

static void test_cut_file(void **state)
{
    static char out[1 << 16];
    char args[8192];
    char bad[] = "/tmp/hvprof-fxt-dump-XXXXXX";
    int fd = mkstemp(bad);
    assert_true(fd >= 0);
    const void *buf;
    size_t len;
    struct hv_err err;
    assert_int_equal(fxtr_map_file(fixture, &buf, &len, &err), 0);
    assert_int_equal(write(fd, buf, 0x58 + 8), 0x58 + 8); /* string record at 0x58 is 3 words */
    close(fd);
    fxtr_unmap_file(buf, len);
    snprintf(args, sizeof(args), "--stats %s", bad);
    /* A cut file shows what it holds, the cut said once, as report does (exit 0). */
    assert_int_equal(run_dump(args, out, sizeof(out)), 0);
    char want[256];
    snprintf(want, sizeof(want),
             "%s was cut at byte 96, inside the record that starts at byte 88: the 5 complete "
             "records before it are shown",
             bad);
    if (!strstr(out, want))
        fail_msg("output lacks '%s':\n%s", want, out);
    assert_non_null(strstr(out, "cut       at byte 96, inside a record of 24 bytes from byte 88"));
    assert_int_equal(run_dump(bad, out, sizeof(out)), 0);
    assert_non_null(strstr(out, want));
    unlink(bad);
}

int main(int argc, char **argv)
{
    const char *src = getenv("HVPROF_SOURCE_DIR");
    if (argc < 2 || !src) {
        fprintf(stderr, "usage: HVPROF_SOURCE_DIR=... %s /path/to/hvprof\n", argv[0]);
        return 2;
    }
    hvprof_bin = argv[1];
    snprintf(fixture, sizeof(fixture), "%s/fxt/tests/data/third_party/jane_tracing.fxt", src);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_third_party_file),
        cmocka_unit_test(test_hvprof_recording),
        cmocka_unit_test(test_cut_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
