/* The device side of a virtio split virtqueue (Virtual I/O Device (VIRTIO) Version 1.2, section
 * 2.7): the driver's descriptor table, available ring and used ring, all in guest RAM. Every
 * index, address and length comes from the guest and is checked before use: a chain is at most
 * the queue's size long (a loop is an error, not a hang), every buffer lies inside guest RAM as
 * one host range, readable buffers come before writable ones (2.7.4.2), an indirect table
 * (2.7.5.3) is one level deep. A queue that breaks these rules is broken: the device reports
 * DEVICE_NEEDS_RESET (2.1.2) and touches it no more. Transport-independent (MMIO or PCI set the
 * addresses); no notification suppression (VIRTIO_F_EVENT_IDX is not offered). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "guestwalk/gmem.h"

/* 2.7.5: the descriptor flags. */
#define VIRTQ_DESC_F_NEXT     1
#define VIRTQ_DESC_F_WRITE    2
#define VIRTQ_DESC_F_INDIRECT 4

/* Queue sizes offered; 2.7: a power of 2, at most 32768. */
#define VIRTQ_MAX_SIZE 256
/* Buffers in one request (a chain, or an indirect table's entries). */
#define VIRTQ_MAX_SEGS 256

struct virtq {
    uint16_t size; /* entries, a power of 2 <= VIRTQ_MAX_SIZE; 0 until set */
    bool ready;    /* the driver enabled it (QueueReady) */
    bool broken;   /* the driver broke the rules: never touched again */
    uint64_t desc; /* guest-physical addresses of the three parts */
    uint64_t avail;
    uint64_t used;
    uint16_t last_avail; /* next available entry the device will take */
    uint16_t used_idx;   /* the device's copy of used->idx */
};

struct virtq_seg {
    uint8_t *host; /* inside guest RAM, len bytes */
    uint32_t len;
    bool write; /* device-writable */
};

/* One request: the chain's head (what goes back in the used ring) and its buffers, the
 * readable ones first. */
struct virtq_req {
    uint16_t head;
    unsigned nseg, nread; /* segments, of which the first nread are device-readable */
    uint64_t read_bytes, write_bytes;
    struct virtq_seg seg[VIRTQ_MAX_SEGS];
};

/* Checks the queue's layout against guest RAM when the driver enables it: size a power of 2
 * within VIRTQ_MAX_SIZE, the three parts aligned (2.7: 16, 2, 4) and inside RAM. Returns false
 * (and marks it broken) when they are not. */
bool virtq_enable(struct virtq *q, const struct gmem *m);

/* Takes the next available request. Returns 1 with *r filled, 0 when the driver has made none
 * available, -1 when the queue is broken (q->broken is then set). */
int virtq_pop(struct virtq *q, const struct gmem *m, struct virtq_req *r);

/* Returns request `head` to the driver with `written` bytes written into its writable buffers
 * (2.7.8). False when the used ring is no longer in RAM (the queue is then broken). */
bool virtq_push(struct virtq *q, const struct gmem *m, uint16_t head, uint32_t written);

/* Whether the driver asked not to be interrupted (2.7.7: VIRTQ_AVAIL_F_NO_INTERRUPT; a hint). */
bool virtq_wants_interrupt(const struct virtq *q, const struct gmem *m);
