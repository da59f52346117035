/* The boot archive round trip: guest-mkarchive (the host writer) and the guest kernel's own cpio
 * "newc" reader (kernel/archive.c, compiled for the host here) agree, GNU cpio reads the archive
 * too, and the reader stays inside every truncated prefix of it (run under ASan in the
 * sanitizer build: each prefix lives in an exact-size heap buffer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernel/kernel.h"

static char dir[] = "/tmp/hvprof-archive-test.XXXXXX";
static char archive_path[512];

static void write_file(const char *name, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static uint8_t *read_archive(size_t *n)
{
    FILE *f = fopen(archive_path, "rb");
    assert_non_null(f);
    uint8_t *buf = malloc(1 << 20);
    *n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    write_file("one", "x", 1); /* 1 byte: data padding 3 */
    write_file("prog",
               "\x7f"
               "ELF-body-12345",
               15);
    char cmd[2048];
    snprintf(archive_path, sizeof(archive_path), "%s/out.cpio", dir);
    snprintf(cmd, sizeof(cmd), "%s %s one=%s/one workload=%s/prog", GUEST_MKARCHIVE, archive_path,
             dir, dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_reader_finds_what_writer_wrote(void **state)
{
    (void)state;
    size_t n;
    uint8_t *a = read_archive(&n);
    archive_init(a, n);
    u64 size = 0;
    const uint8_t *p = archive_find("workload", &size);
    assert_non_null(p);
    assert_int_equal(size, 15);
    assert_memory_equal(p,
                        "\x7f"
                        "ELF-body-12345",
                        15);
    p = archive_find("one", &size);
    assert_non_null(p);
    assert_int_equal(size, 1);
    assert_int_equal(p[0], 'x');
    assert_null(archive_find("work", &size)); /* prefixes do not match */
    assert_null(archive_find("missing", &size));
    assert_null(archive_find("TRAILER!!!", &size)); /* the end marker is not a file */
    free(a);
}

static void test_gnu_cpio_reads_it(void **state)
{
    (void)state;
    if (system("command -v cpio >/dev/null 2>&1") != 0)
        fail_msg("GNU cpio is not installed (scripts/deps.sh installs it)");
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "cpio -it --quiet < %s", archive_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[256] = {0};
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_string_equal(out, "one\nworkload\n");
}

static void test_truncated_prefixes_are_bounded(void **state)
{
    (void)state;
    size_t n;
    uint8_t *a = read_archive(&n);
    for (size_t len = 0; len <= n; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, a, len);
        archive_init(copy, len);
        u64 size = 0;
        const uint8_t *p = archive_find("workload", &size);
        if (p) { /* found only when the whole entry fits */
            assert_true(p >= copy && p + size <= copy + len);
            assert_int_equal(size, 15);
        }
        free(copy);
    }
    /* A corrupted magic or hex digit ends the search instead of misparsing. */
    a[3] = 'X';
    archive_init(a, n);
    u64 size;
    assert_null(archive_find("one", &size));
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_finds_what_writer_wrote),
        cmocka_unit_test(test_gnu_cpio_reads_it),
        cmocka_unit_test(test_truncated_prefixes_are_bounded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
