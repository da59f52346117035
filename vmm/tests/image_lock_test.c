/* Disk images locked as QEMU locks them (vmm/virtio/image_lock.h), checked against QEMU's own
 * qemu-io (Debian's qemu-utils): an image a QEMU process holds for writing is refused to a
 * read-write or read-only hvprof disk and given to the private overlay; an image hvprof holds
 * for writing is refused to qemu-io's writer and given to its shared read (-U). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/virtio/blk.h"

static char img[64];

static int setup(void **state)
{
    (void)state;
    snprintf(img, sizeof(img), "/tmp/hvprof-lock-XXXXXX");
    int fd = mkstemp(img);
    if (fd < 0 || ftruncate(fd, 1 << 20) < 0)
        return -1;
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(img);
    return 0;
}

/* qemu-io's exit status and output for `args` (a shell word list). */
static int qemu_io(const char *args, char *out, size_t len)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "qemu-io -f raw %s %s 2>&1", args, img);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Wait until some other process holds QEMU's "write" byte (101) of the image. */
static void wait_for_writer(void)
{
    int fd = open(img, O_RDONLY);
    assert_true(fd >= 0);
    for (int i = 0; i < 1000; i++) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 101, .l_len = 1};
        assert_int_equal(fcntl(fd, F_OFD_GETLK, &fl), 0);
        if (fl.l_type != F_UNLCK) {
            close(fd);
            return;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("qemu-io never locked %s", img);
}

static void test_qemu_writer_seen(void **state)
{
    (void)state;
    char out[4096];
    if (qemu_io("-c quit", out, sizeof(out)) != 0)
        fail_msg("qemu-io does not run (scripts/deps.sh installs qemu-utils): %s", out);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("qemu-io", "qemu-io", "-f", "raw", "-c", "sleep 5000", img, (char *)NULL);
        _exit(127);
    }
    wait_for_writer();
    struct virtio_blk b;
    struct hv_err err = {0};
    assert_int_equal(virtio_blk_open(&b, img, VIRTIO_BLK_RW, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "another process (a running VM, QEMU or hvprof) may write it"));
    assert_int_equal(virtio_blk_open(&b, img, VIRTIO_BLK_RO, NULL, &err), -1);
    assert_int_equal(virtio_blk_open(&b, img, VIRTIO_BLK_OVERLAY, NULL, &err), 0);
    virtio_blk_close(&b);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static void test_hvprof_writer_seen(void **state)
{
    (void)state;
    struct virtio_blk b;
    struct hv_err err = {0};
    assert_int_equal(virtio_blk_open(&b, img, VIRTIO_BLK_RW, NULL, &err), 0);
    char out[4096];
    assert_int_not_equal(qemu_io("-c 'read 0 512'", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "Failed to get \"write\" lock"));
    assert_int_equal(qemu_io("-U -r -c 'read 0 512'", out, sizeof(out)), 0);
    /* And a second hvprof writer. */
    struct virtio_blk b2;
    assert_int_equal(virtio_blk_open(&b2, img, VIRTIO_BLK_RW, NULL, &err), -1);
    virtio_blk_close(&b);
    /* Gone with the first: free again. */
    assert_int_equal(qemu_io("-c 'read 0 512'", out, sizeof(out)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_qemu_writer_seen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hvprof_writer_seen, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
