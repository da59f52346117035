/* A synthetic Linux guest's threads, for test_guestos_threads and fuzz_guestos_threads: guestwalk's
 * test image with the direct map at TG_DIRECT (2 MiB pages over RAM slot 0), and in it, in the
 * layout a BTF would give, init_task and three thread groups on its task list:
 *   pid 100 "server": leader 100 asleep in a system call (S) with its user registers in the
 *                     pt_regs at the top of its stack, and thread 101 "server-io" in disk
 *                     sleep (D), on CPU 1; both in the address space of mm TG_MM;
 *   pid 2 "kthreadd": a kernel thread, idle (I);
 *   pid 300 "gone":   a zombie.
 * All task memory lies in [TG_AREA_GPA, TG_AREA_GPA + TG_AREA_SIZE). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "guestos/linux/orc_unwind.h"
#include "guestos/linux/task.h"
#include "guestos/linux/threads.h"
#include "guestwalk/tests/guest_image.h"

#define TG_DIRECT     0xffff888000000000ull
#define TG_AREA_GPA   0x400000ull
#define TG_AREA_SIZE  0x100000ull
#define TG_VA(gpa)    (TG_DIRECT + (gpa))
#define TG_INIT_TASK  TG_VA(TG_AREA_GPA)
#define TG_TASK(i)    TG_VA(TG_AREA_GPA + 0x1000 * (uint64_t)(i)) /* i = 1..4: 100, 101, 2, 300 */
#define TG_SIGNAL(i)  TG_VA(TG_AREA_GPA + 0x8000 + 0x100 * (uint64_t)(i))
#define TG_MM         TG_VA(TG_AREA_GPA + 0x9000)
#define TG_PGD_GPA    (TG_AREA_GPA + 0xa000) /* the server's address space (its root) */
#define TG_STACK(i)   TG_VA(TG_AREA_GPA + 0x10000 + 0x8000 * (uint64_t)(i)) /* 16 KiB each */
#define TG_KERNEL_RIP 0xffffffff81a01234ull /* where each resumes: in "__schedule" */
#define TG_USER_RIP   0x401234ull
#define TG_USER_SP    0x7ffc1000ull
#define TG_USER_BP    0x7ffc1040ull

struct tg {
    struct gimg g;
    struct lx_kernel *k;
    struct lx_proc_layout pl;
    struct lx_switch_layout sl;
    struct lx_kread kr;
    struct lx_threads t;
};

/* `fred`: pt_regs below a 16-byte padding, as kernels with FRED place them. 0, or -1. */
int tg_build(struct tg *x, bool fred);
void tg_free(struct tg *x);
/* The host bytes of guest-physical address gpa in the image. */
void *tg_at(struct tg *x, uint64_t gpa);
