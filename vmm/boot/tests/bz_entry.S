/* Position-independent code the bzImage test places at payload + 0x200 (the 64-bit entry of
 * boot.rst): checks the 64-bit boot protocol state and the zero page, then writes 0 (or the
 * number of the first failed check) to port 0xf4. Kept as data in the test binary. */
    .section .rodata
    .globl bz_entry_code, bz_entry_code_end
bz_entry_code:
    mov $1, %eax
    cmp $0x7000, %rsi               /* RSI = &boot_params */
    jne 9f
    mov $2, %eax
    cmpl $0x53726448, 0x202(%rsi)   /* setup header copied */
    jne 9f
    cmpb $0xff, 0x210(%rsi)         /* type_of_loader */
    jne 9f
    mov $3, %eax
    mov %cs, %ebx
    cmp $0x10, %ebx                 /* __BOOT_CS */
    jne 9f
    mov %ds, %ebx
    cmp $0x18, %ebx                 /* __BOOT_DS */
    jne 9f
    mov $4, %eax
    pushfq
    pop %rbx
    test $0x200, %ebx               /* interrupts disabled */
    jnz 9f
    mov $5, %eax
    mov 0x228(%rsi), %ebx           /* cmd_line_ptr */
    cmpb $'h', (%rbx)
    jne 9f
    mov $6, %eax
    mov 0x218(%rsi), %ebx           /* ramdisk_image */
    mov 0x21c(%rsi), %ecx           /* ramdisk_size */
    cmpb $0x5a, -1(%rbx,%rcx)
    jne 9f
    mov $7, %eax
    cmpb $4, 0x1e8(%rsi)            /* e820_entries */
    jne 9f
    cmpq $0xe0000, 0x70(%rsi)       /* acpi_rsdp_addr */
    jne 9f
    cmpl $0x20445352, 0xe0000       /* "RSD " of the RSDP signature there */
    jne 9f
    mov $8, %eax
    lea bz_entry_code(%rip), %rbx   /* running at load + 0x200, inside init_size */
    cmp $0x1000000 + 0x200, %rbx
    jne 9f
    xor %eax, %eax
9:  mov $0xf4, %edx
    out %eax, %dx
1:  hlt
    jmp 1b
bz_entry_code_end:
    .section .note.GNU-stack, "", @progbits
