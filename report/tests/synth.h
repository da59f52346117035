/* A synthetic but real profile for writer tests: prog_static mapped at 0x400000 in one guest
 * process, samples with stacks at real function addresses (from nm), a kernel frame resolved by
 * kallsyms text, and frames that stay unresolved (module+offset, raw address). */
#pragma once

#include "report/profile.h"

#define SYNTH_PID  0x10000001ull
#define SYNTH_TID  0x40000001ull
#define SYNTH_PID2 0x10000002ull

/* Fills p (symbolized). Returns the number of samples. The hot leaf is fixture_leaf. */
size_t synth_profile(struct profile *p);
