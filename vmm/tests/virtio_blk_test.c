/* The virtio block device's requests and the split virtqueue under them (vmm/virtio/), driven
 * the way Linux's virtio_blk driver drives them: descriptors, available ring and used ring in a
 * guest RAM the test owns, a raw image in a temporary file. Then what a hostile driver may do:
 * loops, buffers outside RAM, writable before readable buffers, runaway indices, nested
 * indirect tables: each breaks the queue, never the host. Exact values from VIRTIO 1.2 5.2. A
 * qcow2 image QEMU wrote is read as QEMU reads it, the guest's writes kept in the overlay. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/virtio/blk.h"
#include "virtq_driver.h"

#define RAM_BYTES (1u << 20)
#define DESC      0x1000u
#define AVAIL     0x2000u
#define USED      0x3000u
#define QSIZE     16u
#define HDR       0x8000u /* request header */
#define DATA      0x10000u
#define STATUS    0x9000u
#define ITABLE    0xa000u /* an indirect table */
#define DISK      (64u * 1024)

struct t {
    uint8_t *ram;
    struct gmem m;
    struct virtq q;
    struct virtio_blk b;
    char path[64];
    struct vq_driver d;
};

static void put_desc(struct t *t, uint64_t table, uint16_t i, uint64_t addr, uint32_t len,
                     uint16_t flags, uint16_t next)
{
    vqd_desc(&t->d, table, i, addr, len, flags, next);
}

static void publish(struct t *t, uint16_t head)
{
    vqd_publish(&t->d, head);
}

static void put_header(struct t *t, uint32_t type, uint64_t sector)
{
    memset(t->ram + HDR, 0, 16);
    memcpy(t->ram + HDR, &type, 4);
    memcpy(t->ram + HDR + 8, &sector, 8);
}

/* header (readable), data (readable for OUT, writable otherwise), status (writable). */
static void request(struct t *t, uint32_t type, uint64_t sector, uint32_t len)
{
    put_header(t, type, sector);
    t->ram[STATUS] = 0xff;
    uint16_t dflags = VIRTQ_DESC_F_NEXT | (type == VIRTIO_BLK_T_OUT ? 0 : VIRTQ_DESC_F_WRITE);
    put_desc(t, DESC, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
    put_desc(t, DESC, 1, DATA, len, dflags, 2);
    put_desc(t, DESC, 2, STATUS, 1, VIRTQ_DESC_F_WRITE, 0);
    publish(t, 0);
}

static uint32_t used_len(struct t *t, uint16_t k, uint32_t *id)
{
    return vqd_used(&t->d, k, id);
}

static int open_disk(struct t *t, bool readonly)
{
    struct hv_err err = {0};
    int rc = virtio_blk_open(&t->b, t->path, readonly ? VIRTIO_BLK_RO : VIRTIO_BLK_RW, NULL, &err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err.msg);
    return rc;
}

static int setup(void **state)
{
    struct t *t = calloc(1, sizeof(*t));
    t->ram = calloc(1, RAM_BYTES);
    gmem_init(&t->m);
    struct hv_err err;
    if (gmem_add(&t->m, 0, RAM_BYTES, t->ram, &err) < 0)
        return -1;
    snprintf(t->path, sizeof(t->path), "/tmp/hvprof-blk-XXXXXX");
    int fd = mkstemp(t->path);
    if (fd < 0)
        return -1;
    uint8_t *img = malloc(DISK);
    for (unsigned i = 0; i < DISK; i++)
        img[i] = (uint8_t)(i * 7 + i / 512);
    if (write(fd, img, DISK) != DISK)
        return -1;
    free(img);
    close(fd);
    t->q = (struct virtq){.size = QSIZE, .desc = DESC, .avail = AVAIL, .used = USED};
    t->d = (struct vq_driver){t->ram, DESC, AVAIL, USED, QSIZE, 0};
    assert_true(virtq_enable(&t->q, &t->m));
    if (open_disk(t, false) < 0)
        return -1;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct t *t = *state;
    virtio_blk_close(&t->b);
    unlink(t->path);
    free(t->ram);
    free(t);
    return 0;
}

static void file_bytes(struct t *t, uint64_t off, void *out, size_t len)
{
    int fd = open(t->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, out, len, (off_t)off), (ssize_t)len);
    close(fd);
}

