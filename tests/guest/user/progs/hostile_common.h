/* Shared helpers of the hostile programs (hostile_*.c; docs/test-guest.md "Hostile programs"):
 * the GUEST_SYS_HOSTILE wrapper, a frame record, a spin with a chosen RBP and a stack pivot.
 * Not a program itself (CMake builds only the .c files and directories in user/progs). */
#pragma once

#include <stdbool.h>

#include "libc.h"
#include "work.h"

static inline long hostile(long op, long a, long b, long c)
{
    return guest_syscall(GUEST_SYS_HOSTILE, op, a, b, c);
}

/* A frame record as the x86-64 frame-pointer convention lays it out: [rbp] = caller's RBP,
 * [rbp + 8] = return address. */
struct frame {
    uint64_t next;
    uint64_t ret;
};

/* Spin at CPL 3 until the TSC reaches `until` with RBP = `rbp`: every sample taken meanwhile
 * starts its frame-pointer walk at `rbp`. Assembly, so no compiler-made frame uses RBP. */
void spin_rbp(uint64_t until, uint64_t rbp);
/* Call fn(arg) with RSP = stack_top (16-byte aligned); returns when fn returns. Its own frame
 * stays on the old stack, so fn's saved RBP points back there. */
void call_on_stack(void (*fn)(void *), void *arg, uint64_t stack_top);
__asm__(".text\n"
        ".type spin_rbp, @function\n"
        "spin_rbp:\n"
        "    push %rbp\n"
        "    mov %rsi, %rbp\n"
        "1:  rdtsc\n"
        "    shl $32, %rdx\n"
        "    or %rdx, %rax\n"
        "    cmp %rdi, %rax\n"
        "    jb 1b\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size spin_rbp, . - spin_rbp\n"
        ".type call_on_stack, @function\n"
        "call_on_stack:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    mov %rdx, %rsp\n"
        "    mov %rdi, %rax\n"
        "    mov %rsi, %rdi\n"
        "    call *%rax\n"
        "    mov %rbp, %rsp\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size call_on_stack, . - call_on_stack\n");

static inline uint64_t tsc_after_us(uint64_t us)
{
    return rdtsc() + us * (tsc_hz() / 1000000);
}

static inline uint64_t deadline_us(void)
{
    return now_us() + (uint64_t)param("seconds", 1) * 1000000;
}
