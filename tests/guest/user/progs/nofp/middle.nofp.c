/* Built with -fomit-frame-pointer (the .nofp.c suffix): RBP still holds nofp_outer's frame while
 * this function and its callee run. */
#include "libc.h"
#include "work.h"

uint64_t nofp_leaf(uint64_t x);
uint64_t nofp_middle(uint64_t x);

NOINLINE uint64_t nofp_middle(uint64_t x)
{
    x = work_unit(x);
    x = nofp_leaf(x);
    __asm__ volatile("" : "+r"(x)); /* not KEEP: that would force a frame pointer */
    return x;
}