static void test_read_write_flush_id(void **state)
{
    struct t *t = *state;
    assert_int_equal(t->b.sectors, DISK / 512);
    /* IN: 2 sectors from sector 3. */
    request(t, VIRTIO_BLK_T_IN, 3, 1024);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    uint8_t want[1024];
    file_bytes(t, 3 * 512, want, sizeof(want));
    assert_memory_equal(t->ram + DATA, want, sizeof(want));
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    uint32_t id;
    assert_int_equal(used_len(t, 0, &id), 1024 + 1); /* data + status (2.7.8) */
    assert_int_equal(id, 0);
    assert_int_equal(*(uint16_t *)(t->ram + USED + 2), 1);
    /* OUT: one sector at sector 5 reaches the file. */
    memset(t->ram + DATA, 0xab, 512);
    request(t, VIRTIO_BLK_T_OUT, 5, 512);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    assert_int_equal(used_len(t, 1, &id), 1);
    uint8_t got[512], ab[512];
    memset(ab, 0xab, sizeof(ab));
    file_bytes(t, 5 * 512, got, sizeof(got));
    assert_memory_equal(got, ab, sizeof(got));
    /* FLUSH, GET_ID (the image's name, 20 bytes at most). */
    request(t, VIRTIO_BLK_T_FLUSH, 0, 0);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    memset(t->ram + DATA, 0, 32);
    request(t, VIRTIO_BLK_T_GET_ID, 0, 20);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    assert_memory_equal(t->ram + DATA, strrchr(t->path, '/') + 1, strlen(t->path) - 5);
    assert_int_equal(used_len(t, 3, &id), 20 + 1);
    assert_int_equal(t->b.reads, 1);
    assert_int_equal(t->b.writes, 1);
    assert_int_equal(t->b.flushes, 1);
    assert_int_equal(t->b.errors, 0);
}

static void test_errors_reported(void **state)
{
    struct t *t = *state;
    /* Past the end, a partial sector, an unknown type. */
    request(t, VIRTIO_BLK_T_IN, DISK / 512, 512);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_IOERR);
    request(t, VIRTIO_BLK_T_IN, DISK / 512 - 1, 1024);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_IOERR);
    request(t, VIRTIO_BLK_T_OUT, 1, 100);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_IOERR);
    request(t, 99, 0, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_UNSUPP);
    /* A host I/O error (the image's descriptor now read-only: pwrite fails) reaches the guest
     * as IOERR. */
    int ro = open(t->path, O_RDONLY);
    assert_true(ro >= 0);
    assert_true(dup2(ro, t->b.fd) >= 0);
    close(ro);
    request(t, VIRTIO_BLK_T_OUT, 2, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_IOERR);
    assert_int_equal(t->b.errors, 5);
    assert_false(t->q.broken); /* the guest's requests were answered, the queue is fine */
}

static void test_readonly(void **state)
{
    struct t *t = *state;
    virtio_blk_close(&t->b);
    assert_int_equal(open_disk(t, true), 0);
    assert_true(virtio_blk_features(&t->b) & (1ull << VIRTIO_BLK_F_RO));
    uint8_t before[512], after[512];
    file_bytes(t, 0, before, sizeof(before));
    memset(t->ram + DATA, 0x5a, 512);
    request(t, VIRTIO_BLK_T_OUT, 0, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_IOERR);
    file_bytes(t, 0, after, sizeof(after));
    assert_memory_equal(before, after, sizeof(before));
}

/* A private overlay: the guest reads what it wrote, the image never changes, the edge blocks a
 * write covers in part keep the image's bytes around it. */
