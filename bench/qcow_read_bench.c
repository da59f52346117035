/* qcow2 read paths side by side (benchmark, not a test; issue 30's comparison): the same
 * 256 MiB of data (this host's programs and libraries) as a raw file and as qcow2 (qemu-img
 * convert, plain and with compressed clusters), page cache warm, read one request at a time at
 * consecutive offsets by
 *   - pread() of the raw file (the floor);
 *   - hvprof's reader (vmm/qcow/qcow_image.h: QEMU's map and pread(), libqcow for compressed
 *     clusters, which it keeps decompressed), what the block device calls;
 *   - QEMU's own block layer out of process: qemu-storage-daemon exporting the image over NBD
 *     on a Unix socket, read with libnbd (nbd_pread), the other candidate.
 * Each kind in turns, ROUNDS rounds, medians. No virtio queue in it: bench_virtio_blk measures
 * the device around the reader.
 * Usage: bench_qcow_read [MiB per measurement]   (default 64, at most 128: the warm-up reads
 * the disk's other half). Needs qemu-img and
 * qemu-storage-daemon (qemu-utils, qemu-system-common). */
#include <errno.h>
#include <fcntl.h>
#include <libnbd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "vmm/qcow/qcow_image.h"

#define DISK   (256ull << 20)
#define ROUNDS 5

extern char **environ;

static void die(const char *what)
{
    fprintf(stderr, "bench_qcow_read: %s\n", what);
    exit(1);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[n / 2];
}

enum reader { RAW, HVPROF, NBD };

struct readers {
    int raw_fd;
    struct qcow_image *q;
    struct nbd_handle *nbd;
    uint8_t *buf;
};

/* n reads of `len` bytes at consecutive offsets from `base` (wrapping in the disk); seconds
 * taken. */
static double run(struct readers *r, enum reader how, uint64_t base, uint32_t len, unsigned n)
{
    struct hv_err err = {0};
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        uint64_t off = (base + (uint64_t)i * len) % DISK;
        bool ok;
        if (how == RAW) {
            ok = pread(r->raw_fd, r->buf, len, (off_t)off) == (ssize_t)len;
        } else if (how == HVPROF) {
            struct iovec iov = {r->buf, len};
            ok = qcow_image_readv(r->q, &iov, 1, off, &err);
        } else {
            ok = nbd_pread(r->nbd, r->buf, len, off, 0) == 0;
        }
        if (!ok)
            die(how == NBD ? nbd_get_error() : err.msg[0] ? err.msg : "a raw read failed");
    }
    return (double)(now_ns() - t0) * 1e-9;
}

