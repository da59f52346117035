/* What the profile model's files (profile.c, profile_funcs.c, profile_symbolize.c) and the
 * runtimes' report halves share; private to the report library. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/err.h"
#include "common/vector.h"

/* Room for one more element of a profile vector, or -1 with the message. */
#define PROF_VEC_RESERVE(vec, err)                                                                 \
    (vec_reserve(&(vec), 1) ? 0 : hv_errk(err, HV_ERR_NO_MEMORY, "profile: out of memory"))

struct prof_frame;
struct profile;

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
/* profile_funcs.c: function `name` of module `module` (interned), and the index's end (with
 * the symbolization's). */
int prof_intern_func(struct profile *p, const char *name, uint32_t module, struct hv_err *err);
void prof_funcs_index_free(struct profile *p);
/* profile_groups.c: the groups and their index freed. */
void prof_groups_free(struct profile *p);

/* profile_maps.c: the modules' and mappings' index freed (profile_free); mapping ids of `pid`
 * in order of start (*n of them), NULL if none. */
void prof_maps_index_free(struct profile *p);
const uint32_t *prof_mappings_of(struct profile *p, uint64_t pid, size_t *n);

/* profile_aggregate.c: the entry of the sample `in` is (its index, or -1; *hash its key's hash),
 * the index of entries by key, and its end. */
struct prof_sample_in;
int prof_aggregate_find(const struct profile *p, const struct prof_sample_in *in, uint64_t *hash);
int prof_aggregate_insert(struct profile *p, uint64_t hash, uint32_t idx, struct hv_err *err);
/* The same for stacks: the first sample with the stack of `in` (process, ring, frames). */
int prof_stack_find(const struct profile *p, const struct prof_sample_in *in, uint64_t *hash);
int prof_stack_insert(struct profile *p, uint64_t hash, uint32_t idx, struct hv_err *err);
void prof_aggregate_free(struct profile *p);

/* Drop the symbolization's location and function index (profile_symbolize() rebuilds it). */
void prof_symbolize_index_free(struct profile *p);
