/* segv: a program that dies on purpose (not in the default program list). Its store to an
 * unmapped page raises #PF at CPL 3, which must end this process with status 128 + 14 = 142
 * and make the guest's final status GUEST_STATUS_PROG_FAIL, while other programs run on. */
#include "libc.h"

int main(void)
{
    printf("segv: pid=%ld writing to 0x10\n", getpid());
    volatile long *bad = (volatile long *)0x10;
    __asm__ volatile("" : "+r"(bad)); /* an address the compiler cannot reason about */
    *bad = 1;
    printf("segv: still alive (wrong)\n");
    return 0;
}
