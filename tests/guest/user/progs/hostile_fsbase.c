/* hostile_fsbase: a thread that changes its FS base in a loop (wrfsbase when CR4.FSGSBASE is on,
 * else GUEST_SYS_SET_FS), to a new value every few microseconds, kernel-half and odd values
 * included, while main keeps a known chain (_start -> main -> fs_steady -> fs_leaf). A profiler
 * keying guest threads on (CR3, FS base) sees an endless stream of "new threads": its tables must
 * stay bounded. */
#include "hostile_common.h"

struct fs_run {
    uint64_t end_us, changes;
    bool wrfsbase;
};

static inline void set_fs(const struct fs_run *run, uint64_t v)
{
    if (run->wrfsbase)
        __asm__ volatile("wrfsbase %0" ::"r"(v));
    else
        set_fs_base((void *)v);
}

NOINLINE void fs_changer(void *arg)
{
    struct fs_run *run = arg;
    uint64_t x = 3;
    do {
        for (int i = 0; i < 64; i++) {
            uint64_t n = run->changes++;
            /* Canonical values only (wrfsbase faults on others): user, odd, kernel half. */
            uint64_t v = n % 3 == 0   ? 0x100000 + (n << 6)
                         : n % 3 == 1 ? 0x7fff00000001ull + n
                                      : 0xffff800000000000ull + (n << 12);
            set_fs(run, v);
            x = x * 6364136223846793005ull + n;
        }
        KEEP(x);
    } while (now_us() < run->end_us);
}

NOINLINE uint64_t fs_leaf(uint64_t x)
{
    x = work_unit(x);
    KEEP(x);
    return x;
}

NOINLINE uint64_t fs_steady(uint64_t end)
{
    uint64_t x = 1;
    while (now_us() < end)
        x = fs_leaf(x);
    return x;
}

static bool have_fsgsbase(void)
{
    uint32_t a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    return b & 1; /* CPUID.(7,0):EBX[0]; the kernel enables CR4.FSGSBASE when it is set */
}

int main(void)
{
    struct fs_run run = {deadline_us(), 0, have_fsgsbase()};
    long tid = thread_create(fs_changer, &run, NULL);
    uint64_t x = fs_steady(run.end_us);
    long j = tid > 0 ? thread_join(tid) : -1;
    int ok = tid > 0 && j == 0 && run.changes > 0;
    printf("hostile_fsbase: pid=%ld changes=%lu wrfsbase=%d x=%lu ok=%d\n", getpid(), run.changes,
           run.wrfsbase, x & 0xff, ok);
    return ok ? 0 : 1;
}
