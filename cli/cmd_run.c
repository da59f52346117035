/* hvprof run: boot a guest and exit with its status. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/disk_notes.h"
#include "cli/options.h"
#include "cli/run_opts.h"
#include "cli/run_sandbox.h"

static const struct cli_group *const run_groups[] = {&run_opts_group};

const struct cli_command cli_run = {
    .name = "run",
    .synopsis = "[--guest demo | --kernel FILE] [options]",
    .about = "Boot a guest under hvprof's VMM (no sampling) and exit with the guest's status:\n"
             "the value it writes to the debug-exit port, 0 on reset, 1 on a triple fault or\n"
             "KVM error, 124 on --timeout, 128+N on signal N.",
    .examples = "hvprof run --guest demo                     # boot the demo guest, no sampling\n"
                "hvprof run --kernel bzImage --initrd initrd.img --cmdline 'console=ttyS0'\n"
                "hvprof run --disk debian.qcow2 --net user --timeout 60",
    .groups = run_groups,
    .ngroups = sizeof(run_groups) / sizeof(run_groups[0]),
};

static int handle(void *ctx, int id, const char *arg, struct hv_err *err)
{
    return run_opts_handle(ctx, id, arg, err);
}

int cmd_run(int argc, char **argv)
{
    run_signals_install(); /* first: a signal at any moment of start-up is handled */
    /* Static, like the recording's extras: what run_opts_finish read (a disk's kernel and
     * initrd) stays reachable until the process ends, whichever way the command returns. */
    static struct run_opts o;
    run_opts_init(&o);
    o.prog = "hvprof run";
    struct hv_err err = {0};
    int parsed = cli_parse(&cli_run, argc, argv, handle, &o);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    if (optind < argc) {
        fprintf(stderr, "hvprof run: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (run_opts_finish(&o, &err) < 0 || run_opts_check_outputs(&o, NULL, &err) < 0) {
        fprintf(stderr, "hvprof run: %s\n", err.msg);
        return o.disk_failed ? 1 : 2; /* a disk's file, or the command line */
    }
    struct run_session s;
    /* SYNC_REGS: KVM copies the registers at every exit, so a triple fault's report can show
     * the last exit's (vmm/watchdog.h); a few hundred ns per exit. */
    if (run_session_open(&s, &o, NULL, true, &err) < 0) {
        fprintf(stderr, "hvprof run: %s\n", err.msg);
        return 1;
    }
    if (run_sandbox_enter(&o, &s, NULL, 0, &err) < 0) {
        fprintf(stderr, "hvprof run: %s\n", err.msg);
        run_session_close(&s);
        return 1;
    }
    run_session_catch_signals(&s);
    struct vm_result res;
    int rc = vm_run(s.vm, &res, &err);
    run_signals_finishing();
    if (rc < 0) {
        fprintf(stderr, "hvprof run: %s\n", err.msg);
        run_session_close(&s);
        return 1;
    }
    vm_disks_stop(&s.vm->disks);
    run_disks_warnings(s.vm, &o, stderr);
    run_session_close(&s);
    fflush(stdout);
    if (run_sandbox_report("hvprof run", stderr))
        return 1;
    run_report_stop(stderr, "hvprof run", &res);
    return res.status;
}
