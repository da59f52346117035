/* The Linux test bed (docs/linux.md "Test bed") from a cmocka test: run scenarios in the outer
 * VM (tests/linux/run.sh), read what each one left (status, console, summary, recording), and
 * check them against what the guest itself printed (HVTEST lines of tests/linux/l2_init.sh and
 * the workloads) and against the reference VMM's boot of the same kernel (QEMU/KVM in L1). */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/profile.h"

/* How CI's matrix runs a scenario (docs/linux.md, "CI's matrix and the full one"). */
enum tb_in_ci {
    TB_CI = 0,      /* as it is */
    TB_CI_ONE_VCPU, /* with one vCPU: the emulated SVM's faults and L1 deaths come with 2+ */
    TB_FULL_ONLY,   /* not at all: the full matrix only */
};

/* One scenario: hvprof (record/run) or QEMU (qemu) boots `kernel` (generic or cloud). */
struct tb_scenario {
    const char *name;
    const char *cmd;    /* "record", "run" or "qemu" */
    const char *kernel; /* "generic", "cloud" or a suite of the kernel matrix (prepare.sh) */
    unsigned vcpus;
    const char *mem;     /* "512M" */
    const char *cmdline; /* appended to TB_BASE_CMDLINE */
    const char *opts;    /* hvprof (or QEMU) options; NULL = none */
    const char *env;     /* VAR=VALUE words; NULL = none */
    enum tb_in_ci ci;    /* how CI's matrix runs it (tb_select) */
};

/* Which matrix the tests run (docs/linux.md, "CI's matrix and the full one"): CI's by default,
 * each of its scenarios once, so that the Linux stage fits CI's time; the full one with
 * HVPROF_TB_FULL=1 (scripts/test-linux-full.sh), every scenario with the repeats its test asks
 * for. */
bool tb_full(void);
/* The scenarios of s[0..n) the matrix in use runs, copied to out (room for n), with one vCPU
 * where CI's matrix says so; returns how many. */
size_t tb_select(const struct tb_scenario *s, size_t n, struct tb_scenario *out);
/* How often each scenario runs: `full` in the full matrix, once in CI's. */
unsigned tb_repeat(unsigned full);

/* What every scenario's guest gets on its command line (hvtest.* select the workloads). */
#define TB_BASE_CMDLINE "console=ttyS0 reboot=k panic=-1 pci=off"

#define TB_MAX_PROCS 32
#define TB_MAX_MAPS  256

/* A guest process as the guest announced it ("HVTEST proc NAME pid=P tid=T"). */
struct tb_gproc {
    char name[40];
    int pid, tid;
    /* The CPU time the guest gave the process ("HVTEST cpu pid=P user_ms=U sys_ms=S" at its
     * exit, on the main thread's entry only); -1 when it did not say. */
    long cpu_ms;
};
/* An executable mapping as the guest saw it in /proc/PID/maps ("HVTEST map P LO-HI PATH"). */
struct tb_map {
    int pid;
    uint64_t lo, hi;
    char path[96];
};

/* A kernel symbol as the guest's /proc/kallsyms shows it ("HVTEST ksym ADDR TYPE NAME"). */
struct tb_ksym {
    uint64_t addr;
    char type; /* t or T */
    char name[64];
};
#define TB_MAX_KSYMS    16
#define TB_MAX_KMODSYMS 256

struct tb_result {
    char name[64];
    bool present; /* the scenario finished (L1 did not die in it) */
    int status;   /* exit status of the command */
    double seconds;
    char *console, *summary; /* NUL-terminated, never NULL when present */
    char *kvm_clock;         /* L1's KVM clock events in the run (l1_init.sh), or NULL */
    char rec[PATH_MAX];      /* the recording (record only) */
    bool userspace, done;    /* HVTEST userspace / HVTEST done seen */
    unsigned cpus;           /* CPUs the guest brought up */
    unsigned paging_levels;  /* 4 or 5, as the guest runs */
    bool pti;                /* the guest runs with page-table isolation */
    struct tb_gproc procs[TB_MAX_PROCS];
    unsigned nprocs;
    struct tb_map maps[TB_MAX_MAPS];
    unsigned nmaps;
    struct tb_ksym ksyms[TB_MAX_KSYMS];
    unsigned nksyms;
    /* The kernel module the guest loaded ("HVTEST kmod NAME loaded|failed") and the code
     * symbols /proc/kallsyms shows for it ("HVTEST kmodsym ADDR TYPE NAME"). */
    char kmod[32];
    bool kmod_loaded;
    struct tb_ksym kmodsyms[TB_MAX_KMODSYMS];
    unsigned nkmodsyms;
};

