/* Where a Linux task that is not running resumes: __switch_to_asm pushed the callee-saved
 * registers and left `struct inactive_task_frame` (arch/x86/include/asm/switch_to.h) at
 * task->thread.sp; its bp and ret_addr, and the stack pointer above it, are the registers an
 * unwinder starts from (unwind_orc.c, __unwind_start for a task that is not current). Offsets
 * and the frame's size from the kernel's BTF. Used to unwind sleeping tasks' kernel stacks (the
 * captured-guest tests compare them with the guest's own /proc/PID/stack). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/kernel.h"
#include "guestos/linux/kread.h"
#include "guestwalk/unwind.h"

struct lx_switch_layout {
    bool known;
    uint64_t thread_sp;           /* task_struct.thread.sp */
    uint64_t frame_bp, frame_ret; /* in struct inactive_task_frame */
    uint64_t frame_size;
};

bool lx_switch_layout_of(const struct lx_kernel *k, struct lx_switch_layout *out, char *why,
                         size_t why_len);

/* The kernel-mode registers `task` resumes with (rip its return address into __schedule). False
 * if they cannot be read or are not kernel addresses. */
bool lx_task_switched_regs(struct lx_kread *kr, const struct lx_switch_layout *l, uint64_t task,
                           struct gw_regs *out);
