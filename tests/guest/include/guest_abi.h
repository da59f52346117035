/* The test guest's user/kernel ABI, shared by the guest kernel, the guest libc and host-side tests
 * (which may include it to name system calls). Documented in docs/test-guest.md.
 *
 * System call mechanism: `int3` (opcode 0xCC, vector 3 = #BP, SDM Vol. 3A 6.15) through a DPL-3
 * interrupt gate. On this project's KVM (PVM) `syscall` stays at CPL 3 and `int n` (n != 3)
 * triple-faults, while exceptions from CPL 3 reach the IDT normally, and #BP is a trap so the
 * saved RIP already points past the int3. Call number in RAX, arguments in RDI, RSI, RDX, R10,
 * result in RAX (negative = error); every other register is preserved. Return is iretq. */
#pragma once

#define GUEST_SYS_WRITE 1 /* (buf, len) -> len; console output, at most 4096 bytes */
#define GUEST_SYS_EXIT  2 /* (status) -> never; ends the whole process */
#define GUEST_SYS_YIELD 3 /* () -> 0 */
#define GUEST_SYS_THREAD_CREATE                                                                    \
    4                           /* (fn, arg, fs_base, entry) -> tid; entry(fn, arg) runs on a      \
                                   fresh stack with FS base = fs_base and RBP = 0 */
#define GUEST_SYS_THREAD_EXIT 5 /* () -> never; ends the calling thread */
#define GUEST_SYS_THREAD_JOIN 6 /* (tid) -> 0; blocks until thread tid of this process ended */
#define GUEST_SYS_KBUSY                                                                            \
    7                      /* (microseconds) -> 0; spins at CPL 0 through nested kernel            \
                              functions: ksys_kbusy -> kbusy_level1 -> kbusy_level2 -> kbusy_spin */
#define GUEST_SYS_TSC_HZ 8 /* () -> TSC frequency in Hz (calibrated at boot) */
#define GUEST_SYS_PARAM                                                                            \
    9                         /* (name, default) -> integer value of name=V on the guest           \
                                 command line, or default */
#define GUEST_SYS_GETPID   10 /* () -> process id (1-based) */
#define GUEST_SYS_SET_FS   11 /* (fs_base) -> 0; sets the calling thread's FS base */
#define GUEST_SYS_INSTANCE 12 /* () -> index of this copy among processes of the same program */
#define GUEST_SYS_HOSTILE                                                                          \
    13 /* (op, a, b, c) -> op's result: debug operations for the hostile                           \
          programs only (below; docs/test-guest.md "Hostile programs") */
#define GUEST_SYS_SPAWN                                                                            \
    14 /* (name, arg) -> pid: a new process of boot-archive program `name`                         \
          (GUEST_SYS_INSTANCE gives it `arg`), quiet, its memory given back                         \
          when it ends; GUEST_EAGAIN: no process or thread slot now */
#define GUEST_SYS_WAIT 15 /* (pid) -> its exit status, once it ended (0 if long gone) */

/* GUEST_SYS_HOSTILE operations. They damage the caller's own address space or the machine on
 * purpose, in ways a profiler must survive; the kernel stays correct for every other process.
 * Addresses given to MAP/PT_* must lie in one of two regions no normal mapping uses: the low one
 * (PML4 slots 192..223) and the 2 MiB right above the main stack, where a corrupt frame pointer
 * still looks like a stack address to an unwinder. */
#define GUEST_HOSTILE_VA_BASE   0x600000000000ull
#define GUEST_HOSTILE_VA_END    0x700000000000ull
#define GUEST_HOSTILE_HIGH_BASE 0x7fffffe00000ull /* = USER_STACK_TOP */
#define GUEST_HOSTILE_HIGH_END  0x800000000000ull
#define GUEST_HOSTILE_MAP                                                                          \
    1 /* (va, pa, flags) -> 0: map the 4 KiB page va to guest-physical pa,                         \
         whatever is there (RAM, MMIO hole, past the end of RAM);                                  \
         flags: GUEST_HOSTILE_MAP_* */
#define GUEST_HOSTILE_MAP_FRESH 1 /*   ignore pa: map a fresh zeroed page of RAM */
#define GUEST_HOSTILE_MAP_HUGE  2 /*   with FRESH: a fresh 2 MiB page at 2 MiB-aligned va */
#define GUEST_HOSTILE_PT_SELF                                                                      \
    2 /* (va, level) -> 0: the empty level-4 (PML4E) or level-2 (PDE)                              \
         entry for va points at the table that holds it (read-only,                                \
         user), so va's 512 GiB / 2 MiB views the page tables */
#define GUEST_HOSTILE_PT_RSVD                                                                      \
    3 /* (va, kind) -> 0: map va to a fresh page through an entry with a                           \
         reserved bit set (SDM Vol. 3A 4.5.4); kind 0: PS in the PML4E,                            \
         kind 1: PTE bit 51 (reserved below MAXPHYADDR 52) */
#define GUEST_HOSTILE_KSPIN                                                                        \
    4 /* (us, rbp) -> 0: spin at CPL 0 for us microseconds (<= 10 s) with                          \
         interrupts off; rbp != 0: with RBP = rbp during the spin, or                              \
         a frame on the kernel stack that loops / points downward: */
#define GUEST_HOSTILE_KFP_LOOP     1
#define GUEST_HOSTILE_KFP_DOWN     2
#define GUEST_HOSTILE_KFP_LOOP_STR "1" /* the same, for assembly strings */
#define GUEST_HOSTILE_KFP_DOWN_STR "2"
#define GUEST_HOSTILE_PIO          5 /* (n) -> 0: n port-I/O writes to port 0x80 from CPL 0 (<= 10^6) */
#define GUEST_HOSTILE_IOPL                                                                         \
    6 /* () -> 0: this thread returns to user mode with IOPL 3, so its                             \
         own in/out instructions run at CPL 3 */
#define GUEST_HOSTILE_TRIPLE                                                                       \
    7                           /* () -> never: load an empty IDT and fault: a triple fault stops  \
                                   the machine (SDM Vol. 3A 6.15, #DF then shutdown) */
#define GUEST_HOSTILE_MAXPHYS 8 /* () -> MAXPHYADDR in bits (CPUID 0x80000008) */

#define GUEST_ENOSYS (-38)
#define GUEST_EFAULT (-14)
#define GUEST_EINVAL (-22)
#define GUEST_EAGAIN (-11)

/* Exit statuses the guest writes to HVPROF_PORT_DEBUG_EXIT. */
#define GUEST_STATUS_OK        0    /* every program exited 0 */
#define GUEST_STATUS_PROG_FAIL 1    /* some program exited non-zero or was killed by a fault */
#define GUEST_STATUS_PANIC     0x7f /* guest kernel panic (reason printed first) */

/* A process killed by a CPU exception at CPL 3 exits with this status + the vector. */
#define GUEST_FAULT_STATUS_BASE 128
