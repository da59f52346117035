/* The system calls each kind of hvprof thread may make (sandbox.h), as libseccomp filters. One
 * table of groups, one list of groups per thread kind: what a kind may do is read off its row
 * (docs/security.md lists them). Apart from sandbox.c so that the lists are read, tested and
 * changed in one place. */
#pragma once

#include <seccomp.h>
#include <stdbool.h>

#include "sandbox/sandbox.h"

/* A new filter for `kind`: allowed calls pass, a clone3 answers ENOSYS (glibc then uses clone,
 * whose flags a filter can see), anything else raises SIGSYS (SCMP_ACT_TRAP). NULL on failure
 * (errno). `net`: the run has a network card. */
scmp_filter_ctx sandbox_filter_new(enum sandbox_thread kind, bool net);
