/* Every thread of a Linux guest, read on the drain thread for off-CPU profiles (docs/off-cpu.md):
 * the thread-group leaders on init_task.tasks, and each group's threads on its
 * signal->thread_head list (linked through task_struct.thread_node, since 3.14). Per thread its
 * state as /proc/PID/stat reports it (task_state_index(), include/linux/sched.h), whether it is
 * on a CPU (task_struct.on_cpu), the CPU time its scheduler counted (se.sum_exec_runtime), its
 * context switches (nvcsw + nivcsw) and where its kernel stack was switched out (thread.sp).
 * Offsets from the kernel's BTF; every list step, pointer and count bounded: a guest's memory
 * is hostile, and it runs while it is read. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/guestos.h"
#include "guestos/linux/kernel.h"
#include "guestos/linux/kread.h"
#include "guestos/linux/process.h"
#include "guestos/linux/switched.h"

/* include/linux/sched.h: the state bits task_state_index() reports (TASK_REPORT), and the
 * two that make an uninterruptible sleep "idle" or an RT lock's wait "disk sleep"; the same
 * values from 4.14 to 7.x. */
#define LX_TASK_REPORT      0x7fu
#define LX_TASK_IDLE        0x402u /* TASK_UNINTERRUPTIBLE | TASK_NOLOAD */
#define LX_TASK_RTLOCK_WAIT 0x1000u

/* arch/x86/include/asm/segment.h: __USER_CS and __USER_DS of 64-bit user mode. */
#define LX_USER_CS 0x33u
#define LX_USER_DS 0x2bu

#define LX_MAX_THREADS_PER_GROUP 65536 /* a group's thread list followed at most */
/* List steps a visit takes at most, leaders and threads together: a hostile guest's lists (a
 * cycle that misses its head, 65536 leaders of 65536 threads each) cost no more than this. */
#define LX_MAX_VISIT_STEPS (1u << 18)

struct lx_thread_layout {
    bool known;
    uint64_t state, state_size; /* __state (u32, 5.14+) or state (long) */
    uint64_t exit_state, on_cpu, cpu, exec_ns, nvcsw, nivcsw, signal, thread_node;
    bool has_cpu, has_on_cpu;
    uint64_t thread_head; /* signal_struct.thread_head */
};

/* From BTF; known false (with why) when a member it cannot do without is missing. */
bool lx_thread_layout_of(const struct lx_kernel *k, struct lx_thread_layout *out, char *why,
                         size_t why_len);

/* The state index task_state_index() gives for __state and exit_state (GUESTOS_THREAD_*). */
enum guestos_thread_state lx_thread_state(uint32_t state, uint32_t exit_state);

struct lx_threads {
    const struct lx_kernel *k;
    struct lx_kread *kr;
    const struct lx_proc_layout *pl;
    const struct lx_switch_layout *sl;
    struct lx_thread_layout tl;
    bool la57;
    uint64_t kernel_root; /* init_top_pgt's guest-physical address */
    uint64_t cgroups;     /* task_struct.cgroups (cgroup.h), 0: not read */
};

/* The lister of a described kernel, reading through kr (lx_kread_init_kernel): the layouts from
 * BTF (the switch frame's optional: without it the threads are listed, their stacks not read),
 * the paging mode and kernel root from kr. False (with why) when the threads cannot be listed. */
bool lx_threads_init(struct lx_threads *t, const struct lx_kernel *k, struct lx_kread *kr,
                     const struct lx_proc_layout *pl, struct lx_switch_layout *sl, char *why,
                     size_t why_len);

/* Each thread (at most max), as the guestos threads op gives them. Returns how many, or -1
 * (why) when the task list cannot be read. */
long lx_threads_each(struct lx_threads *t, guestos_thread_fn fn, void *ctx, size_t max, char *why,
                     size_t why_len);

/* The registers a thread resumes with (its switch frame, switched.h) and, for a user thread,
 * those it entered the kernel with (the struct pt_regs at the top of its kernel stack,
 * checked: user-mode selectors, canonical user addresses). */
bool lx_thread_regs(struct lx_threads *t, const struct guestos_thread *th, struct gw_regs *kernel,
                    struct gw_regs *user);

/* The thread th is now: the same task read again (false when it cannot be, or is another
 * task now: another pid at that address). */
bool lx_thread_reread(struct lx_threads *t, const struct guestos_thread *th,
                      struct guestos_thread *now);

/* Whether the thread has not run since th was read. */
bool lx_thread_unchanged(struct lx_threads *t, const struct guestos_thread *th);
