/* hv_syscalls: a static program that spends its time in system calls:
 *   main -> getppid_loop -> getppid     (syscall entry, tiny kernel work)
 *   main -> read_loop -> read(/dev/zero)  (copy_to_user in the kernel)
 *   main -> pipe_loop -> write/read over a pipe with a child process (scheduler, wakeups)
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "hvtest.h"

volatile unsigned long sink;

HV_NOINLINE static void getppid_loop(int n)
{
    for (int i = 0; i < n; i++)
        sink += (unsigned long)getppid();
}

HV_NOINLINE static void read_loop(int fd, int n)
{
    static char buf[65536];
    for (int i = 0; i < n; i++)
        sink += (unsigned long)read(fd, buf, sizeof(buf));
}

HV_NOINLINE static void pipe_loop(int wfd, int rfd, int n)
{
    char c = 'x';
    for (int i = 0; i < n; i++) {
        if (write(wfd, &c, 1) != 1 || read(rfd, &c, 1) != 1)
            break;
    }
}

int main(int argc, char **argv)
{
    hv_announce("hv_syscalls");
    /* The loops' time counts from here: on a crowded 1-vCPU guest the announcement's console
     * lines can take most of the run (the checks judge the loops' chains). */
    long end = hv_now_ms() + hv_duration_ms(argc, argv);
    int zero = open("/dev/zero", O_RDONLY);
    int to_child[2], to_parent[2];
    if (zero < 0 || pipe(to_child) || pipe(to_parent))
        return 1;
    pid_t child = fork();
    if (child == 0) {
        /* Keep only our ends: with a copy of the write end open, read() never sees EOF. */
        close(to_child[1]);
        close(to_parent[0]);
        hv_announce("hv_syscalls/echo");
        char c;
        while (read(to_child[0], &c, 1) == 1 && write(to_parent[1], &c, 1) == 1)
            ;
        _exit(0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    while (hv_now_ms() < end) {
        getppid_loop(2000);
        read_loop(zero, 20);
        pipe_loop(to_child[1], to_parent[0], 200);
    }
    close(to_child[1]);
    waitpid(child, NULL, 0);
    return 0;
}
