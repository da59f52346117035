/* Which cgroup and pid namespace a Linux guest's task is in, read from the guest kernel's memory
 * on the drain thread (docs/containers.md): no agent, no cgroupfs.
 *
 *   task_struct.cgroups -> css_set.dfl_cgrp -> cgroup.kn        the task's cgroup v2 directory
 *   kernfs_node.name, .parent (6.15: __parent) up to the root   its path, "/system.slice/…"
 *   task_struct.thread_pid -> pid.level, pid.numbers[level]     its pid in its own namespace
 *   upid.ns -> pid_namespace.ns.inum                            that namespace ("pid:[inum]")
 *
 * (include/linux/sched.h, cgroup-defs.h, kernfs.h, pid.h, pid_namespace.h, ns_common.h; the
 * cgroup v2 hierarchy is cgrp_dfl_root's, kernel/cgroup/cgroup.c.) Offsets from the kernel's
 * BTF. Every pointer is checked to be a kernel one, the walk up to the root is at most
 * LX_CGROUP_MAX_DEPTH steps and a name at most NAME_MAX bytes: the guest's memory is hostile
 * and changes while it is read. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guestos/linux/kernel.h"
#include "guestos/linux/kread.h"

#define LX_CGROUP_MAX_DEPTH 64   /* cgroup directories above a task's, at most */
#define LX_CGROUP_NAME_MAX  255  /* include/uapi/linux/limits.h NAME_MAX */
#define LX_CGROUP_PATH_MAX  1024 /* a path longer is cut at its root end ("…/"): see below */
#define LX_PID_NS_LEVELS    32   /* kernel/pid_namespace.c MAX_PID_NS_LEVEL */

struct lx_cgroup_layout {
    bool known;                           /* the cgroup path can be read */
    uint64_t task_cgroups;                /* task_struct.cgroups (struct css_set *) */
    uint64_t css_dfl_cgrp;                /* css_set.dfl_cgrp (struct cgroup *) */
    uint64_t cgroup_kn;                   /* cgroup.kn (struct kernfs_node *) */
    uint64_t kn_name, kn_parent;          /* kernfs_node.name, .parent or .__parent */
    bool ns_known;                        /* the namespace pids can be read */
    uint64_t task_thread_pid;             /* task_struct.thread_pid (struct pid *; 4.19+) */
    uint64_t pid_level, pid_numbers;      /* struct pid: level (u32), numbers[] */
    uint64_t upid_size, upid_nr, upid_ns; /* struct upid: nr (int), ns (pid_namespace *) */
    uint64_t pidns_inum;                  /* pid_namespace.ns.inum (u32) */
    bool uts_known;                       /* the hostname and mount namespace can be read */
    uint64_t task_nsproxy;                /* task_struct.nsproxy (struct nsproxy *) */
    uint64_t nsproxy_uts, nsproxy_mnt;    /* nsproxy.uts_ns, .mnt_ns */
    uint64_t uts_nodename;                /* uts_namespace.name.nodename (char[65]) */
    uint64_t mntns_inum;                  /* mnt_namespace.ns.inum (u32) */
};

/* From the kernel's BTF. False with why when the cgroup members are missing (a kernel without
 * CONFIG_CGROUPS or BTF); ns_known may be false on its own (kernels before 4.19). */
bool lx_cgroup_layout_of(const struct lx_kernel *k, struct lx_cgroup_layout *out, char *why,
                         size_t why_len);

/* The css_set a task is in: what changes when the task moves to another cgroup. */
bool lx_task_css_set(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t task,
                     uint64_t *css_set);

/* The cgroup v2 path of css_set, "/" for the root, into out (NUL-terminated). A path deeper
 * than LX_CGROUP_MAX_DEPTH or longer than len keeps its innermost components, which name the
 * container, after "…" (then it starts "…/"). Returns its length, or -1 when a pointer, a name
 * or the walk is not what a kernel writes. */
int lx_cgroup_path(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t css_set,
                   char *out, size_t len);

/* A task's id in its own pid namespace (what its /proc/PID/status NSpid ends with), the
 * namespace's depth (0: the initial one) and its inode number. */
struct lx_ns_pid {
    int32_t nr;
    uint32_t level;
    uint32_t inum;
};
bool lx_task_ns_pid(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t task,
                    struct lx_ns_pid *out);
/* The same through any reader of kernel memory (the exit path's walker: task.c). */
typedef bool (*lx_cgroup_read_fn)(void *ctx, uint64_t va, void *dst, size_t len);
bool lx_task_ns_pid_by(lx_cgroup_read_fn rd, void *ctx, const struct lx_cgroup_layout *l,
                       uint64_t task, struct lx_ns_pid *out);

/* A task's UTS hostname (what `hostname` prints in its container; NUL-terminated, printable,
 * at most 64 bytes) and its mount namespace's inode number ("mnt:[inum]"). False when the task
 * has none (it is exiting: nsproxy is NULL) or they cannot be read. */
#define LX_UTS_NODENAME_LEN 65 /* include/uapi/linux/utsname.h __NEW_UTS_LEN + 1 */
bool lx_task_uts(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t task,
                 char hostname[LX_UTS_NODENAME_LEN], uint32_t *mnt_inum);