/* qemu-storage-daemon exporting `image` read-only as NBD export "disk" on `sock`. */
static pid_t start_daemon(const char *image, const char *sock)
{
    char file[4200], server[4200];
    snprintf(file, sizeof(file), "driver=file,node-name=file,filename=%s,read-only=on", image);
    snprintf(server, sizeof(server), "addr.type=unix,addr.path=%s", sock);
    char *argv[] = {"qemu-storage-daemon",
                    "--blockdev",
                    file,
                    "--blockdev",
                    "driver=qcow2,node-name=qcow,file=file,read-only=on",
                    "--nbd-server",
                    server,
                    "--export",
                    "type=nbd,id=exp,node-name=qcow,name=disk",
                    NULL};
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
        die("qemu-storage-daemon (qemu-system-common) cannot be run");
    for (int i = 0; i < 500; i++) { /* its socket, within 5 s */
        struct stat st;
        if (stat(sock, &st) == 0)
            return pid;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    die("qemu-storage-daemon did not open its socket");
    return -1;
}

/* DISK bytes of the files under /usr/bin and /usr/lib into fd; how many were written. */
static uint64_t fill_from_files(int fd, uint8_t *buf)
{
    FILE *list = popen("find /usr/bin /usr/lib -xdev -type f -size +64k 2>/dev/null", "r");
    if (!list)
        die("find");
    char name[4096];
    uint64_t at = 0;
    while (at < DISK && fgets(name, sizeof(name), list)) {
        name[strcspn(name, "\n")] = 0;
        int in = open(name, O_RDONLY | O_CLOEXEC);
        if (in < 0)
            continue;
        ssize_t got;
        while (at < DISK && (got = read(in, buf, 1u << 20)) > 0) {
            size_t take = DISK - at < (uint64_t)got ? (size_t)(DISK - at) : (size_t)got;
            if (pwrite(fd, buf, take, (off_t)at) != (ssize_t)take)
                die("writing the raw image");
            at += take;
        }
        close(in);
    }
    pclose(list);
    return at;
}

static void stop_daemon(pid_t pid)
{
    kill(pid, SIGTERM);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    unsigned mib = argc > 1 ? (unsigned)atoi(argv[1]) : 64;
    if (mib == 0 || mib > 128)
        mib = 64;
    char dir[] = "/var/tmp/hvprof-qcow-bench-XXXXXX";
    if (!mkdtemp(dir))
        die("a directory in /var/tmp");
    char raw[256], q2[256], sock[256], cmd[1024];
    snprintf(raw, sizeof(raw), "%s/disk.raw", dir);
    snprintf(q2, sizeof(q2), "%s/disk.qcow2", dir);
    snprintf(sock, sizeof(sock), "%s/nbd.sock", dir);
    /* Data as a system disk holds: this host's own programs and libraries, one after the
     * other (compressed by -c about as a root file system is), so that the compressed image
     * costs what a cloud image's clusters cost. */
    struct readers r = {.buf = aligned_alloc(4096, 1u << 20)};
    r.raw_fd = open(raw, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (r.raw_fd < 0 || !r.buf)
        die("the raw image");
    uint64_t filled = fill_from_files(r.raw_fd, r.buf);
    if (filled < DISK)
        die("not enough files under /usr to fill the image");
    printf("image: %llu MiB in /var/tmp (page cache warm), %u MiB per measurement, one read at a "
           "time, medians of %d rounds in turns\n",
           (unsigned long long)(DISK >> 20), mib, ROUNDS);
    static const char *const kinds[] = {"qcow2", "qcow2 -c"};
    static const uint32_t sizes[] = {4096, 65536, 524288};
    for (unsigned k = 0; k < 2; k++) {
        snprintf(cmd, sizeof(cmd), "qemu-img convert -q %s -f raw -O qcow2 '%s' '%s'",
                 k ? "-c" : "", raw, q2);
        if (system(cmd) != 0)
            die("qemu-img (qemu-utils) is needed");
        struct hv_err err = {0};
        if (qcow_image_open(&r.q, q2, NULL, &err) < 0)
            die(err.msg);
        unlink(sock);
        pid_t daemon = start_daemon(q2, sock);
        r.nbd = nbd_create();
        if (!r.nbd || nbd_set_export_name(r.nbd, "disk") < 0 || nbd_connect_unix(r.nbd, sock) < 0)
            die(nbd_get_error());
        for (unsigned s = 0; s < 3; s++) {
            uint32_t len = sizes[s];
            unsigned n = (unsigned)(((uint64_t)mib << 20) / len);
            double t[3][ROUNDS];
            for (unsigned round = 0; round < ROUNDS; round++)
                for (unsigned how = RAW; how <= NBD; how++) {
                    /* Warm alike, in the disk's other half: what the measured reads find kept
                     * (hvprof's decompressed clusters) is what they read themselves. */
                    run(&r, how, DISK / 2, len, n / 4 + 1);
                    t[how][round] = run(&r, how, 0, len, n);
                }
            double raw_s = median(t[RAW], ROUNDS), hv = median(t[HVPROF], ROUNDS),
                   nbd = median(t[NBD], ROUNDS);
            printf("%-8s read %4u KiB: raw pread %7.2f us | hvprof %8.2f us (%5.2fx) | "
                   "qemu-storage-daemon + libnbd %8.2f us (%5.2fx)\n",
                   kinds[k], len / 1024, raw_s * 1e6 / n, hv * 1e6 / n, hv / raw_s, nbd * 1e6 / n,
                   nbd / raw_s);
        }
        nbd_shutdown(r.nbd, 0);
        nbd_close(r.nbd);
        stop_daemon(daemon);
        qcow_image_close(r.q);
        unlink(q2);
    }
    close(r.raw_fd);
    unlink(raw);
    unlink(sock);
    rmdir(dir);
    free(r.buf);
    return 0;
}