static void test_overlay(void **state)
{
    struct t *t = *state;
    virtio_blk_close(&t->b);
    struct hv_err err = {0};
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_OVERLAY, NULL, &err), 0);
    assert_false(virtio_blk_features(&t->b) & (1ull << VIRTIO_BLK_F_RO));
    static uint8_t image[DISK], want[DISK];
    file_bytes(t, 0, image, DISK);
    memcpy(want, image, DISK);
    /* Bytes 3584-5119: the end of block 0 and the start of block 1. */
    memset(t->ram + DATA, 0x5a, 1536);
    request(t, VIRTIO_BLK_T_OUT, 7, 1536);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    memset(want + 3584, 0x5a, 1536);
    /* Block 2 whole. */
    memset(t->ram + DATA, 0x33, 4096);
    request(t, VIRTIO_BLK_T_OUT, 16, 4096);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    memset(want + 8192, 0x33, 4096);
    assert_int_equal(t->b.overlay_blocks, 3);
    /* One read across overlay and image blocks (0-2 written, 3 not), then one inside block 1. */
    memset(t->ram + DATA, 0, 16384);
    request(t, VIRTIO_BLK_T_IN, 0, 16384);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    assert_memory_equal(t->ram + DATA, want, 16384);
    request(t, VIRTIO_BLK_T_IN, 9, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_memory_equal(t->ram + DATA, want + 9 * 512, 512);
    request(t, VIRTIO_BLK_T_FLUSH, 0, 0);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    /* The image as it was; the overlay gone with the device. */
    static uint8_t after[DISK];
    file_bytes(t, 0, after, DISK);
    assert_memory_equal(after, image, DISK);
    assert_int_equal(t->b.errors, 0);
    virtio_blk_close(&t->b);
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_OVERLAY, NULL, &err), 0);
    request(t, VIRTIO_BLK_T_IN, 7, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_memory_equal(t->ram + DATA, image + 7 * 512, 512);
}

/* A qcow2 image QEMU wrote, asked for read-write: read through libqcow, the guest's writes in
 * the private overlay, the image never written. */
static void test_qcow2(void **state)
{
    struct t *t = *state;
    virtio_blk_close(&t->b);
    char q2[80], cmd[400];
    snprintf(q2, sizeof(q2), "%s.qcow2", t->path);
    snprintf(cmd, sizeof(cmd), "qemu-img convert -q -f raw -O qcow2 '%s' '%s' && chmod 0444 '%s'",
             t->path, q2, q2);
    if (system(cmd) != 0)
        fail_msg("qemu-img (qemu-utils) is needed: scripts/deps.sh installs it");
    static uint8_t image[DISK];
    file_bytes(t, 0, image, DISK);
    struct hv_err err = {0};
    if (virtio_blk_open(&t->b, q2, VIRTIO_BLK_RW, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(t->b.mode, VIRTIO_BLK_OVERLAY); /* a read-only file, opened */
    assert_string_equal(t->b.format, "qcow2");
    assert_int_equal(t->b.sectors, DISK / 512);
    request(t, VIRTIO_BLK_T_IN, 5, 4096);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    assert_memory_equal(t->ram + DATA, image + 5 * 512, 4096);
    memset(t->ram + DATA, 0x77, 1024);
    request(t, VIRTIO_BLK_T_OUT, 3, 1024);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    memset(t->ram + DATA, 0, 4096);
    request(t, VIRTIO_BLK_T_IN, 0, 4096);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_memory_equal(t->ram + DATA, image, 3 * 512);
    assert_int_equal(t->ram[DATA + 3 * 512], 0x77);
    assert_int_equal(t->ram[DATA + 5 * 512 - 1], 0x77);
    assert_memory_equal(t->ram + DATA + 5 * 512, image + 5 * 512, 4096 - 5 * 512);
    virtio_blk_close(&t->b);
    /* QEMU reads the image as it was. */
    snprintf(cmd, sizeof(cmd), "qemu-img compare -q -f raw -F qcow2 '%s' '%s'", t->path, q2);
    assert_int_equal(system(cmd), 0);
    unlink(q2);
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, NULL, &err), 0);
}