/* The images the disk scenarios get in L1 (tests/linux/l1_init.sh): a fresh 64 MiB disk
 * labelled at its start, and a fresh copy of the test bed's ext4 root. */
#define TB_DISK "/tmp/hvtest-disk.img"
#define TB_ROOT "/tmp/hvtest-root.img"
/* The same root as a compressed qcow2 image (l1_init.sh: compared with its original after the
 * run: hvprof never writes it). */
#define TB_ROOT_QCOW2 "/tmp/hvtest-root.qcow2"

/* A group's scenarios (tests/linux/matrix.c): reference, boot, modes, la57, smp64, disk,
 * disk-root; NULL and *n = 0 for an unknown name. */
const struct tb_scenario *tb_group(const char *name, size_t *n);
/* Select group's scenarios for the matrix in use into sel (room for TB_MAX_GROUP), run them
 * (tb_run) `full_repeat` times in the full matrix, once in CI's; *repeat says which. Returns
 * how many were selected. */
#define TB_MAX_GROUP 16
size_t tb_run_group(const char *group, unsigned full_repeat, struct tb_scenario *sel,
                    unsigned *repeat, char *out, size_t len);
/* The groups CI's matrix runs together in one sequence of L1 boots (NULL-terminated). */
extern const char *const tb_ci_shared[];

/* CI's matrix: run the selected scenarios of every group of tb_ci_shared in one sequence of L1
 * boots, into <build>/linux-runs/ci, and mark it complete; tb_run() of those groups then takes
 * their results from there (the fixture test_linux_ci_runs). Does nothing in the full matrix. */
void tb_run_ci_shared(void);

/* The test bed's cache (prepared by the linux_prepare fixture). */
const char *tb_cache(void);

/* Run the scenarios, each `repeat` times (results NAME.1, NAME.2, ...; repeat 1: NAME), in as few
 * L1 boots as possible; results under OUT = <build>/linux-runs/<group>. In CI's matrix, a group
 * that tb_run_ci_shared() already ran is not run again: OUT is <build>/linux-runs/ci. Fails the
 * test if run.sh cannot run at all (no KVM in L1, no QEMU: a test bed that cannot run here must
 * fail loudly, never pass). */
void tb_run(const char *group, const struct tb_scenario *s, size_t n, unsigned repeat, char *out,
            size_t len);

/* How many distinct vCPUs the recording has samples from. */
unsigned tb_vcpus_sampled(const struct tb_result *r);

/* The run had (almost) no user-mode samples (under 1 % of the kernel's) and missed more timer
 * ticks than it took, or under 0.1 % whatever it missed: the emulated platform did not interrupt
 * the guest's user mode (docs/linux.md, "Runs without user-mode exits"); tb_each_run()
 * tolerates it like a triple fault. */
bool tb_starved(const struct tb_result *r);

/* The same for part of the run: user samples under 10 % of the kernel's and more than a third
 * of the ticks missed (normal runs: 18-37 % and at most a quarter; one 1-vCPU run measured 5 %
 * and 44 %, its programs unsampled for a second). Checks that need every workload sampled skip
 * such a run and say so. */
bool tb_starved_partly(const struct tb_result *r);

/* The guest triple-faulted (KVM_EXIT_SHUTDOWN). Under the test bed's emulated SVM an isolated
 * one is the emulator's (docs/linux.md, "Triple faults on the test bed"); tb_each_run() decides
 * what is tolerated. */
bool tb_triple_fault(const struct tb_result *r);

/* The guest never reached /init and hvprof stopped it at its timeout (a guest kernel livelocked
 * in its boot on the emulated platform: docs/linux.md); tolerated once per scenario. */
bool tb_hung_in_boot(const struct tb_result *r);

/* Load every run of scenario s and call check() on each run that did not triple-fault or starve
 * (tb_starved, printed with L1's interrupt counts). L1 boots
 * a guest that triple-faulted again, three attempts at most (tests/linux/l1_init.sh); every
 * faulted attempt is reported with the registers of its last exit. A run whose three attempts
 * all faulted is skipped; the test fails if every run of the scenario was skipped. Returns
 * the number of runs checked. */
unsigned tb_each_run(const char *out, const struct tb_scenario *s, unsigned repeat,
                     void (*check)(const struct tb_result *r, const struct tb_scenario *s,
                                   void *ctx),
                     void *ctx);

