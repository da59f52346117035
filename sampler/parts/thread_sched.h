/* A host thread's scheduler statistics, as Linux keeps them (proc(5), /proc/PID/schedstat,
 * CONFIG_SCHED_INFO): time it ran on a CPU and time it waited, runnable, on a run queue. For a
 * vCPU thread the wait is the guest's steal time: the vCPU could run and the host did not run
 * it (docs/sampling.md, "Steal time"). */
#ifndef HVPROF_SAMPLER_THREAD_SCHED_H
#define HVPROF_SAMPLER_THREAD_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct thread_sched {
    uint64_t run_ns;  /* on a CPU */
    uint64_t wait_ns; /* runnable, waiting on a run queue */
};

/* The text of a schedstat file: "RUN WAIT TIMESLICES\n", decimal. 0, or -1 when it is not that. */
int thread_sched_parse(const char *text, size_t len, struct thread_sched *out);

/* The calling thread's (/proc/thread-self/schedstat). 0, or -1 (no such file: a kernel without
 * CONFIG_SCHED_INFO, no /proc). */
int thread_sched_self(struct thread_sched *out);
/* The same file kept open (-1 when there is none), and read again through it: a thread that
 * opened it at its start reads it at its end without opening anything (sandbox/sandbox.h). */
int thread_sched_open_self(void);
int thread_sched_read(int fd, struct thread_sched *out);
/* Thread `tid` of this process (/proc/self/task/TID/schedstat): the same. */
int thread_sched_of(pid_t tid, struct thread_sched *out);

#endif