static void test_layouts(void **state)
{
    struct t *t = *state;
    /* The header split over two buffers, data and status in one writable buffer (any layout,
     * 2.7.4.3), then the same through an indirect table. */
    put_header(t, VIRTIO_BLK_T_IN, 1);
    put_desc(t, DESC, 4, HDR, 8, VIRTQ_DESC_F_NEXT, 7);
    put_desc(t, DESC, 7, HDR + 8, 8, VIRTQ_DESC_F_NEXT, 9);
    put_desc(t, DESC, 9, DATA, 513, VIRTQ_DESC_F_WRITE, 0);
    publish(t, 4);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    uint8_t want[512];
    file_bytes(t, 512, want, sizeof(want));
    assert_memory_equal(t->ram + DATA, want, sizeof(want));
    assert_int_equal(t->ram[DATA + 512], VIRTIO_BLK_S_OK);
    put_desc(t, ITABLE, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
    put_desc(t, ITABLE, 1, DATA, 512, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2);
    put_desc(t, ITABLE, 2, STATUS, 1, VIRTQ_DESC_F_WRITE, 0);
    put_desc(t, DESC, 3, ITABLE, 48, VIRTQ_DESC_F_INDIRECT, 0);
    put_header(t, VIRTIO_BLK_T_IN, 2);
    publish(t, 3);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    file_bytes(t, 1024, want, sizeof(want));
    assert_memory_equal(t->ram + DATA, want, sizeof(want));
    uint32_t id;
    assert_int_equal(used_len(t, 1, &id), 513);
    assert_int_equal(id, 3);
}

/* Each hostile chain breaks the queue: -1, and nothing more is taken from it. */
static void expect_broken(struct t *t)
{
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), -1);
    assert_true(t->q.broken);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), -1);
    /* The driver's reset and re-enable bring it back. */
    t->d.avail_idx = 0;
    *(uint16_t *)(t->ram + AVAIL + 2) = 0;
    assert_true(virtq_enable(&t->q, &t->m));
}