void tb_load(struct tb_result *r, const char *out, const char *name);
/* Each line of a guest console as the guest's programs wrote it: a kernel message printed in
 * the middle of one of their lines is handed over on its own and the line joined again. */
void tb_each_line(const char *console, void (*fn)(const char *line, void *arg), void *arg);

/* The run's recording as a profile symbolized with only what it carries (no files), or the test
 * fails. profile_free() it. */
void tb_load_profile(const struct tb_result *r, struct profile *p);
/* The same with glibc's debug file on this host added (libc6-dbg): for a check to tell glibc's
 * internal frames (start_thread, __libc_start_call_main), which nothing in the guest names. */
void tb_load_judged(const struct tb_result *r, struct profile *p);

/* How many L1 boots died in run `name` of the runs in `out` (run.sh's l1.log); with `print`,
 * for each the first line of L1's own panic report on its console. */
unsigned tb_l1_deaths(const char *out, const char *name, bool print);

/* The platform's control (docs/linux.md, "The reference under hvprof's load"): a "qemu"
 * scenario with HVTEST_KICK_HZ in its environment, QEMU/KVM booting the workloads while its
 * vCPU threads are kicked at hvprof's rate and its guest's RAM is read (kick.c). */
bool tb_is_control(const struct tb_scenario *s);

/* A control's run: it must have run under the kicker (its report in the summary; else the test
 * fails); whether QEMU/KVM lost its guest is printed, not judged. */
void tb_keep_control(const char *out, const char *name);

/* The reference VMM's evidence that the platform loses guests under hvprof's load: the first
 * control run, among those in `out` and then those of the reference group, whose guest did not
 * finish its workloads (reset, hung, or its L1 died), described in `why`. False: every control
 * completed, or none ran; a loss of hvprof's guest is then hvprof's (tb_each_run fails). */
bool tb_platform_evidence(const char *out, char *why, size_t len);
void tb_free(struct tb_result *r);

/* The boot checks every hvprof scenario must pass: it finished, exit status 0 and a clean stop
 * (guest reset or power-off), user space reached, the workloads finished, and the guest brought
 * up exactly s->vcpus CPUs. */
void tb_check_boot(const struct tb_result *r, const struct tb_scenario *s);

/* Every warning or error line of the console must also be in `reference` (the same kernel
 * booted by QEMU/KVM on the same emulated CPU), or in the console of QEMU/KVM booting s->kernel
 * in this session under hvprof's load (its kicked control, control.c): hvprof may not add any.
 * Timestamps, numbers and addresses are ignored in the comparison. */
void tb_check_console_clean(const struct tb_result *r, const struct tb_scenario *s,
                            const char *reference);

/* The reference console for (kernel, vcpus), NULL if the reference fixture did not produce it.
 * Malloc'd. */
char *tb_reference(const char *kernel, unsigned vcpus);

/* A reference boot (a "qemu" scenario) run `name` in `out`: tb_check_boot, then its console kept
 * as the reference for (s->kernel, s->vcpus) in the cache, which tb_reference() reads. */
void tb_keep_reference(const char *out, const char *name, const struct tb_scenario *s);

/* What a boot of the workloads must show, as test_linux_boot and test_linux_kernels check it:
 * tb_check_boot, a clean console against the kernel's reference, the recording, kernel symbols
 * naming 95 % of kernel-half samples, tasks, user stacks and hv_syscalls' kernel stacks exact in
 * 95 % of the judged samples, and (when `pprof`) pprof -disasm until each image kind passed.
 * A tb_each_run() check; ctx is a struct tb_boot_totals. */
struct tb_boot_totals {
    uint64_t judged;      /* user samples whose chains were judged */
    uint64_t syscall;     /* hv_syscalls' kernel samples judged */
    bool pprof;           /* run tb_check_pprof_disasm */
    unsigned pprof_kinds; /* image kinds pprof -disasm verified */
};
void tb_check_boot_run(const struct tb_result *r, const struct tb_scenario *s, void *ctx);

/* Recording checks: it reads cleanly, has user- and kernel-mode samples and kernel samples
 * with their user stacks (walked at once from the kernel entry frame, or completed later), and
 * each workload process of the guest is recorded as one process: the user
 * samples inside its executable's mapping (the guest's own /proc/PID/maps) all belong to one
 * recorded process (processes that share a layout, a fork's parent and child, to at most as
 * many). Returns the number of kernel samples with user stacks. */
