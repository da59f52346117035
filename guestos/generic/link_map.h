/* The dynamic loader's list of loaded objects, read from guest memory: the executable's DT_DEBUG
 * entry points at the loader's `struct r_debug`, whose r_map heads a list of `struct link_map`
 * (<link.h>: the interface debuggers use; the same in glibc and musl). Each entry gives an
 * object's load bias (l_addr), its path as the loader opened it (l_name) and its run-time
 * dynamic section (l_ld). dlopen() adds entries (r_state RT_ADD while it does).
 *
 * x86-64 layouts (LP64): r_debug {int r_version; link_map *r_map @8; r_brk @16; int r_state
 * @24; r_ldbase @32}; link_map {l_addr @0; char *l_name @8; l_ld @16; l_next @24; l_prev @32}.
 * The list lives in the process's writable memory: bounded by count, each entry's l_prev must
 * point back at the entry before it, and names are bounded and printable. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/module.h"

#define LINK_MAP_MAX 1024 /* entries followed at most */

struct link_map_entry {
    uint64_t addr;                /* l_addr: load bias */
    uint64_t ld;                  /* l_ld: run-time address of its dynamic section */
    char name[DISCOVER_NAME_MAX]; /* l_name; "" for the executable and unreadable names */
};

/* The entries of the list that r_debug (a run-time address) heads, at most max. Returns how
 * many, or -1 when r_debug cannot be read or is not one; *consistent says whether the loader
 * was between changes (RT_CONSISTENT) when read. */
int link_map_read(discover_read_fn read, void *ctx, uint64_t r_debug, struct link_map_entry *out,
                  size_t max, bool *consistent);