static void test_hostile_chains(void **state)
{
    struct t *t = *state;
    put_header(t, VIRTIO_BLK_T_IN, 0);
    /* A loop. */
    put_desc(t, DESC, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
    put_desc(t, DESC, 1, DATA, 512, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 0);
    publish(t, 0);
    expect_broken(t);
    /* A buffer past RAM, and one straddling its end. */
    put_desc(t, DESC, 0, RAM_BYTES + 4096, 16, 0, 0);
    publish(t, 0);
    expect_broken(t);
    put_desc(t, DESC, 0, RAM_BYTES - 8, 16, 0, 0);
    publish(t, 0);
    expect_broken(t);
    /* A readable buffer after a writable one. */
    put_desc(t, DESC, 0, STATUS, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
    put_desc(t, DESC, 1, HDR, 16, 0, 0);
    publish(t, 0);
    expect_broken(t);
    /* next past the table; a head past the table. */
    put_desc(t, DESC, 0, HDR, 16, VIRTQ_DESC_F_NEXT, QSIZE);
    publish(t, 0);
    expect_broken(t);
    publish(t, QSIZE + 3);
    expect_broken(t);
    /* More available than the queue holds. */
    *(uint16_t *)(t->ram + AVAIL + 2) = QSIZE + 1;
    expect_broken(t);
    /* Nested indirect tables; indirect with NEXT; a table of no whole descriptor. */
    put_desc(t, ITABLE, 0, ITABLE, 16, VIRTQ_DESC_F_INDIRECT, 0);
    put_desc(t, DESC, 0, ITABLE, 16, VIRTQ_DESC_F_INDIRECT, 0);
    publish(t, 0);
    expect_broken(t);
    put_desc(t, DESC, 0, ITABLE, 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 1);
    publish(t, 0);
    expect_broken(t);
    put_desc(t, DESC, 0, ITABLE, 24, VIRTQ_DESC_F_INDIRECT, 0);
    publish(t, 0);
    expect_broken(t);
    /* An indirect loop. */
    put_desc(t, ITABLE, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
    put_desc(t, ITABLE, 1, DATA, 16, VIRTQ_DESC_F_NEXT, 0);
    put_desc(t, DESC, 0, ITABLE, 32, VIRTQ_DESC_F_INDIRECT, 0);
    publish(t, 0);
    expect_broken(t);
    /* No writable byte for the status: answered as nothing written, the queue stays. */
    put_desc(t, DESC, 0, HDR, 16, 0, 0);
    publish(t, 0);
    assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
    uint32_t id;
    assert_int_equal(used_len(t, 0, &id), 0);
}

static void test_enable_checks(void **state)
{
    struct t *t = *state;
    struct virtq q = {.size = 12, .desc = DESC, .avail = AVAIL, .used = USED}; /* not 2^n */
    assert_false(virtq_enable(&q, &t->m));
    q = (struct virtq){.size = 16, .desc = DESC + 8, .avail = AVAIL, .used = USED};
    assert_false(virtq_enable(&q, &t->m)); /* desc not 16-aligned */
    q = (struct virtq){.size = 16, .desc = DESC, .avail = AVAIL, .used = RAM_BYTES - 64};
    assert_false(virtq_enable(&q, &t->m)); /* used ring past RAM */
    q = (struct virtq){.size = 512, .desc = DESC, .avail = AVAIL, .used = USED};
    assert_false(virtq_enable(&q, &t->m)); /* more than offered */
    assert_int_equal(virtq_pop(&q, &t->m, &t->b.req), -1);
}

/* The sector-0 rule (vmm/image/format.h): a guest that writes a qcow2 header (naming any file
 * on the host as its backing file) into the first sector of a raw disk that was probed would
 * turn the next probe of that disk into a window onto the file: refused, the image untouched;
 * other first sectors (a partition table) pass, and so does anything once format=raw is said. */
static void test_probed_raw_sector0(void **state)
{
    struct t *t = *state;
    virtio_blk_close(&t->b);
    struct hv_err err = {0};
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, NULL, &err), 0);
    assert_true(t->b.probed_raw);
    assert_string_equal(t->b.format, "raw (probed)");
    static uint8_t before[512], after[512];
    file_bytes(t, 0, before, sizeof(before));
    const char *const heads[] = {"QFI\xfb\0\0\0\3", "KDMV", "vhdxfile", "conectix",
                                 "# Disk DescriptorFile\nversion=1\n"};
    for (unsigned i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        memset(t->ram + DATA, 0, 1024);
        memcpy(t->ram + DATA, heads[i], strlen(heads[i]) + (i == 0 ? 1 : 0));
        if (i == 0) { /* a backing file name, as the attack writes it */
            memcpy(t->ram + DATA, "QFI\xfb\0\0\0\3", 8);
            memcpy(t->ram + DATA + 512, "/var/lib/libvirt/images/other.qcow2", 36);
        }
        request(t, VIRTIO_BLK_T_OUT, 0, 1024);
        assert_int_equal(virtio_blk_process(&t->b, &t->q, &t->m), 1);
        assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_IOERR);
        file_bytes(t, 0, after, sizeof(after));
        assert_memory_equal(before, after, sizeof(after));
    }
    assert_int_equal(t->b.sector0_refused, 5);
    /* A partition table (MBR signature) probes raw: written. */
    memset(t->ram + DATA, 0, 512);
    t->ram[DATA + 510] = 0x55, t->ram[DATA + 511] = 0xaa;
    request(t, VIRTIO_BLK_T_OUT, 0, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    file_bytes(t, 0, after, sizeof(after));
    assert_int_equal(after[511], 0xaa);
    /* The header in a later sector is only data. */
    memcpy(t->ram + DATA, "QFI\xfb", 4);
    request(t, VIRTIO_BLK_T_OUT, 1, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    virtio_blk_close(&t->b);
    /* format=raw given: the user said what the disk is; sector 0 is the guest's. */
    struct image_opts raw = {.format = IMAGE_FORMAT_RAW};
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, &raw, &err), 0);
    assert_false(t->b.probed_raw);
    request(t, VIRTIO_BLK_T_OUT, 0, 512);
    virtio_blk_process(&t->b, &t->q, &t->m);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    virtio_blk_close(&t->b);
    /* ... and it is then served raw, never as the qcow2 image its first bytes now claim. */
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, &raw, &err), 0);
    assert_null(t->b.qcow);
    assert_string_equal(t->b.format, "raw");
    virtio_blk_close(&t->b);
    /* Probed now, it is a qcow2 image: QEMU's check refuses this one (no valid tables). */
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, NULL, &err), -1);
    /* format=qcow2 on a raw image: refused, nothing guessed. */
    struct image_opts q = {.format = IMAGE_FORMAT_QCOW2};
    memset(t->ram + DATA, 0, 512);
    request(t, VIRTIO_BLK_T_OUT, 0, 512);
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, &raw, &err), 0);
    virtio_blk_process(&t->b, &t->q, &t->m);
    virtio_blk_close(&t->b);
    assert_int_equal(virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, &q, &err), -1);
    assert_non_null(strstr(err.msg, "format=qcow2 given, but it is not a qcow2 image"));
    assert_int_equal(open_disk(t, false), 0); /* for teardown */
}

