/* The test guest's user/kernel ABI, shared by the guest kernel, the guest libc and host-side tests
 * (which may include it to name system calls). Documented in docs/test-guest.md.
 *
 * System call mechanism: `int3` (opcode 0xCC, vector 3 = #BP, SDM Vol. 3A 6.15) through a DPL-3
 * interrupt gate. On this project's KVM (PVM) `syscall` stays at CPL 3 and `int n` (n != 3)
 * triple-faults, while exceptions from CPL 3 reach the IDT normally, and #BP is a trap so the
 * saved RIP already points past the int3. Call number in RAX, arguments in RDI, RSI, RDX, R10,
 * result in RAX (negative = error); every other register is preserved. Return is iretq. */
#pragma once

#define GUEST_SYS_WRITE         1 /* (buf, len) -> len; console output, at most 4096 bytes */
#define GUEST_SYS_EXIT          2 /* (status) -> never; ends the whole process */
#define GUEST_SYS_YIELD         3 /* () -> 0 */
#define GUEST_SYS_THREAD_CREATE 4 /* (fn, arg, fs_base, entry) -> tid; entry(fn, arg) runs on a
                                     fresh stack with FS base = fs_base and RBP = 0 */
#define GUEST_SYS_THREAD_EXIT   5 /* () -> never; ends the calling thread */
#define GUEST_SYS_THREAD_JOIN   6 /* (tid) -> 0; blocks until thread tid of this process ended */
#define GUEST_SYS_KBUSY         7 /* (microseconds) -> 0; spins at CPL 0 through nested kernel
                                     functions: ksys_kbusy -> kbusy_level1 -> kbusy_level2 -> kbusy_spin */
#define GUEST_SYS_TSC_HZ        8 /* () -> TSC frequency in Hz (calibrated at boot) */
#define GUEST_SYS_PARAM         9 /* (name, default) -> integer value of name=V on the guest
                                     command line, or default */
#define GUEST_SYS_GETPID        10 /* () -> process id (1-based) */
#define GUEST_SYS_SET_FS        11 /* (fs_base) -> 0; sets the calling thread's FS base */
#define GUEST_SYS_INSTANCE      12 /* () -> index of this copy among processes of the same program */

#define GUEST_ENOSYS  (-38)
#define GUEST_EFAULT  (-14)
#define GUEST_EINVAL  (-22)
#define GUEST_EAGAIN  (-11)

/* Exit statuses the guest writes to HVPROF_PORT_DEBUG_EXIT. */
#define GUEST_STATUS_OK        0    /* every program exited 0 */
#define GUEST_STATUS_PROG_FAIL 1    /* some program exited non-zero or was killed by a fault */
#define GUEST_STATUS_PANIC     0x7f /* guest kernel panic (reason printed first) */

/* A process killed by a CPU exception at CPL 3 exits with this status + the vector. */
#define GUEST_FAULT_STATUS_BASE 128
