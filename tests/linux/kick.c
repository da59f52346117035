/* hvtest_kick: give the test bed's reference VMM the load hvprof's sampling puts on L1
 * (docs/linux.md, "Triple faults on the test bed"): every vCPU thread of a running QEMU/KVM is
 * signalled at HZ, as hvprof's per-vCPU timers signal its own vCPU threads, and at each tick a
 * few pages of the guest's RAM are read (process_vm_readv), as hvprof's drain thread reads guest
 * memory beside them. QEMU takes SIGUSR1 (its SIG_IPI) as a kick: KVM_RUN returns -EINTR and the
 * vCPU thread re-enters the guest at once. A guest fault that QEMU shows under this load is the
 * platform's; one that only hvprof shows is hvprof's.
 *
 * Usage: hvtest_kick PID HZ MEM_BYTES
 *   PID: the QEMU process; its vCPU threads are those named "CPU N/KVM" (QEMU names them so
 *   with -name ...,debug-threads=on; rescanned as they appear).
 *   MEM_BYTES: the size of the guest's RAM (-m), to find its mapping in /proc/PID/maps.
 * Runs until PID exits; prints the kicks, the ticks missed and the pages read to stderr.
 *
 * A tick is missed when the kicker wakes a whole period or more after it was due: L1 did not
 * run it in time, as hvprof's timer overruns count ticks its vCPU threads were not signalled
 * for. A control whose kicker missed more ticks than it took saw the platform starve L1's timer
 * interrupts (docs/linux.md, "Runs without user-mode exits"). */

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_VCPUS      256
#define PAGES_PER_TICK 8

struct kick {
    pid_t pid;
    pid_t tids[MAX_VCPUS];
    unsigned ntids, most; /* vCPU threads now, and the most seen at once */
    uint64_t ram_lo, ram_size;
    uint64_t kicks, pages, ticks, missed;
    uint64_t rng;
};

static void scan_vcpus(struct kick *k)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)k->pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    k->ntids = 0;
    for (struct dirent *e; (e = readdir(d)) && k->ntids < MAX_VCPUS;) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char comm_path[384], comm[32] = "";
        snprintf(comm_path, sizeof(comm_path), "%s/%s/comm", path, e->d_name);
        FILE *f = fopen(comm_path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "CPU ", 4) && strstr(comm, "/KVM"))
            k->tids[k->ntids++] = (pid_t)atoi(e->d_name);
        fclose(f);
    }
    closedir(d);
    if (k->ntids > k->most)
        k->most = k->ntids;
}

/* The guest's RAM: the first mapping of exactly its size (QEMU maps it anonymous, read-write). */
static void find_ram(struct kick *k, uint64_t size)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)k->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        uint64_t lo, hi;
        if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && hi - lo == size) {
            k->ram_lo = lo;
            k->ram_size = size;
            break;
        }
    }
    fclose(f);
}

static uint64_t next_rand(struct kick *k)
{
    k->rng ^= k->rng << 13;
    k->rng ^= k->rng >> 7;
    k->rng ^= k->rng << 17;
    return k->rng;
}

static void read_pages(struct kick *k)
{
    static uint8_t buf[PAGES_PER_TICK][4096];
    struct iovec local[PAGES_PER_TICK], remote[PAGES_PER_TICK];
    for (unsigned i = 0; i < PAGES_PER_TICK; i++) {
        local[i] = (struct iovec){buf[i], 4096};
        uint64_t page = next_rand(k) % (k->ram_size / 4096);
        remote[i] = (struct iovec){(void *)(uintptr_t)(k->ram_lo + page * 4096), 4096};
    }
    ssize_t n = process_vm_readv(k->pid, local, PAGES_PER_TICK, remote, PAGES_PER_TICK, 0);
    if (n > 0)
        k->pages += (uint64_t)n / 4096;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: hvtest_kick PID HZ MEM_BYTES\n");
        return 2;
    }
    struct kick k = {.pid = (pid_t)atoi(argv[1]), .rng = 0x9e3779b97f4a7c15ull};
    long hz = atol(argv[2]);
    uint64_t mem = strtoull(argv[3], NULL, 0);
    if (k.pid <= 0 || hz <= 0 || hz > 100000 || mem < 4096) {
        fprintf(stderr, "hvtest_kick: bad arguments\n");
        return 2;
    }
    const long period = 1000000000L / hz;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (uint64_t tick = 0; kill(k.pid, 0) == 0 || errno != ESRCH; tick++) {
        if (tick % (uint64_t)(hz / 10 + 1) == 0) { /* ten times a second */
            scan_vcpus(&k);
            if (!k.ram_size)
                find_ram(&k, mem);
        }
        for (unsigned i = 0; i < k.ntids; i++)
            if (syscall(SYS_tgkill, k.pid, k.tids[i], SIGUSR1) == 0)
                k.kicks++;
        if (k.ram_size)
            read_pages(&k);
        next.tv_nsec += period;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
        k.ticks++;
        /* Woken a period or more late: those periods are missed and not made up (a timer's
         * overrun), the next tick is due a period from now. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t late = (int64_t)(now.tv_sec - next.tv_sec) * 1000000000L +
                       (now.tv_nsec - next.tv_nsec);
        if (late >= period) {
            k.missed += (uint64_t)(late / period);
            next = now;
        }
    }
    fprintf(stderr,
            "hvtest_kick: %" PRIu64 " kicks to %u vCPU threads at %ld Hz, %" PRIu64
            " guest pages read (RAM %s); %" PRIu64 " ticks taken, %" PRIu64 " missed\n",
            k.kicks, k.most, hz, k.pages, k.ram_size ? "found" : "NOT found", k.ticks,
            k.missed);
    return 0;
}
