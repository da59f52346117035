/* hv_offcpu: a writer blocked in fsync on a disk, and a CPU-bound thread beside it
 * (docs/off-cpu.md):
 *   start_thread -> writer -> write_and_sync -> fsync            (off its CPU, in the kernel)
 *   start_thread -> spinner -> spin                               (on its CPU)
 * The writer measures itself: its CPU time and run-queue wait from the kernel's own account
 * (/proc/thread-self/schedstat: time on the CPU, time waiting on a run queue, timeslices) and its
 * wall time, at its start and its end, and prints
 *   HVTEST offcpu tid=T wall_ns=W run_ns=R wait_ns=Q fsync_ns=F fsyncs=N
 * so that the test compares the off-CPU time hvprof recorded for the thread (W - R) with it.
 * argv: milliseconds, the file or block device to write (4 KiB blocks from 1 MiB on). */
#include <fcntl.h>
#include <pthread.h>

#include "hvtest.h"

static long end_ms;
static const char *path;
volatile unsigned long sink;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int schedstat(long long *run, long long *wait)
{
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    int ok = f && fscanf(f, "%lld %lld", run, wait) == 2;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

HV_NOINLINE static long long write_and_sync(int fd, off_t at, const char *buf)
{
    if (pwrite(fd, buf, 4096, at) != 4096)
        return -1;
    long long t = now_ns();
    if (fsync(fd))
        return -1;
    return now_ns() - t;
}

static void *writer(void *arg)
{
    static char buf[4096];
    memset(buf, 'w', sizeof(buf));
    hv_announce("hv_offcpu/writer");
    int fd = open(path, O_WRONLY);
    long long run0, wait0, run1, wait1, fsync_ns = 0;
    long long t0 = now_ns();
    if (fd < 0 || schedstat(&run0, &wait0)) {
        printf("HVTEST offcpu cannot open %s or read schedstat\n", path);
        return arg;
    }
    long n = 0;
    while (hv_now_ms() < end_ms) {
        long long d = write_and_sync(fd, (off_t)(1 << 20) + (n % 256) * 4096, buf);
        if (d < 0) {
            printf("HVTEST offcpu write or fsync failed\n");
            break;
        }
        fsync_ns += d;
        n++;
    }
    if (schedstat(&run1, &wait1))
        return arg;
    long long t1 = now_ns();
    printf("HVTEST offcpu tid=%ld wall_ns=%lld run_ns=%lld wait_ns=%lld fsync_ns=%lld fsyncs=%ld\n",
           (long)syscall(SYS_gettid), t1 - t0, run1 - run0, wait1 - wait0, fsync_ns, n);
    fflush(stdout);
    close(fd);
    return arg;
}

HV_NOINLINE static void spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i;
}

static void *spinner(void *arg)
{
    hv_announce("hv_offcpu/spin");
    while (hv_now_ms() < end_ms)
        spin(100000);
    return arg;
}

int main(int argc, char **argv)
{
    end_ms = hv_now_ms() + hv_duration_ms(argc, argv);
    path = argc > 2 ? argv[2] : "/dev/vda";
    hv_announce("hv_offcpu");
    pthread_t a, b;
    if (pthread_create(&a, NULL, writer, NULL) || pthread_create(&b, NULL, spinner, NULL))
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
