/* What the guest kernel says about a process or thread of the id tables: its own id (pid or
 * tid) and its name. Written on the exit path by whichever vCPU sees the thread, read by the
 * drain thread to name it in the trace, and changed when the guest changes it (exec sets the
 * name after the new address space is in place; prctl(PR_SET_NAME) renames a thread). A
 * sequence lock without locks: a writer claims the label by moving `seq` from even to odd with
 * one CAS (a writer that loses simply skips: the next stop will try again), stores the words and
 * makes `seq` even again; a reader retries until it sees the same even `seq` around its loads.
 * Every field is an atomic word, so no access is a data race. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "guestos/guestos.h"

struct id_label {
    _Atomic uint32_t seq; /* 0: never written; odd: being written */
    _Atomic int32_t guest_id;
    _Atomic bool kthread;
    _Atomic uint64_t comm[GUESTOS_COMM_LEN / 8];
};

struct id_label_value {
    uint32_t seq; /* what it was read at: changes with every update */
    int32_t guest_id;
    bool kthread;
    char comm[GUESTOS_COMM_LEN + 1];
};

/* Set the label to (guest_id, kthread, comm) unless it already says so. Exit-path safe. */
void id_label_set(struct id_label *l, int32_t guest_id, bool kthread,
                  const char comm[GUESTOS_COMM_LEN]);

/* A consistent copy. False if the label was never written (or stays busy for a while). */
bool id_label_get(const struct id_label *l, struct id_label_value *out);
