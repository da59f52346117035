/* The control groups the samples are in (docs/containers.md), as numbers the exit path can put
 * in a sample: a lock-free map from the guest's group key (guestos_task.group; Linux: the task's
 * css_set address, which changes when the task moves to another cgroup) to the number of the
 * group's record in the trace. A vCPU thread looks its sample's key up, or inserts it, with
 * atomic loads and one CAS: no lock, no allocation, no guest read. The drain thread (the
 * containers source) writes each number's record (its path, read from the guest kernel) before
 * the samples that carry it, re-reads each group's path now and then and gives the slot a new
 * number when the key now stands for another cgroup (the kernel freed the css_set and reused
 * its memory), and frees slots not used for a while.
 *
 * A number is never reused: every record written stays what it said. Two slots may hold one
 * key for a while (an insert that raced a free); they have two numbers with the same path,
 * which reports group by path. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define GROUP_TABLE_SLOTS 4096u /* a power of two: cgroups in use at once, at most */
#define GROUP_TABLE_PROBE 32u   /* slots an insert tries before counting the table full */

struct group_slot {
    _Atomic uint64_t key;     /* 0: free */
    _Atomic uint32_t number;  /* the group's record number; 0: being assigned or freed */
    _Atomic uint64_t used_ns; /* a sample's time that used it, updated at most every 100 ms */
};

struct group_table {
    _Atomic uint32_t next; /* the last number given */
    _Atomic uint64_t full; /* lookups that found no slot: their samples carry no group */
    struct group_slot slot[GROUP_TABLE_SLOTS];
};

/* The number of group `key` (nonzero), inserting it; 0 when the key is 0 or the table is full.
 * Any thread; exit-path safe. */
uint32_t group_table_number(struct group_table *t, uint64_t key, uint64_t now_ns);

/* Drain thread: slot i's number changes to a fresh one (its key now names another cgroup), or
 * the slot is freed (number first, so that a lookup racing it gets 0, never a stale number of
 * a reused slot). Returns the new number. */
uint32_t group_table_renumber(struct group_table *t, uint32_t i);
void group_table_free(struct group_table *t, uint32_t i);
