/* hostile_pio: a storm of port-I/O exits. First half of `seconds`: the kernel writes port 0x80
 * in batches of 1000 (GUEST_HOSTILE_PIO, CPL 0); second half: with IOPL 3 (GUEST_HOSTILE_IOPL)
 * the program writes port 0x80 itself from CPL 3 in a tight loop, under the chain
 * _start -> main -> pio_user -> pio_burst. Every write is a VM exit to the VMM. The user-mode
 * half runs only with `pio_user=1`: this project's KVM (PVM) raises #GP for CPL 3 port I/O even
 * with IOPL 3 (hardware KVM follows the SDM and allows it). */
#include "hostile_common.h"

#define PORT_POST 0x80

NOINLINE uint64_t pio_burst(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        __asm__ volatile("outb %b0, %w1" ::"a"(i), "Nd"(PORT_POST));
    KEEP(n);
    return n;
}

NOINLINE uint64_t pio_user(uint64_t end)
{
    uint64_t n = 0;
    while (now_us() < end)
        n += pio_burst(256);
    return n;
}

int main(void)
{
    uint64_t t0 = now_us(), end = deadline_us();
    bool user_half = param("pio_user", 0);
    uint64_t mid = user_half ? t0 + (end - t0) / 2 : end;
    uint64_t kernel_outs = 0, user_outs = 0;
    long errors = 0;
    while (now_us() < mid) {
        errors += hostile(GUEST_HOSTILE_PIO, 1000, 0, 0) != 0;
        kernel_outs += 1000;
    }
    if (user_half) {
        errors += hostile(GUEST_HOSTILE_IOPL, 0, 0, 0) != 0;
        user_outs = pio_user(end);
    }
    printf("hostile_pio: pid=%ld kernel_outs=%lu user_outs=%lu errors=%ld ok=%d\n", getpid(),
           kernel_outs, user_outs, errors, errors == 0);
    return errors ? 1 : 0;
}
