/* `run`, `record` and `top` confined once their guest is set up (sandbox/sandbox.h): the
 * options (--no-sandbox, --user) turned into the sandbox's configuration, the VM stopped by a
 * refused system call, and the refusal said at the end. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"

struct run_opts;
struct run_session;

/* Confine now: every file, the VM and the devices are open, no thread runs yet. `outputs`:
 * descriptors of files this command made (handed to the user it becomes). */
int run_sandbox_enter(const struct run_opts *o, struct run_session *s, const int *outputs,
                      unsigned noutputs, struct hv_err *err);

/* After the guest stopped: the refused call, if one stopped it (true: the command fails). */
bool run_sandbox_report(const char *cmd, FILE *out);

/* "on: seccomp per thread, no capabilities, as alice" (or "off: --no-sandbox"), for the
 * summary. */
void run_sandbox_describe(const struct run_opts *o, char *buf, size_t len);
