/* The profile's calls into the language runtimes' report halves (runtime/runtime.h):
 * report/runtimes.c. profile_add_code, profile_code_latest and profile_loc_address are
 * declared in profile.h. */
#pragma once

#include <stdbool.h>

#include "common/err.h"
#include "report/profile.h"

/* After native symbolization: every runtime's frames merged into their samples' stacks. */
int prof_runtimes_merge(struct profile *p, struct hv_err *err);
/* A runtime frame's location by its runtime's report half: true with *rc its result, false when
 * no runtime of the report's names it (it stays an address). */
bool prof_runtime_resolve(struct profile *p, struct prof_loc *l, int *rc, struct hv_err *err);
