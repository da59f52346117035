/* A synthetic Linux guest's cgroups and pid namespaces, for test_guestos_cgroup and
 * fuzz_guestos_cgroup: threads_guest.h's guest, and in its task area at CG_AREA(0) on, laid out
 * as CG_LAYOUT says (a BTF would give such offsets), task 1 (pid 100) in the cgroup
 *   /system.slice/docker-CG_ID.scope
 * as pid 1 of a child pid namespace (inum CG_CHILD_INUM; 100 in the initial one), its hostname
 * CG_HOSTNAME and its mount namespace CG_MNT_INUM, and the root
 * cgroup's css_set at CG_CSS_ROOT. The structures span [CG_AREA(0), CG_AREA(CG_SPAN)). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/cgroup.h"
#include "guestos/tests/threads_guest.h"

#define CG_AREA(off)  TG_VA(TG_AREA_GPA + 0x80000 + (off))
#define CG_SPAN       0x10000
#define CG_ID         "3f4e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081"
#define CG_CSS        CG_AREA(0x1000)
#define CG_CSS_ROOT   CG_AREA(0x2000)
#define CG_CHILD_INUM 4026532200u
#define CG_INIT_INUM  4026531836u    /* PROC_PID_INIT_INO, include/linux/proc_ns.h */
#define CG_HOSTNAME   "3f4e5a6b7c8d" /* Docker's: the id's first 12 digits */
#define CG_MNT_INUM   4026532199u

extern const struct lx_cgroup_layout CG_LAYOUT;

/* Build it on x (tg_build first). */
void cg_build(struct tg *x);

void cg_put64(struct tg *x, uint64_t va, uint64_t v);
void cg_put32(struct tg *x, uint64_t va, uint32_t v);
/* A kernfs node at CG_AREA(node) named `name` (the string at CG_AREA(str)) under parent. */
uint64_t cg_kn(struct tg *x, uint64_t node, uint64_t str, const char *name, uint64_t parent);
/* A css_set at CG_AREA(css) whose cgroup (CG_AREA(css) + 0x100) is kernfs node `node`. */
uint64_t cg_css(struct tg *x, uint64_t css, uint64_t node);
