/* Process and thread entry points of the guest libc. RBP is 0 on entry (the kernel clears it),
 * so the user frame-pointer chain ends at _start / thread_start. A process's .bss is zeroed
 * here: a spawned process's pages may be another's old ones (docs/test-guest.md). */
    .text
    .globl _start
    .type _start, @function
_start:
    xor %ebp, %ebp
    mov $__bss_start, %rdi
    mov $_end, %rcx
    sub %rdi, %rcx
    xor %eax, %eax
    rep stosb
    call main
    mov %eax, %edi
    call exit
    ud2
    .size _start, . - _start

/* thread_start(fn, arg): the kernel enters here for GUEST_SYS_THREAD_CREATE. */
    .globl thread_start
    .type thread_start, @function
thread_start:
    xor %ebp, %ebp
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    call thread_exit
    ud2
    .size thread_start, . - thread_start

/* long guest_syscall(nr, a0, a1, a2, a3): the int3 system call (guest_abi.h). */
    .globl guest_syscall
    .type guest_syscall, @function
guest_syscall:
    mov %rdi, %rax
    mov %rsi, %rdi
    mov %rdx, %rsi
    mov %rcx, %rdx
    mov %r8, %r10
    int3
    ret
    .size guest_syscall, . - guest_syscall

    .section .note.GNU-stack, "", @progbits
