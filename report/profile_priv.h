/* What profile.c and profile_symbolize.c share; private to report/. */
#pragma once

#include <string.h>

#include "common/err.h"
#include "common/vector.h"
#include "report/profile.h"

/* Room for one more element of a profile vector, or -1 with the message. */
#define PROF_VEC_RESERVE(vec, err)                                                                 \
    (vec_reserve(&(vec), 1) ? 0 : hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory"))

/* A copy of a name from a recording or a symbol file with its control characters (C0, DEL)
 * shown as '?': a hostile guest's names must not drive the terminal a report is printed on. */
char *prof_dup_printable(const char *name);

/* The last path component of `s` (s itself when it ends in '/'). */
static inline const char *prof_base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash && slash[1] ? slash + 1 : s;
}

/* Drop the symbolization's location and function index (profile_symbolize() rebuilds it). */
void prof_symbolize_index_free(struct profile *p);
