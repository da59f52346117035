/* cmocka assertions on a test-guest console (docs/test-guest.md, "Console lines"). */
#pragma once

#include "tests/integration/guest_run.h"

/* The default program set (workload x nworkload, syscall, threads, recurse, nofp) ran on
 * `vcpus` CPUs, every program exited 0 and the guest's status was 0. */
void guest_expect_default_programs(const struct guest_run *r, unsigned vcpus, int nworkload);
