/* virtio-blk benchmark (not a test): what hvprof's block device costs on top of the file it
 * serves, measured side by side in one run on one image (page cache warm, so the file's own
 * speed is the memory copy and the syscall, and the device's share shows).
 *   - the raw file: pread/pwrite of the request size at the same offsets (the floor);
 *   - the device: one request at a time through a split virtqueue in a RAM of the benchmark's
 *     own, as a driver makes them (header, data, status; virtio_blk_process pops, checks, serves
 *     and returns it): reads, writes, and reads and writes through a private overlay (its first
 *     writes fill a new file: beside writes into a new sparse file, not a warm one).
 *   - the same image as qcow2 (qemu-img convert), plain and with compressed clusters, read
 *     through the device (vmm/qcow/qcow_image.h: QEMU's map and pread(), libqcow for
 *     compressed clusters) beside the raw image's device reads, in turns, medians of 5.
 * The guest's side (its driver, its exits) is not in it: the Linux test bed's numbers are in
 * docs/virtio.md.
 * Usage: bench_virtio_blk [MiB per measurement]   One line per measurement. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "vmm/tests/virtq_driver.h"
#include "vmm/virtio/blk.h"

#define QSIZE 256u
#define DESC  0x1000u
#define AVAIL 0x3000u
#define USED  0x4000u
#define HDR   0x6000u
#define STAT  0x6100u
#define DATA  0x10000u
#define DISK  (256ull << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define ROUNDS 5

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[n / 2];
}

struct rig {
    uint8_t *ram;
    struct gmem m;
    struct virtq q;
    struct vq_driver d;
    struct virtio_blk b;
};

static void setup_rig(struct rig *g, size_t ram_bytes)
{
    struct hv_err err = {0};
    g->ram = aligned_alloc(4096, ram_bytes);
    memset(g->ram, 0, ram_bytes);
    gmem_init(&g->m);
    if (gmem_add(&g->m, 0, ram_bytes, g->ram, &err) < 0) {
        fprintf(stderr, "bench_virtio_blk: %s\n", err.msg);
        exit(1);
    }
}

static void open_queue(struct rig *g, const char *path, enum virtio_blk_mode mode)
{
    struct hv_err err = {0};
    if (virtio_blk_open(&g->b, path, mode, NULL, &err) < 0) {
        fprintf(stderr, "bench_virtio_blk: %s\n", err.msg);
        exit(1);
    }
    g->q = (struct virtq){.size = QSIZE, .desc = DESC, .avail = AVAIL, .used = USED};
    g->d = (struct vq_driver){g->ram, DESC, AVAIL, USED, QSIZE, 0};
    memset(g->ram, 0, DATA);
    if (!virtq_enable(&g->q, &g->m)) {
        fprintf(stderr, "bench_virtio_blk: queue not enabled\n");
        exit(1);
    }
}

/* n requests of `len` bytes at consecutive offsets (wrapping in the disk); seconds taken. */
static double device_run(struct rig *g, uint32_t type, uint32_t len, unsigned n)
{
    uint64_t sectors = DISK / 512;
    double t0 = now_s();
    for (unsigned i = 0; i < n; i++) {
        uint64_t sector = ((uint64_t)i * (len / 512)) % sectors;
        memcpy(g->ram + HDR, &type, 4);
        memset(g->ram + HDR + 4, 0, 4);
        memcpy(g->ram + HDR + 8, &sector, 8);
        uint16_t dflags = VIRTQ_DESC_F_NEXT | (type == VIRTIO_BLK_T_OUT ? 0 : VIRTQ_DESC_F_WRITE);
        vqd_desc(&g->d, DESC, 0, HDR, 16, VIRTQ_DESC_F_NEXT, len ? 1 : 2); /* flush: no data */
        vqd_desc(&g->d, DESC, 1, DATA, len, dflags, 2);
        vqd_desc(&g->d, DESC, 2, STAT, 1, VIRTQ_DESC_F_WRITE, 0);
        vqd_publish(&g->d, 0);
        if (virtio_blk_process(&g->b, &g->q, &g->m) != 1 || g->ram[STAT] != VIRTIO_BLK_S_OK) {
            fprintf(stderr, "bench_virtio_blk: request %u failed\n", i);
            exit(1);
        }
    }
    return now_s() - t0;
}

static double file_run(int fd, uint8_t *buf, bool write, uint32_t len, unsigned n)
{
    double t0 = now_s();
    for (unsigned i = 0; i < n; i++) {
        off_t off = (off_t)(((uint64_t)i * len) % DISK);
        ssize_t got = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
        if (got != (ssize_t)len) {
            fprintf(stderr, "bench_virtio_blk: file I/O failed\n");
            exit(1);
        }
    }
    return now_s() - t0;
}

/* Writes into a new sparse file: what the overlay's first writes are, without the device. */
static double fresh_file_run(uint8_t *buf, uint32_t len, unsigned n)
{
    int fd = open("/var/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)DISK) < 0) {
        perror("bench_virtio_blk: a fresh file");
        exit(1);
    }
    double s = file_run(fd, buf, true, len, n);
    close(fd);
    return s;
}

static void line(const char *what, uint32_t len, unsigned n, double file_s, double dev_s)
{
    double mib = (double)len * n / (1 << 20);
    printf("%-22s %4u KiB requests: file %8.0f MiB/s %6.2f us/req | device %8.0f MiB/s %6.2f "
           "us/req | device/file time %.2fx\n",
           what, len / 1024, mib / file_s, file_s * 1e6 / n, mib / dev_s, dev_s * 1e6 / n,
           dev_s / file_s);
}

