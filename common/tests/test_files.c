/* common/files.h's whole-file reader: exact bytes and a NUL after them, an empty file, a /proc
 * file that says it is empty, the size bound, and inputs that are not files (a FIFO without a
 * writer must not block, a directory is refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/files.h"

static char dir[] = "/tmp/hvprof-files-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const void *data, size_t len)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    return path;
}

static void test_exact(void **state)
{
    (void)state;
    uint8_t bytes[70000];
    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (uint8_t)(i * 7 + 1);
    const char *path = write_file("bytes", bytes, sizeof(bytes));
    uint8_t *data;
    size_t size;
    struct hv_err err;
    assert_int_equal(hv_read_file(path, 1 << 20, &data, &size, &err), 0);
    assert_int_equal(size, sizeof(bytes));
    assert_memory_equal(data, bytes, sizeof(bytes));
    assert_int_equal(data[size], 0);
    free(data);

    path = write_file("empty", "", 0);
    assert_int_equal(hv_read_file(path, 1 << 20, &data, &size, &err), 0);
    assert_int_equal(size, 0);
    assert_int_equal(data[0], 0);
    free(data);
}

/* /proc/self/maps says 0 bytes in stat: read to its end all the same. */
static void test_proc(void **state)
{
    (void)state;
    uint8_t *data;
    size_t size;
    struct hv_err err;
    assert_int_equal(hv_read_file("/proc/self/maps", 1 << 24, &data, &size, &err), 0);
    assert_true(size > 100);
    assert_int_equal(strlen((char *)data), size);
    assert_non_null(strstr((char *)data, "[stack]"));
    free(data);
}

static void test_bound(void **state)
{
    (void)state;
    char big[5000];
    memset(big, 'x', sizeof(big));
    const char *path = write_file("big", big, sizeof(big));
    uint8_t *data = NULL;
    size_t size;
    struct hv_err err;
    assert_int_equal(hv_read_file(path, 4999, &data, &size, &err), -1);
    assert_non_null(strstr(err.msg, "larger than"));
    assert_non_null(strstr(err.msg, path));
    assert_null(data);
    assert_int_equal(hv_read_file(path, 5000, &data, &size, &err), 0);
    assert_int_equal(size, 5000);
    free(data);
}

static void test_not_files(void **state)
{
    (void)state;
    char fifo[256];
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    uint8_t *data;
    size_t size;
    struct hv_err err;
    assert_int_equal(hv_read_file(fifo, 1 << 20, &data, &size, &err), -1); /* no hang */
    assert_non_null(strstr(err.msg, "FIFO"));
    assert_int_equal(hv_read_file(dir, 1 << 20, &data, &size, &err), -1);
    assert_non_null(strstr(err.msg, "directory"));
    char missing[256];
    snprintf(missing, sizeof(missing), "%s/missing", dir);
    assert_int_equal(hv_read_file(missing, 1 << 20, &data, &size, &err), -1);
    assert_non_null(strstr(err.msg, "No such file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact),
        cmocka_unit_test(test_proc),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_not_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