uint64_t tb_check_recording(const struct tb_result *r);
/* A file L1 wrote beside the run's recording (net-load.txt, killed, fsck.txt), its first 16 KiB
 * NUL-terminated and malloc'd; "" when there is none. */
char *tb_beside(const struct tb_result *r, const char *file);

/* Kernel symbols from the guest's memory alone (no symbol file given to report): every symbol
 * the guest printed from its /proc/kallsyms resolves, at its exact address, to the same name in
 * the recording (the guest prints only functions without aliases: `_stext` shares its address
 * with `_text`, and either name is right), and at least `min_named` of the kernel-mode samples
 * whose pc lies in the kernel's half of the address space land in a named function. The kernel
 * module the guest loaded (brd) is in the recording as "[brd]" over its code, every code symbol
 * its /proc/kallsyms shows for it resolves to the same name at the same address, and every frame
 * inside it is named. Prints the numbers. */
void tb_check_kernel_symbols(const struct tb_result *r, double min_named);

/* Guest pids, tids and names from the guest's memory alone (its task_structs): every user
 * sample inside a workload's executable mapping (or hv_dlopen's library) carries the pid, tid and
 * name that workload announced for itself (HVTEST proc; a forked child keeps its parent's name),
 * each workload program has samples under its own pid, and the summary says tasks were read. Prints
 * what it found, kernel threads included. A run with fewer than 50 user samples in all, or
 * tb_starved_partly (the emulated platform's starvation, docs/linux.md), skips the presence
 * check and says so. */
void tb_check_tasks(const struct tb_result *r);

/* Returns the samples judged (0 when the run has under 50: the platform's starvation, printed
 * as a NOTE; callers require a total over their runs).
 * User stacks exact from the guest's memory and, with `workload_files`, the workloads' own files
 * (--symbols at report; without, the workloads' names must come from the recording alone: the
 * guest's page cache or disk): at least
 * `min_exact` of the user samples in the workloads' known functions carry their whole known
 * chain (hv_busy: spin <- leaf_a <- hot_a <- main, spin <- hot_b <- main, with the frameless
 * leaf's caller; hv_threads: spin_left <- left_loop <- left_worker, ...), and libc.so.6 is
 * named by its path in the guest with its exported functions read from guest memory. glibc's
 * internal functions (start_thread, __libc_start_call_main) are named by glibc's debug file on
 * this host in both cases: the guest's libc.so.6 is stripped and does not export them, so
 * nothing in the guest names them; the check needs them to tell a chain's root. */
uint64_t tb_check_user_stacks(const struct tb_result *r, double min_exact, bool workload_files);

/* hv_syscalls' kernel-mode samples (docs/orc.md): at least min_ok of them carry an unbroken
 * kernel chain from the guest kernel's ORC tables that ends at the system-call entry
 * (entry_SYSCALL_64...) with the user stack from the exact user PC at entry: a system-call
 * wrapper, then its caller among the workload's loops, up to main. Kernel samples of the
 * workloads that end at an interrupt or exception entry from user mode must name it and carry
 * the interrupted user PC. Runs with fewer than 50 such samples are not judged. Returns the
 * number judged. */
uint64_t tb_check_syscall_stacks(const struct tb_result *r, double min_ok);

/* pprof -disasm on this run's recording (tests/linux/testbed_pprof.c): for each of a static
 * executable's, a PIE's and a shared object's function sampled in user mode, every sample pprof
 * counts for it lies on one of its instructions (the mappings' file offsets are right). Needs
 * the pprof the consumers_pprof fixture builds. Returns a bit per kind verified (bit i of
 * TB_PPROF_FNS); a function without samples in the run is not judged. */
#define TB_PPROF_FNS 3
unsigned tb_check_pprof_disasm(const struct tb_result *r);
/* The build's directory (HVPROF_BINARY_DIR) and the pprof the consumers_pprof fixture builds
 * in it, into bin and pprof (PATH_MAX each); the test fails when either is missing. */
void tb_pprof_paths(char *bin, char *pprof);

/* User samples in the program's own known functions (spin, leaf_a, ...: built with frame
 * pointers) inside the guest's mapping of /bin/NAME, and how many of those the walk took
 * through main to main's caller (for frame-pointer walks through the guest's paging: a sample
 * in main itself has main and its caller, one in spin spin <- leaf_a <- hot_a <- main <- its
 * caller). The static libc linked into the same mapping (startup code without frame pointers)
 * is not counted. */
void tb_user_stacks(const struct tb_result *r, const char *name, uint64_t *samples,
                    uint64_t *to_main);
