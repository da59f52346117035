/* The virtio-MMIO transport (vmm/virtio/mmio.c) driven through its registers the way Linux's
 * virtio_mmio and virtio_blk drivers probe and use a block device (VIRTIO 1.2 3.1.1 and 4.2.3):
 * identification, reset, the status and feature handshake, queue set-up, a read request, the
 * interrupt and its acknowledgement. Then what a confused or hostile driver may do: features it
 * was not offered, a legacy driver, narrow accesses to control registers, a queue changed while
 * ready, a bad queue layout, a broken queue: each is refused or ends in DEVICE_NEEDS_RESET. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "virtq_driver.h"
#include "vmm/virtio/blk.h"
#include "vmm/virtio/mmio.h"

#define RAM_BYTES (1u << 20)
#define DESC      0x1000u
#define AVAIL     0x2000u
#define USED      0x3000u
#define HDR       0x8000u
#define STATUS    0x9000u
#define DATA      0x10000u

struct t {
    uint8_t *ram;
    struct gmem m;
    struct virtio_blk b;
    struct virtio_mmio d;
    struct vq_driver v;
    char path[64];
    int raised, lowered;
    bool line;
};

static void irq(void *ctx, bool level)
{
    struct t *t = ctx;
    t->line = level;
    if (level)
        t->raised++;
    else
        t->lowered++;
}

static uint32_t rd(struct t *t, uint32_t off)
{
    uint32_t v;
    virtio_mmio_access(&t->d, off, false, (uint8_t *)&v, 4);
    return v;
}

static void wr(struct t *t, uint32_t off, uint32_t v)
{
    virtio_mmio_access(&t->d, off, true, (uint8_t *)&v, 4);
}

static int setup(void **state)
{
    struct t *t = calloc(1, sizeof(*t));
    t->ram = calloc(1, RAM_BYTES);
    gmem_init(&t->m);
    struct hv_err err;
    if (gmem_add(&t->m, 0, RAM_BYTES, t->ram, &err) < 0)
        return -1;
    snprintf(t->path, sizeof(t->path), "/tmp/hvprof-mmio-XXXXXX");
    int fd = mkstemp(t->path);
    uint8_t sector[512];
    for (unsigned s = 0; s < 16; s++) {
        memset(sector, 0x10 + s, sizeof(sector));
        if (write(fd, sector, sizeof(sector)) != (ssize_t)sizeof(sector))
            return -1;
    }
    close(fd);
    if (virtio_blk_open(&t->b, t->path, VIRTIO_BLK_RW, NULL, &err) < 0)
        return -1;
    virtio_mmio_init(&t->d, &virtio_blk_ops, &t->b, &t->m, irq, t);
    t->v = (struct vq_driver){t->ram, DESC, AVAIL, USED, 16, 0};
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct t *t = *state;
    virtio_mmio_destroy(&t->d);
    virtio_blk_close(&t->b);
    unlink(t->path);
    free(t->ram);
    free(t);
    return 0;
}

/* 3.1.1 steps 1-6 and 4.2.3.2: what Linux does before the first request. */
static void probe(struct t *t, uint64_t accept)
{
    assert_int_equal(rd(t, 0x000), 0x74726976); /* "virt" */
    assert_int_equal(rd(t, 0x004), 2);
    assert_int_equal(rd(t, 0x008), 2); /* block device */
    wr(t, 0x070, 0);
    wr(t, 0x070, VIRTIO_STATUS_ACKNOWLEDGE);
    wr(t, 0x070, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
    wr(t, 0x014, 0);
    uint64_t offered = rd(t, 0x010);
    wr(t, 0x014, 1);
    offered |= (uint64_t)rd(t, 0x010) << 32;
    assert_int_equal(offered, virtio_blk_features(&t->b));
    wr(t, 0x024, 0);
    wr(t, 0x020, (uint32_t)accept);
    wr(t, 0x024, 1);
    wr(t, 0x020, (uint32_t)(accept >> 32));
    wr(t, 0x070, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK);
}

static void setup_queue(struct t *t)
{
    wr(t, 0x030, 0);
    assert_int_equal(rd(t, 0x044), 0);
    assert_int_equal(rd(t, 0x034), VIRTQ_MAX_SIZE);
    wr(t, 0x038, 16);
    wr(t, 0x080, DESC);
    wr(t, 0x084, 0);
    wr(t, 0x090, AVAIL);
    wr(t, 0x094, 0);
    wr(t, 0x0a0, USED);
    wr(t, 0x0a4, 0);
    wr(t, 0x044, 1);
}

static void read_request(struct t *t, uint64_t sector)
{
    memset(t->ram + HDR, 0, 16);
    memcpy(t->ram + HDR + 8, &sector, 8);
    vqd_desc(&t->v, DESC, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
    vqd_desc(&t->v, DESC, 1, DATA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
    vqd_desc(&t->v, DESC, 2, STATUS, 1, VIRTQ_DESC_F_WRITE, 0);
    vqd_publish(&t->v, 0);
}

static const uint64_t ACCEPT =
    1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_BLK_F_FLUSH | 1ull << VIRTIO_BLK_F_BLK_SIZE;

static void test_linux_like_read(void **state)
{
    struct t *t = *state;
    probe(t, ACCEPT);
    assert_true(rd(t, 0x070) & VIRTIO_STATUS_FEATURES_OK);
    setup_queue(t);
    assert_int_equal(rd(t, 0x044), 1);
    wr(t, 0x070, rd(t, 0x070) | VIRTIO_STATUS_DRIVER_OK);
    /* The capacity from the configuration space, as two 32-bit reads (4.2.2.2). */
    uint64_t cap = rd(t, 0x100) | (uint64_t)rd(t, 0x104) << 32;
    assert_int_equal(cap, 16);
    read_request(t, 7);
    wr(t, 0x050, 0); /* QueueNotify */
    assert_int_equal(t->raised, 1);
    assert_true(t->line);
    assert_int_equal(rd(t, 0x060), VIRTIO_MMIO_INT_VRING);
    assert_int_equal(vqd_used_idx(&t->v), 1);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    assert_int_equal(t->ram[DATA], 0x10 + 7);
    assert_int_equal(t->ram[DATA + 511], 0x10 + 7);
    wr(t, 0x064, VIRTIO_MMIO_INT_VRING); /* InterruptACK */
    assert_int_equal(rd(t, 0x060), 0);
    assert_false(t->line);
    /* The driver asks for no interrupt (2.7.7): served, not raised. */
    t->ram[AVAIL] = 1;
    read_request(t, 3);
    wr(t, 0x050, 0);
    assert_int_equal(t->raised, 1);
    assert_int_equal(vqd_used_idx(&t->v), 2);
    assert_int_equal(t->ram[DATA], 0x10 + 3);
}

static void test_feature_negotiation(void **state)
{
    struct t *t = *state;
    /* A legacy driver (no VERSION_1) and one accepting what was not offered: FEATURES_OK
     * reads back clear (3.1.1 step 6). */
    probe(t, 1ull << VIRTIO_BLK_F_FLUSH);
    assert_false(rd(t, 0x070) & VIRTIO_STATUS_FEATURES_OK);
    probe(t, ACCEPT | 1ull << 40);
    assert_false(rd(t, 0x070) & VIRTIO_STATUS_FEATURES_OK);
    probe(t, ACCEPT);
    assert_true(rd(t, 0x070) & VIRTIO_STATUS_FEATURES_OK);
    /* Features are fixed once accepted. */
    wr(t, 0x024, 1);
    wr(t, 0x020, 0);
    wr(t, 0x070,
       VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |
           VIRTIO_STATUS_DRIVER_OK);
    assert_true(t->d.drv_features & (1ull << VIRTIO_F_VERSION_1));
}

/* 3.1.1: a driver whose FEATURES_OK was refused may still write DRIVER_OK; it is not served. */
static void test_refused_features_not_served(void **state)
{
    struct t *t = *state;
    probe(t, 1ull << VIRTIO_BLK_F_FLUSH); /* legacy: refused */
    assert_false(rd(t, 0x070) & VIRTIO_STATUS_FEATURES_OK);
    setup_queue(t);
    wr(t, 0x070, rd(t, 0x070) | VIRTIO_STATUS_DRIVER_OK);
    read_request(t, 7);
    wr(t, 0x050, 0);
    assert_int_equal(vqd_used_idx(&t->v), 0);
    assert_int_equal(t->b.reads, 0);
    assert_int_equal(t->raised, 0);
}

/* Once the VM is stopping no request is taken (one whose data is moving is abandoned between
 * two slices: tests/integration/test_hostile_bounds.c); the registers' lock is free after. */
static _Atomic bool stop_flag;
static void test_stop_abandons_request(void **state)
{
    struct t *t = *state;
    probe(t, ACCEPT);
    setup_queue(t);
    wr(t, 0x070, rd(t, 0x070) | VIRTIO_STATUS_DRIVER_OK);
    t->b.stop = &stop_flag;
    atomic_store(&stop_flag, true);
    read_request(t, 7);
    wr(t, 0x050, 0);
    assert_int_equal(vqd_used_idx(&t->v), 0); /* the VM is stopping: nothing new is taken */
    assert_int_equal(t->b.reads, 0);
    assert_int_equal(t->raised, 0);
    atomic_store(&stop_flag, false);
    wr(t, 0x050, 0); /* (a VM that went on: the request is still there) */
    assert_int_equal(vqd_used_idx(&t->v), 1);
    assert_int_equal(t->ram[STATUS], VIRTIO_BLK_S_OK);
    assert_int_equal(pthread_mutex_trylock(&t->d.lock), 0); /* released after the request */
    pthread_mutex_unlock(&t->d.lock);
    t->b.stop = NULL;
}

static void test_hostile_registers(void **state)
{
    struct t *t = *state;
    probe(t, ACCEPT);
    /* Narrow and misaligned accesses to control registers do nothing; reads give 0. */
    uint16_t h = 0xffff;
    virtio_mmio_access(&t->d, 0x000, false, (uint8_t *)&h, 2);
    assert_int_equal(h, 0);
    uint32_t v = 5;
    virtio_mmio_access(&t->d, 0x031, true, (uint8_t *)&v, 4);
    assert_int_equal(t->d.queue_sel, 0);
    /* Past the window, or a 0-byte access: harmless. */
    virtio_mmio_access(&t->d, 0xfff, false, (uint8_t *)&v, 4);
    virtio_mmio_access(&t->d, 0x2000, true, (uint8_t *)&v, 4);
    /* A queue that does not exist. */
    wr(t, 0x030, 7);
    assert_int_equal(rd(t, 0x034), 0);
    wr(t, 0x038, 16);
    wr(t, 0x044, 1);
    assert_int_equal(rd(t, 0x044), 0);
    /* A layout outside RAM: DEVICE_NEEDS_RESET and a configuration-change interrupt. */
    wr(t, 0x030, 0);
    wr(t, 0x038, 16);
    wr(t, 0x080, 0);
    wr(t, 0x084, 1); /* 4 GiB: no RAM */
    wr(t, 0x044, 1);
    assert_true(rd(t, 0x070) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
    assert_int_equal(rd(t, 0x060), VIRTIO_MMIO_INT_CONFIG);
    assert_true(t->line);
    /* Reset clears it all and lowers the line. */
    wr(t, 0x070, 0);
    assert_int_equal(rd(t, 0x070), 0);
    assert_int_equal(rd(t, 0x060), 0);
    assert_false(t->line);
    /* A ready queue's layout cannot change under the device. */
    probe(t, ACCEPT);
    setup_queue(t);
    wr(t, 0x080, DESC + 0x100);
    assert_int_equal(t->d.q[0].desc, DESC);
    /* Notifications before DRIVER_OK are not served. */
    read_request(t, 1);
    wr(t, 0x050, 0);
    assert_int_equal(vqd_used_idx(&t->v), 0);
    /* A looping chain breaks the queue: DEVICE_NEEDS_RESET, nothing served after it. */
    wr(t, 0x070, rd(t, 0x070) | VIRTIO_STATUS_DRIVER_OK);
    vqd_desc(&t->v, DESC, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 1);
    vqd_desc(&t->v, DESC, 1, DATA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 0);
    wr(t, 0x050, 0);
    assert_true(rd(t, 0x070) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
    wr(t, 0x050, 0);
    assert_true(t->d.q[0].broken);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_linux_like_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_feature_negotiation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_registers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_features_not_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_abandons_request, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
