/* The stacks the exit path copies for a walk later (stack_copy.h has the why and the calls):
 * a copy's layout and each vCPU's queue of them, which the exit core holds per vCPU (core.h)
 * and the recorder's copied-stacks source allocates and drains. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "guestwalk/cfi_unwind.h"
#include "guestwalk/snapshot.h"
#include "guestwalk/unwind.h"

#define EXIT_COPY_BYTES     (16u << 10) /* perf's --call-graph dwarf default is 8 KiB */
#define EXIT_COPY_SLOTS     256         /* per vCPU at most: ~4.4 MiB, touched only as used */
#define EXIT_COPY_ALL_SLOTS 4096        /* for all vCPUs together (64 vCPUs: 64 each) */
#define EXIT_COPY_PER_PROC  1024        /* copies of one address space's stacks in all */
#define EXIT_COPY_FRAMES    128         /* the walk at the exit, kept to fall back to */

struct exit_stack_copy {
    uint64_t id; /* the continuation its walk completes */
    uint32_t proc, thread;
    unsigned vcpu;
    uint64_t pid, tid, ts;
    struct gw_snapshot snap;      /* the MMU state: code is read from the guest, not copied */
    struct gw_regs regs;          /* where the user walk starts */
    const struct gw_cfi_map *map; /* the map the exit walk had */
    uint32_t len;                 /* bytes copied from regs.rsp */
    uint32_t nexit;               /* frames of the exit's own walk */
    uint64_t exit_walk;           /* its walk word (schema.h) */
    uint64_t exit_pc[EXIT_COPY_FRAMES];
    uint8_t bytes[EXIT_COPY_BYTES];
    bool done; /* drain thread: walked and completed, its slot free once the head reaches it */
};

struct exit_copy_queue {
    struct exit_stack_copy *slot; /* nslots of them; NULL: no copies */
    uint32_t nslots;
    _Atomic uint32_t head; /* the oldest not yet freed (drain thread) */
    _Atomic uint32_t tail; /* the next to fill (vCPU thread) */
};
