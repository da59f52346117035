/* The commands' confinement (run_sandbox.h). */
#include "cli/run_sandbox.h"

#include <string.h>
#include <unistd.h>

#include "cli/run_opts.h"
#include "sandbox/sandbox.h"
#include "vmm/vm.h"

/* The sandbox's hook, from its SIGSYS handler: async-signal-safe (vm_request_stop is). */
static void stop_vm(void *ctx)
{
    vm_request_stop(ctx, VM_STOP_ERROR, 1, -1, "the sandbox refused a system call");
}

static struct sandbox_config cfg;

int run_sandbox_enter(const struct run_opts *o, struct run_session *s, const int *outputs,
                      unsigned noutputs, struct hv_err *err)
{
    memset(&cfg, 0, sizeof(cfg));
    cfg.enabled = !o->no_sandbox;
    if (!cfg.enabled) {
        fprintf(stderr,
                "%s: --no-sandbox: NOT CONFINED. hvprof parses this guest's memory, disks and "
                "network traffic with every privilege it was started with (for debugging "
                "only; docs/security.md)\n",
                o->prog ? o->prog : "hvprof");
        return 0;
    }
    cfg.net = o->net.enabled;
    if (sandbox_choose_user(&cfg, o->user, err) < 0)
        return -1;
    for (unsigned i = 0; i < noutputs && cfg.nchown < SANDBOX_MAX_CHOWN; i++)
        if (outputs[i] >= 0)
            cfg.chown_fds[cfg.nchown++] = outputs[i];
    if (s->own_console && s->console_fd >= 0 && cfg.nchown < SANDBOX_MAX_CHOWN)
        cfg.chown_fds[cfg.nchown++] = s->console_fd;
    sandbox_on_violation(stop_vm, s->vm);
    return sandbox_enter(&cfg, err);
}

bool run_sandbox_report(const char *cmd, FILE *out)
{
    return sandbox_report(cmd, out);
}

void run_sandbox_describe(const struct run_opts *o, char *buf, size_t len)
{
    if (o->no_sandbox || !sandbox_active())
        snprintf(buf, len, "off (--no-sandbox)");
    else if (cfg.change_user)
        snprintf(buf, len, "on: seccomp per thread, no capabilities, no_new_privs, as %s",
                 cfg.user);
    else
        snprintf(buf, len, "on: seccomp per thread, no capabilities, no_new_privs (as uid %u)",
                 (unsigned)getuid());
}
