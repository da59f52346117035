/* The task a stopped vCPU runs, read from the Linux guest's memory at the exit (docs/
 * linux-introspection.md, "Tasks"). The kernel keeps a pointer to it in a per-CPU variable
 * (`current_task` in 6.1 and from 6.15, `pcpu_hot.current_task` in 6.2-6.14), and a CPU's
 * per-CPU area is where its kernel GS base points: `*(gs_base + &current_task)` is the
 * task_struct, whose pid, tgid, flags and comm the kernel's BTF locates.
 *
 * The reader is built once on the drain thread from the discovered kernel and is immutable
 * after that; the exit path only reads it:
 *
 *   struct lx_task_reader *r;  lx_task_reader_build(k, &r, note, sizeof(note));   // drain
 *   lx_task_read(r, &vc, w, &ident);                                              // exit path
 *   free(r);
 *
 * Which CPU a vCPU is: its kernel GS base is one of the `__per_cpu_offset[]` values (below
 * nr_cpu_ids), a set read at discovery. In kernel mode GS base holds it except in the few entry
 * instructions before SWAPGS; the vCPU's last matching value is kept (a vCPU stays the same
 * guest CPU), and user-mode stops use that or IA32_KERNEL_GS_BASE. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "guestos/guestos.h"
#include "guestos/linux/cgroup.h"
#include "guestos/linux/kernel.h"

#define LX_MAX_CPUS 8192 /* NR_CPUS of the distribution kernels (CONFIG_NR_CPUS, Debian) */

/* include/linux/sched.h: "I am a kernel thread" (the same value since 2.6). */
#define LX_PF_KTHREAD 0x00200000u
/* include/linux/threads.h: PID_MAX_LIMIT on 64-bit, 4 * 1024 * 1024. */
#define LX_PID_MAX_LIMIT (4 * 1024 * 1024)

/* The process key of a user task: its tgid and its address space (the root's page number, 40
 * bits for 52-bit physical addresses), so that a page-table root freed by one process and reused
 * by the next, or a pid reused, never joins two processes; exec (a new address space) starts a
 * new one. Kernel threads, idle tasks and exiting tasks: GUESTOS_KEY_NOT_ROOT | tgid. */
static inline uint64_t lx_process_key(int32_t tgid, uint64_t root)
{
    return (1ull << 63) | ((uint64_t)(uint32_t)tgid << 40) | ((root >> 12) & ((1ull << 40) - 1));
}

struct lx_cpu_area {
    uint64_t base; /* __per_cpu_offset[cpu]: that CPU's kernel GS base */
    uint32_t cpu;
};

struct lx_task_reader {
    uint64_t current_ptr;           /* per-CPU offset of the current task pointer */
    uint64_t cgroups;               /* task_struct.cgroups (cgroup.h), 0: not read */
    struct lx_cgroup_layout groups; /* pid namespaces (cgroup.h), for lx_task_ns_at */
    struct lx_task_layout layout;
    uint32_t ncpus;
    struct lx_cpu_area cpus[]; /* sorted by base */
};

/* From a discovered kernel: needs the task layout (BTF), the current-task symbol and the per-CPU
 * offsets. NULL with `why` filled when the kernel does not give them (or out of memory); else
 * `why` says what was found. */
struct lx_task_reader *lx_task_reader_build(const struct lx_kernel *k, char *why, size_t len);

/* comm as the guest wrote it (comm_size bytes of it, the rest zero), made safe to print: cut at
 * the first NUL, control and non-ASCII bytes as '?'. */
void lx_comm_clean(char comm[GUESTOS_COMM_LEN]);

/* The guest CPU whose per-CPU area starts at `base`; false if no CPU's does. */
bool lx_task_cpu_of(const struct lx_task_reader *r, uint64_t base, uint32_t *cpu);

/* Exit path: fill out->task from the vCPU's current task (out->task.known false if it cannot be
 * read), and set the identity from it: every thread's key is its tid; a user task's process is
 * its tgid in its own address space (lx_process_key; in kernel mode the address space is read
 * from task->mm->pgd, since CR3 can be another's);
 * a kernel thread, an idle task, or a user task past exit_mm() is its own process with no user
 * address space. */
void lx_task_read(const struct lx_task_reader *r, struct guestos_vcpu *vc, struct gw_walker *w,
                  struct guestos_ident *out);

/* Exit path, once per thread: the pid namespace ids of the task at `task` (guestos_task.handle)
 * read through the walker, if it is thread `tid`: its own, its thread group leader's, the
 * namespace's inode number and depth (out->hostname and mntns are left empty: the drain thread
 * reads those). Read at the thread's first sample so that a thread that exits before the drain
 * thread names it still has them. */
bool lx_task_ns_at(const struct lx_task_reader *r, struct gw_walker *w, uint64_t task, int32_t tid,
                   struct guestos_ns *out);

/* The guest's boot, before its kernel is described and before any user-mode stop: the bzImage's
 * decompressor, the early kernel on its own page tables, the initcalls. No task can be read yet
 * (and the CR3 roots of those phases are no process's), so each stop is the boot's: process
 * "[boot]" (pid 0, a key of its own beside the idle tasks'), thread "swapper/N" on vCPU N (the
 * guest's CPU N: the VMM numbers APIC ids in vCPU order), as the kernel names the boot CPU's
 * context and its idle tasks. */
#define LX_BOOT_PROCESS_KEY (GUESTOS_KEY_NOT_ROOT | (1ull << 41))
void lx_boot_identity(const struct guestos_vcpu *vc, struct guestos_ident *out);