int main(int argc, char **argv)
{
    unsigned mib = argc > 1 ? (unsigned)atoi(argv[1]) : 1024;
    if (mib == 0)
        mib = 1024;
    char path[] = "/var/tmp/hvprof-blk-bench-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, (off_t)DISK) < 0) {
        perror("bench_virtio_blk: image");
        return 1;
    }
    struct rig g;
    setup_rig(&g, DATA + (1u << 20));
    uint8_t *buf = aligned_alloc(4096, 1u << 20);
    memset(buf, 0x5a, 1u << 20);
    memset(g.ram + DATA, 0x5a, 1u << 20);
    /* Warm the page cache over the whole image. */
    file_run(fd, buf, true, 1u << 20, (unsigned)(DISK >> 20));
    printf("image: %llu MiB in %s (page cache warm), %u MiB per measurement, one request at a "
           "time\n",
           (unsigned long long)(DISK >> 20), "/var/tmp", mib);
    static const uint32_t sizes[] = {4096, 65536, 524288};
    for (unsigned s = 0; s < 3; s++) {
        uint32_t len = sizes[s];
        unsigned n = (unsigned)(((uint64_t)mib << 20) / len);
        open_queue(&g, path, VIRTIO_BLK_RW);
        double fr = file_run(fd, buf, false, len, n);
        double dr = device_run(&g, VIRTIO_BLK_T_IN, len, n);
        line("read", len, n, fr, dr);
        double fw = file_run(fd, buf, true, len, n);
        double dw = device_run(&g, VIRTIO_BLK_T_OUT, len, n);
        line("write", len, n, fw, dw);
        virtio_blk_close(&g.b);
        /* The overlay: first writes copy nothing (whole blocks) but fill its file; reads then
         * come from it. */
        open_queue(&g, path, VIRTIO_BLK_OVERLAY);
        double ff = fresh_file_run(buf, len, n);
        double ow = device_run(&g, VIRTIO_BLK_T_OUT, len, n);
        line("overlay write (new)", len, n, ff, ow);
        double orr = device_run(&g, VIRTIO_BLK_T_IN, len, n);
        line("overlay read", len, n, fr, orr);
        virtio_blk_close(&g.b);
    }
    /* The same image as qcow2, plain and compressed, read through the device beside the raw
     * image's device reads (qemu-img writes them; their clusters in the page cache as the raw
     * image's are). */
    static const char *const kinds[] = {"qcow2", "qcow2 -c"};
    for (unsigned k = 0; k < 2; k++) {
        char q2[64], cmd[256];
        snprintf(q2, sizeof(q2), "%s.qcow2", path);
        snprintf(cmd, sizeof(cmd), "qemu-img convert -q %s -f raw -O qcow2 '%s' '%s'",
                 k ? "-c" : "", path, q2);
        if (system(cmd) != 0) {
            fprintf(stderr, "bench_virtio_blk: qemu-img (qemu-utils) is needed\n");
            return 1;
        }
        for (unsigned s = 0; s < 3; s++) {
            uint32_t len = sizes[s];
            unsigned n = (unsigned)(((uint64_t)mib << 20) / len);
            /* Raw and qcow2 in turns, ROUNDS times, each side's median: one pair alone
             * swings by a quarter at 512 KiB on this shared host (memory bandwidth). */
            double raws[ROUNDS], qs[ROUNDS];
            for (unsigned r = 0; r < ROUNDS; r++) {
                open_queue(&g, path, VIRTIO_BLK_RO);
                device_run(&g, VIRTIO_BLK_T_IN, len, n / 4 + 1); /* warm alike */
                raws[r] = device_run(&g, VIRTIO_BLK_T_IN, len, n);
                virtio_blk_close(&g.b);
                open_queue(&g, q2, VIRTIO_BLK_RO);
                device_run(&g, VIRTIO_BLK_T_IN, len, n / 4 + 1);
                qs[r] = device_run(&g, VIRTIO_BLK_T_IN, len, n);
                virtio_blk_close(&g.b);
            }
            double raw = median(raws, ROUNDS), q = median(qs, ROUNDS);
            double mb = (double)len * n / (1 << 20);
            printf("%-8s read %4u KiB requests: raw device %8.0f MiB/s %6.2f us/req | %s device "
                   "%8.0f MiB/s %6.2f us/req | %s/raw time %.2fx\n",
                   kinds[k], len / 1024, mb / raw, raw * 1e6 / n, kinds[k], mb / q, q * 1e6 / n,
                   kinds[k], q / raw);
        }
        unlink(q2);
    }
    /* A flush: fdatasync of the image (what the guest's fsync costs on this host's disk). */
    open_queue(&g, path, VIRTIO_BLK_RW);
    device_run(&g, VIRTIO_BLK_T_OUT, 4096, 1);
    double t0 = now_s();
    unsigned flushes = 20;
    for (unsigned i = 0; i < flushes; i++) {
        device_run(&g, VIRTIO_BLK_T_OUT, 4096, 1);
        device_run(&g, VIRTIO_BLK_T_FLUSH, 0, 1);
    }
    printf("flush after a 4 KiB write: %.2f ms each (fdatasync on /var/tmp's file system)\n",
           (now_s() - t0) * 1e3 / flushes);
    virtio_blk_close(&g.b);
    close(fd);
    unlink(path);
    free(buf);
    free(g.ram);
    return 0;
}
