/* A Linux guest process's own account of its executable, read on the drain thread: the thread
 * group leader with a given tgid on the kernel's task list (init_task.tasks, which links the
 * leaders), its mm (checked against the address space being examined: mm->pgd is that root),
 * and the auxiliary vector the kernel saved there at exec (mm_struct.saved_auxv, pairs of
 * type and value up to AT_NULL): AT_EXECFN, the user address of the path execve() was given,
 * and AT_ENTRY, the program's entry point, which tells which image is the executable. Offsets
 * from the kernel's BTF; every list step, pointer and count is bounded. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/kread.h"
#include "guestos/linux/kernel.h"

#define LX_MAX_TASKS      65536 /* task-list entries followed at most */
#define LX_AUXV_MAX_PAIRS 64    /* AT_VECTOR_SIZE_BASE is 22; arch entries add a few */

/* include/uapi/linux/auxvec.h */
#define LX_AT_NULL   0
#define LX_AT_ENTRY  9
#define LX_AT_EXECFN 31

struct lx_proc_layout {
    bool known;
    uint64_t tasks;       /* task_struct.tasks (struct list_head) */
    uint64_t saved_auxv;  /* mm_struct.saved_auxv */
    uint64_t real_parent; /* task_struct.real_parent (the process that forked it) */
    uint64_t auxv_size;   /* its size in bytes */
    /* The executable's own file, for its name (0: not in BTF): mm_struct.exe_file,
     * file.f_path.dentry, dentry.d_name.name and dentry.d_parent. */
    uint64_t exe_file, f_dentry, d_name, d_parent;
};

/* From BTF; known false (with why) when a member is missing. */
bool lx_proc_layout_of(const struct lx_kernel *k, struct lx_proc_layout *out, char *why,
                       size_t why_len);

#define LX_PATH_DEPTH 32 /* directories walked up from an executable's file, at most */

struct lx_exe {
    uint64_t execfn; /* user address of the path (AT_EXECFN), 0 if not in the vector */
    uint64_t entry;  /* AT_ENTRY, 0 if not in it */
    /* The executable's file as its dentries name it, from its file system's root
     * ("/usr/bin/bash"): what a script's interpreter or a symbolic link's target really is.
     * "" when unknown (no BTF members, a name or link that cannot be read). */
    char file[256];
};

/* Call fn for each thread-group leader on init_task.tasks (at most LX_MAX_TASKS, each link
 * checked); fn returns nonzero to stop. Returns what fn returned, 0 at the list's end, -1 if the
 * list cannot be read. */
int lx_tasks_each(struct lx_kread *kr, const struct lx_proc_layout *pl, uint64_t init_task,
                  int (*fn)(void *ctx, uint64_t task), void *ctx);

/* The address space of a task's mm: the guest-physical root as the recording's address spaces
 * are (its mm in *mm), or 0 (no mm, or one that cannot be read). */
uint64_t lx_task_root(struct lx_kread *kr, const struct lx_task_layout *tl, uint64_t task,
                      uint64_t *mm);

/* The task_struct of the thread-group leader `tgid`, or 0. */
uint64_t lx_task_of_pid(struct lx_kread *kr, const struct lx_task_layout *tl,
                        const struct lx_proc_layout *pl, uint64_t init_task, int32_t tgid);

/* The process that forked process `tgid` (address space `root`): its tgid and its address space's
 * root. 0, or -1 (not found, no parent with an address space, no real_parent in BTF). */
int lx_proc_parent(struct lx_kread *kr, const struct lx_task_layout *tl,
                   const struct lx_proc_layout *pl, uint64_t init_task, int32_t tgid, uint64_t root,
                   int32_t *ppid, uint64_t *proot);

/* The executable of process `tgid` whose address space's root is `root` (guest-physical, as
 * the recording's address spaces are): the auxiliary vector's entries, and its file's path
 * (mm_struct.exe_file's dentries up to their root, each name bounded and printable). 0, or -1
 * when the task or its vector cannot be read. */
int lx_proc_exe(struct lx_kread *kr, const struct lx_task_layout *tl,
                const struct lx_proc_layout *pl, uint64_t init_task, int32_t tgid, uint64_t root,
                struct lx_exe *out);
