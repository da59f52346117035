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

/* profile_symbolize.c: frame fr of a sample of process pid to its location (fr->loc). */
int prof_frame_resolve(struct profile *p, uint64_t pid, struct prof_frame *fr, struct hv_err *err);
/* profile_symbolize.c: function `name` of module `module` (interned). */
int prof_intern_func(struct profile *p, const char *name, uint32_t module, struct hv_err *err);

/* profile_python.c: a Python frame's location (its function, line), and the merge of each
 * sample's recorded Python frames into its native stack (after its native frames resolved). */
int prof_python_resolve(struct profile *p, struct prof_loc *l, struct hv_err *err);
int prof_python_merge(struct profile *p, struct hv_err *err);
void prof_python_free(struct profile *p);

/* Drop the symbolization's location and function index (profile_symbolize() rebuilds it). */
void prof_symbolize_index_free(struct profile *p);