static void test_config_and_open(void **state)
{
    struct t *t = *state;
    uint8_t cfg[24];
    virtio_blk_config_read(&t->b, 0, cfg, sizeof(cfg));
    uint64_t cap;
    uint32_t blk, seg;
    memcpy(&cap, cfg, 8);
    memcpy(&seg, cfg + 12, 4);
    memcpy(&blk, cfg + 20, 4);
    assert_int_equal(cap, DISK / 512);
    assert_int_equal(blk, 512);
    assert_int_equal(seg, VIRTQ_MAX_SEGS - 2);
    uint64_t f = virtio_blk_features(&t->b);
    assert_true(f & (1ull << VIRTIO_F_VERSION_1));
    assert_true(f & (1ull << VIRTIO_BLK_F_FLUSH));
    assert_false(f & (1ull << VIRTIO_BLK_F_RO));
    /* The image is locked: a second writer is refused. */
    struct virtio_blk other;
    struct hv_err err = {0};
    assert_int_equal(virtio_blk_open(&other, t->path, VIRTIO_BLK_RW, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "in use by another process"));
    /* Neither raw nor qcow2: VMDK's magic gets the conversion command; a qcow2 header over
     * garbage, refused by QEMU's own check before libqcow reads it. */
    char q2[] = "/tmp/hvprof-qcow2-XXXXXX";
    int fd = mkstemp(q2);
    assert_true(fd >= 0);
    uint8_t hdr[4096] = {'K', 'D', 'M', 'V'};
    assert_int_equal(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    assert_int_equal(virtio_blk_open(&other, q2, VIRTIO_BLK_RO, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "VMDK"));
    assert_non_null(strstr(err.msg, "qemu-img convert -f vmdk -O raw"));
    memcpy(hdr, "QFI\xfb", 4);
    assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
    close(fd);
    assert_int_equal(virtio_blk_open(&other, q2, VIRTIO_BLK_RO, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "qcow version 0"));
    unlink(q2);
    assert_int_equal(virtio_blk_open(&other, "/nonexistent/disk.img", VIRTIO_BLK_RO, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/disk.img"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_write_flush_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qcow2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_chains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enable_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_and_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probed_raw_sector0, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
