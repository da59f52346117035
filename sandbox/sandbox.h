/* hvprof confined once it is set up, as Firecracker's jailer confines its VMM and QEMU's
 * `-sandbox on` confines QEMU (docs/security.md, "Confinement").
 *
 * Everything hvprof needs from the host is opened first: /dev/kvm and the VM, the disk images
 * and their chains, the output files and their directory, the network's forwarded sockets, the
 * guest's kernel and initrd. Then, while the process still has one thread, sandbox_enter():
 *
 *   1. becomes the user who asked (started through sudo: SUDO_UID/SUDO_GID; or --user NAME),
 *      the outputs made so far given to that user, and drops every capability, the bounding
 *      set's too (libcap-ng);
 *   2. sets no_new_privs;
 *   3. installs a seccomp-bpf filter (libseccomp) that allows only the system calls the run
 *      needs; every thread made afterwards inherits all three.
 *
 * Each kind of thread then narrows its own set (sandbox_thread_enter): a vCPU thread cannot
 * open a file, a disk's thread cannot open a file or a socket, the drain thread cannot open a
 * socket; only the network's thread (libslirp) makes sockets. A system call outside the set is
 * not made: it fails with EPERM, the SIGSYS handler records which call on which thread and
 * stops the guest through the hook the command gave, and the command ends cleanly with the
 * recording complete and a message naming the call (sandbox_report). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/err.h"

enum sandbox_thread {
    SANDBOX_MAIN = 0, /* the command's own thread: the union of all below */
    SANDBOX_VCPU,     /* KVM_RUN, its timer, the devices it emulates */
    SANDBOX_DISK,     /* a disk's I/O thread: the image's reads and writes */
    SANDBOX_NET,      /* the network's thread: libslirp's sockets */
    SANDBOX_DRAIN,    /* the recorder: the file, symbol files, snapshots */
    SANDBOX_UI,       /* `top`'s screen: the terminal, the recording read back */
    SANDBOX_KINDS
};

#define SANDBOX_MAX_CHOWN 8

struct sandbox_config {
    bool enabled;      /* false: --no-sandbox (said loudly by the command) */
    bool net;          /* a network card: sockets on the network's and the vCPU threads */
    bool change_user;  /* become uid/gid */
    uid_t uid;
    gid_t gid;
    char user[64];     /* their name, for messages */
    int chown_fds[SANDBOX_MAX_CHOWN]; /* outputs made as root, handed to that user */
    unsigned nchown;
};

/* Whom to become: `user` (--user NAME or a number; NULL: not given), else the one sudo ran
 * hvprof for when it runs as root through sudo, else nobody else (root stays root, without
 * capabilities). Fills c->change_user, uid, gid, user. -1 with a message for an unknown user. */
int sandbox_choose_user(struct sandbox_config *c, const char *user, struct hv_err *err);

/* Confine the process (above). Must be called with one thread; fails (and confines nothing)
 * otherwise, or when the kernel refuses a step. */
int sandbox_enter(const struct sandbox_config *c, struct hv_err *err);

/* The calling thread's own, narrower set; a no-op when the process is not confined. Returns
 * 0, or -1 when the filter cannot be installed (the thread then runs with the process's). */
int sandbox_thread_enter(enum sandbox_thread kind);

/* What the SIGSYS handler calls, once, at the first refused call (async-signal-safe code only:
 * vm_request_stop is). Set before sandbox_enter. */
void sandbox_on_violation(void (*stop)(void *ctx), void *ctx);

/* Whether the process is confined now. */
bool sandbox_active(void);

/* After the run: one line naming the refused call and its thread, if there was one ("the
 * sandbox refused system call socket (41) on a vCPU thread; ..."), into out. True if so. */
bool sandbox_report(const char *cmd, FILE *out);

/* The thread kind's name ("vCPU", "disk", ...). */
const char *sandbox_thread_name(enum sandbox_thread kind);
