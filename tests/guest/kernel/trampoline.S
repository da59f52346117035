/* AP start-up trampoline (Intel MP spec 1.4, B.4; SDM Vol. 3A 9.9 "switching to IA-32e mode").
 * Copied to TRAMP_BASE by the boot CPU; an AP woken by SIPI with vector TRAMP_BASE >> 12 starts
 * here in real mode at CS = 0x0c00, IP = 0. It goes real -> 32-bit protected -> long mode on the
 * kernel PML4 (identity slot 0 covers this page) and jumps to the mailbox's entry with RDI = arg
 * and RSP = stack. Only position-independent references: T(x) is x's address in the copy. */
#include "layout.h"

#define T(x) (TRAMP_BASE + ((x) - tramp_start))

    .section .rodata
    .globl tramp_start, tramp_end, tramp_cr3, tramp_stack, tramp_entry, tramp_arg
    .code16
tramp_start:
    cli
    cld
    xor %ax, %ax
    mov %ax, %ds
    lgdtl T(tramp_gdtr)
    mov %cr0, %eax
    or $1, %eax                 /* CR0.PE */
    mov %eax, %cr0
    ljmpl $0x18, $T(tramp32)

    .code32
tramp32:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %cr4, %eax
    or $0x20, %eax              /* CR4.PAE */
    mov %eax, %cr4
    mov T(tramp_cr3), %eax
    mov %eax, %cr3
    mov $0xc0000080, %ecx       /* IA32_EFER */
    rdmsr
    or $0x100, %eax             /* EFER.LME */
    wrmsr
    mov %cr0, %eax
    or $0x80000000, %eax        /* CR0.PG */
    mov %eax, %cr0
    ljmpl $0x08, $T(tramp64)

    .code64
tramp64:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov T(tramp_stack), %rsp
    mov T(tramp_arg), %rdi
    mov T(tramp_entry), %rax
    xor %ebp, %ebp
    jmp *%rax

    .balign 8
tramp_gdt:
    .quad 0
    .quad 0x00af9a000000ffff    /* 0x08: 64-bit code */
    .quad 0x00cf92000000ffff    /* 0x10: data */
    .quad 0x00cf9a000000ffff    /* 0x18: 32-bit code */
tramp_gdtr:
    .word 31
    .long T(tramp_gdt)
    .balign 8
tramp_cr3:   .quad 0
tramp_stack: .quad 0
tramp_entry: .quad 0
tramp_arg:   .quad 0
tramp_end:
