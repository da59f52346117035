/* Options that describe the guest to boot, shared by `hvprof run` and `hvprof record`, and the
 * code that turns them into a booted-but-not-running VM.
 *
 *   struct run_opts o;  run_opts_init(&o);
 *   cli_parse(cmd with run_opts_group among its groups, ..., handler):
 *       r = run_opts_handle(&o, id, arg, &err)       1 = consumed, 0 = not ours, -1 = error
 *   run_opts_finish(&o, &err)                        resolve --guest demo, check files
 *   struct run_session s;
 *   run_session_open(&s, &o, &hooks, sync_regs, &err)  vm_create + boot_load + vm_set_entry
 *   run_session_catch_signals(&s)                    SIGINT/SIGTERM -> vm_request_stop
 *   vm_run(s.vm, &res, &err); ... run_session_close(&s);
 */
#pragma once

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/disk_spec.h"
#include "cli/options.h"
#include "cli/domain_xml.h"
#include "common/err.h"
#include "common/output.h"
#include "vmm/boot/boot.h"
#include "vmm/vm.h"

#define RUN_DEFAULT_MEM    (256ull << 20)
#define RUN_DEFAULT_VCPUS  1u
#define RUN_MIN_MEM        VM_MIN_MEM
#define RUN_MAX_DISK_FILES (VM_MAX_DISKS * 16) /* each disk's chain: QCOW_MAX_CHAIN files */

/* getopt_long `val`s of the shared options (outside the ASCII range of short options). */
enum {
    RUN_OPT_GUEST = 0x1000,
    RUN_OPT_KERNEL,
    RUN_OPT_INITRD,
    RUN_OPT_CMDLINE,
    RUN_OPT_VCPUS,
    RUN_OPT_MEM,
    RUN_OPT_CONSOLE,
    RUN_OPT_TIMEOUT,
    RUN_OPT_DISK,
    RUN_OPT_LIBVIRT,
    RUN_OPT_CONNECT,
    RUN_OPT_LIBVIRT_IGNORE,
    RUN_OPT_CONSOLE_MAX,
    RUN_OPT_BOOT_ENTRY,
    RUN_OPT_NET,
    RUN_OPT_FORCE,
    RUN_OPT_NO_SANDBOX,
    RUN_OPT_USER,
};

/* The shared options, one table (cli/options.h): a group of every command that boots a guest. */
extern const struct cli_group run_opts_group;

struct run_opts {
    const char *guest;  /* "demo" or NULL */
    const char *kernel; /* ELF64 or bzImage path */
    const char *initrd;
    const char *cmdline;
    unsigned vcpus;
    uint64_t mem_bytes;
    const char *console;        /* NULL = stdout */
    bool force;                 /* --force: outputs may replace existing files (common/output.h) */
    bool no_sandbox;            /* --no-sandbox: not confined (cli/run_sandbox.h) */
    const char *user;           /* --user NAME: whom to run as once confined */
    uint64_t console_max;       /* --console-max (0: the VMM's default) */
    double timeout_s;           /* 0 = none */
    char kernel_path[PATH_MAX]; /* storage for resolved --guest demo paths */
    char initrd_path[PATH_MAX];
    struct vm_disk disks[VM_MAX_DISKS]; /* --disk FILE[,format=...][,readonly]... */
    unsigned ndisks;
    struct disk_spec disk_spec[VM_MAX_DISKS]; /* what each --disk said (cli/disk_spec.h) */
    /* Every file the disks are made of, their images and backing chains (run_opts_finish,
     * cli/disk_notes.h): inputs that no output may name. */
    char *disk_files[RUN_MAX_DISK_FILES];
    unsigned ndisk_files;
    bool disk_failed; /* run_opts_finish failed on a disk's file (exit 1, not a usage error) */
    bool vcpus_given, mem_given; /* on the command line: they win over a libvirt domain's */
    /* --libvirt DOMAIN [--connect URI] [--libvirt-ignore-unsupported] (docs/libvirt.md): the
     * domain's definition, read by run_opts_finish; what the command line gives wins. */
    const char *libvirt, *connect;
    bool libvirt_ignore;
    const char *prog; /* "hvprof record": the prefix of the notes run_opts_finish prints */
    struct domain_config domain;
    /* No --kernel: the first disk's boot entry (cli/disk_boot.c, docs/disk-boot.md), chosen
     * by --boot-entry or the disk's default; its files are read into memory. */
    const char *boot_entry;
    struct net_config net;       /* --net user[,hostfwd=...] (docs/net.md) */
    struct disk_boot *disk_boot; /* NULL unless booting a disk's entry; its kernel and initrd
                                  * are freed once run_session_open put them in guest memory */
};

void run_opts_init(struct run_opts *o);
int run_opts_handle(struct run_opts *o, int opt, const char *arg, struct hv_err *err);
/* After parsing: read a --libvirt domain (printing, one line each, what it asks for that hvprof
 * cannot give; an error unless --libvirt-ignore-unsupported), resolve --guest demo
 * (HVPROF_GUEST_DIR, <exe>/../tests/guest, <exe>/../share/hvprof/guest), require a kernel,
 * check files are readable. */
int run_opts_finish(struct run_opts *o, struct hv_err *err);

/* Directory of the built-in guest, or -1 with a message listing where it looked. */
int run_find_guest_dir(char *dir, size_t len, struct hv_err *err);

struct run_session {
    struct vm *vm;
    struct hv_output console; /* --console's file (common/output.h) */
    int console_fd;
    bool own_console;
    struct boot_entry boot; /* what the loader did (entry point, kernel/initrd placement) */
};

/* Create the VM with `hooks` (may be NULL) and boot the kernel into it. */
int run_session_open(struct run_session *s, const struct run_opts *o, const struct vm_hooks *hooks,
                     bool sync_regs, struct hv_err *err);
/* No output (`recording`, NULL for run; --console) may be the kernel, the initrd or another
 * output (common/files.h): -1 with the two paths named. */
int run_opts_check_outputs(const struct run_opts *o, const char *recording, struct hv_err *err);

/* SIGINT/SIGTERM/SIGHUP handled from the command's start (call first; SIGPIPE ignored): one
 * before the VM runs is kept for run_session_catch_signals (cli/run_opts.c says when a second
 * one leaves at once). */
void run_signals_install(void);
/* From now on they stop s->vm cleanly (status 128 + signo), at once if one came earlier. */
void run_session_catch_signals(struct run_session *s);
/* The VM has stopped: signals are ignored while the command finishes (also run_session_close). */
void run_signals_finishing(void);
void run_session_close(struct run_session *s);

/* What each --disk did ("  disk vda IMAGE: ..." lines, for the record summary) and the network
 * card's line, into buf; called after vm_disks_stop, when the I/O threads' counts are final. */
void run_disks_summary(const struct vm *vm, const struct run_opts *o, char *buf, size_t len);

/* Print a one-line summary of why the VM stopped (nothing for a plain guest exit). */
void run_report_stop(FILE *out, const char *cmd, const struct vm_result *r);
