/* Interrupt and exception entry (SDM Vol. 3A 6.14: 64-bit IDT gates push SS, RSP, RFLAGS, CS,
 * RIP and, for some vectors, an error code). Every stub pushes a uniform struct trapframe
 * (kernel.h) and calls trap_dispatch(frame) with RBP = 0, so the kernel frame-pointer chain ends
 * cleanly at the trap boundary and a kernel-stack walker stops there; the user's RBP is in the
 * frame. trap_dispatch may rewrite the frame (system call result, or another thread's state);
 * trap_exit restores whatever is in it. */
#include "layout.h"

.macro STUB vec, has_err
    .globl trap_stub_\vec
trap_stub_\vec:
    .if \has_err == 0
    pushq $0
    .endif
    pushq $\vec
    jmp trap_common
.endm

    .text
/* Vectors with an error code: 8, 10-14, 17, 21, 29, 30 (SDM Vol. 3A table 6-1). */
STUB 0, 0
STUB 1, 0
STUB 2, 0
STUB 3, 0
STUB 4, 0
STUB 5, 0
STUB 6, 0
STUB 7, 0
STUB 8, 1
STUB 9, 0
STUB 10, 1
STUB 11, 1
STUB 12, 1
STUB 13, 1
STUB 14, 1
STUB 15, 0
STUB 16, 0
STUB 17, 1
STUB 18, 0
STUB 19, 0
STUB 20, 0
STUB 21, 1
STUB 22, 0
STUB 23, 0
STUB 24, 0
STUB 25, 0
STUB 26, 0
STUB 27, 0
STUB 28, 0
STUB 29, 1
STUB 30, 1
STUB 31, 0
STUB 32, 0
STUB 255, 0

trap_common:
    cld
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, %rdi
    xor %ebp, %ebp
    call trap_dispatch
    .globl trap_exit
trap_exit:
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
    add $16, %rsp               /* vector, error code */
    iretq

/* cpu_enter_scheduler(): never returns. Builds an empty trap frame at the top of this CPU's
 * kernel stack (where a trap from user mode would put one), lets sched_first() fill it with the
 * first thread to run (idling until there is one), then leaves through trap_exit. */
    .globl cpu_enter_scheduler
cpu_enter_scheduler:
    mov %rsp, %rax
    and $~(CPU_AREA_SIZE - 1), %rax
    lea CPU_AREA_SIZE(%rax), %rsp
    sub $176, %rsp              /* sizeof(struct trapframe) */
    mov %rsp, %rdi
    xor %ebp, %ebp
    call sched_first
    jmp trap_exit

    .section .rodata
    .globl trap_stubs
trap_stubs:
    .irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    .quad trap_stub_\v
    .endr
    .quad trap_stub_32
    .quad trap_stub_255
