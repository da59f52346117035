/* The smallest ELF64 kernel for the hvprof boot ABI: checks the entry state described in
 * vmm/boot/hvprof_boot.h and docs/boot-elf.md, then writes 0 (or the number of the first failed
 * check) to the debug-exit port 0xf4. Linked at 1 MiB by the test build. Offsets into
 * struct hvprof_bootinfo: cmdline_gpa 24, initrd_gpa 40, initrd_size 48, mptable_gpa 64. */
    .text
    .globl _start
_start:
    mov $1, %eax
    cmp $0x7000, %rdi               /* RDI = &bootinfo */
    jne fail
    cmp %rdi, %rsi                  /* RSI = RDI */
    jne fail
    mov $2, %eax
    cmpl $0x42505648, (%rdi)        /* "HVPB" */
    jne fail
    mov $3, %eax
    mov %cs, %ebx
    cmp $0x10, %ebx
    jne fail
    mov %ss, %ebx
    cmp $0x18, %ebx
    jne fail
    mov %ds, %ebx
    cmp $0x18, %ebx
    jne fail
    mov $4, %eax
    cmp $0xc000, %rsp
    jne fail
    pushfq                          /* the stack works, IF is clear */
    pop %rbx
    test $0x200, %ebx
    jnz fail
    mov $5, %eax
    mov 24(%rdi), %rbx
    cmpb $'h', (%rbx)
    jne fail
    mov $6, %eax
    mov 40(%rdi), %rbx
    mov 48(%rdi), %rcx
    cmpb $0x5a, -1(%rbx,%rcx)       /* last initrd byte, through the identity map */
    jne fail
    mov $7, %eax
    mov 64(%rdi), %rbx
    cmpl $0x5f504d5f, (%rbx)        /* "_MP_" */
    jne fail
    mov $8, %eax
    lea bss_word(%rip), %rbx
    cmpq $0, (%rbx)                 /* bss zeroed by the loader */
    jne fail
    movq $1, (%rbx)
    mov $9, %eax
    mov %cr3, %rbx
    cmp $0x1000, %rbx
    jne fail
    xor %eax, %eax
fail:
    mov $0xf4, %edx
    out %eax, %dx
1:  hlt
    jmp 1b

    .bss
    .balign 8
bss_word:
    .quad 0
    .section .note.GNU-stack, "", @progbits
