/* Boot entry: the VMM enters _start (a physical address) in long mode on its identity map with
 * RDI = bootinfo GPA (vmm/boot/hvprof_boot.h). We switch to our own page tables (static, below) and
 * jump to the higher half on CPU 0's kernel stack. */
#include "layout.h"

    .section .boot.text, "ax"
    .code64
    .globl _start
_start:
    cli
    mov %rdi, %r12
    mov $(kernel_pml4 - KVBASE), %eax
    mov %rax, %cr3
    movabs $start_high, %rax
    jmp *%rax

    .text
start_high:
    movabs $(cpu_areas + CPU_AREA_SIZE), %rsp
    mov %r12, %rdi
    xor %ebp, %ebp          /* end of the kernel frame-pointer chain */
    call kmain
1:  hlt
    jmp 1b

/* Static page tables (SDM Vol. 3A 4.5, 4-level paging). PML4 slot 0 = identity map of [0, 4 GiB)
 * (only used by the boot CPU and the AP trampoline; user PML4s never copy it), slot 256 = the
 * same as the direct map, slot 511 -> PDPT whose entry 510 maps KVBASE to phys 0 (1 GiB).
 * 2 MiB pages (PS, bit 7); the last GiB (MMIO: LAPIC, IOAPIC) is uncached (PCD|PWT). */
    .section .data.pagetables, "aw"
    .balign 4096
    .globl kernel_pml4
kernel_pml4:
    .quad dm_pdpt - KVBASE + 3
    .fill 255, 8, 0
    .quad dm_pdpt - KVBASE + 3
    .fill 254, 8, 0
    .quad k_pdpt - KVBASE + 3
k_pdpt:
    .fill 510, 8, 0
    .quad dm_pd - KVBASE + 3
    .quad 0
dm_pdpt:
    .quad dm_pd - KVBASE + 3
    .quad dm_pd + 0x1000 - KVBASE + 3
    .quad dm_pd + 0x2000 - KVBASE + 3
    .quad dm_pd + 0x3000 - KVBASE + 3
    .fill 508, 8, 0
dm_pd:
    .set i, 0
    .rept 1536
    .quad (i << 21) | 0x83
    .set i, i + 1
    .endr
    .rept 512
    .quad (i << 21) | 0x9b
    .set i, i + 1
    .endr
