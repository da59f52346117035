/* A task's cgroup v2 path and namespace pid from the guest kernel's memory (cgroup.h). */
#include "guestos/linux/cgroup.h"

#include <stdio.h>
#include <string.h>

static bool member(const struct lx_btf *b, uint32_t sid, const char *path, uint64_t *off,
                   uint64_t want)
{
    uint64_t size;
    return sid && lx_btf_member(b, sid, path, off, &size) && (!want || size == want);
}

/* The kernel half of the address space, 4- and 5-level alike: no pointer a kernel stores in
 * these structures is below it. */
static bool kernel_pointer(uint64_t va)
{
    return va >= 0xff00000000000000ull && (va & 7) == 0;
}

bool lx_cgroup_layout_of(const struct lx_kernel *k, struct lx_cgroup_layout *out, char *why,
                         size_t why_len)
{
    memset(out, 0, sizeof(*out));
    const struct lx_btf *b = &k->btf;
    if (!k->btf_types) {
        snprintf(why, why_len, "no BTF");
        return false;
    }
    uint32_t task = lx_btf_find_struct(b, "task_struct"), css = lx_btf_find_struct(b, "css_set"),
             cg = lx_btf_find_struct(b, "cgroup"), kn = lx_btf_find_struct(b, "kernfs_node");
    if (!member(b, task, "cgroups", &out->task_cgroups, 8) ||
        !member(b, css, "dfl_cgrp", &out->css_dfl_cgrp, 8) ||
        !member(b, cg, "kn", &out->cgroup_kn, 8) || !member(b, kn, "name", &out->kn_name, 8) ||
        /* 6.15 made the parent RCU-protected and renamed it (kernfs: "__parent"). */
        !(member(b, kn, "parent", &out->kn_parent, 8) ||
          member(b, kn, "__parent", &out->kn_parent, 8))) {
        snprintf(why, why_len,
                 "BTF: no task_struct.cgroups, css_set.dfl_cgrp, cgroup.kn or kernfs_node.name "
                 "and parent (a kernel without CONFIG_CGROUPS)");
        return false;
    }
    out->known = true;
    uint32_t pid = lx_btf_find_struct(b, "pid"), upid = lx_btf_find_struct(b, "upid"),
             pidns = lx_btf_find_struct(b, "pid_namespace");
    uint64_t numbers_size = 0;
    out->ns_known = member(b, task, "thread_pid", &out->task_thread_pid, 8) &&
                    member(b, pid, "level", &out->pid_level, 4) && pid &&
                    lx_btf_member(b, pid, "numbers", &out->pid_numbers, &numbers_size) && upid &&
                    lx_btf_type_size(b, upid, &out->upid_size) && out->upid_size >= 12 &&
                    out->upid_size <= 64 && member(b, upid, "nr", &out->upid_nr, 4) &&
                    member(b, upid, "ns", &out->upid_ns, 8) &&
                    member(b, pidns, "ns.inum", &out->pidns_inum, 4);
    uint32_t nsp = lx_btf_find_struct(b, "nsproxy"), uts = lx_btf_find_struct(b, "uts_namespace"),
             mnt = lx_btf_find_struct(b, "mnt_namespace");
    out->uts_known = member(b, task, "nsproxy", &out->task_nsproxy, 8) &&
                     member(b, nsp, "uts_ns", &out->nsproxy_uts, 8) &&
                     member(b, nsp, "mnt_ns", &out->nsproxy_mnt, 8) &&
                     member(b, uts, "name.nodename", &out->uts_nodename, LX_UTS_NODENAME_LEN) &&
                     member(b, mnt, "ns.inum", &out->mntns_inum, 4);
    snprintf(why, why_len, "BTF: cgroups@%llu, css_set.dfl_cgrp@%llu, kernfs_node.parent@%llu%s",
             (unsigned long long)out->task_cgroups, (unsigned long long)out->css_dfl_cgrp,
             (unsigned long long)out->kn_parent,
             out->ns_known ? "; pid namespaces from task_struct.thread_pid"
                           : "; no task_struct.thread_pid (before 4.19): no namespace pids");
    return true;
}

bool lx_task_css_set(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t task,
                     uint64_t *css_set)
{
    return l->known && lx_kread(kr, task + l->task_cgroups, css_set, 8) && kernel_pointer(*css_set);
}

/* One kernfs name, NUL-terminated within NAME_MAX + 1 bytes, printable: a page at a time, so
 * that a name near the end of a mapped page does not fail on the next, unmapped one. */
static int read_name(struct lx_kread *kr, uint64_t va, char *out)
{
    size_t got = 0;
    while (got <= LX_CGROUP_NAME_MAX) {
        size_t chunk = 4096 - ((va + got) & 4095);
        if (chunk > LX_CGROUP_NAME_MAX + 1 - got)
            chunk = LX_CGROUP_NAME_MAX + 1 - got;
        if (!lx_kread(kr, va + got, out + got, chunk))
            return -1;
        void *nul = memchr(out + got, 0, chunk);
        if (nul) {
            int n = (int)((char *)nul - out);
            for (int i = 0; i < n; i++)
                if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] == 0x7f || out[i] == '/')
                    return -1;
            return n;
        }
        got += chunk;
    }
    return -1; /* longer than any name a file system takes */
}

int lx_cgroup_path(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t css_set,
                   char *out, size_t len)
{
    if (!l->known || len < 8 || !kernel_pointer(css_set))
        return -1;
    uint64_t cgrp, node;
    if (!lx_kread(kr, css_set + l->css_dfl_cgrp, &cgrp, 8) || !kernel_pointer(cgrp) ||
        !lx_kread(kr, cgrp + l->cgroup_kn, &node, 8) || !kernel_pointer(node))
        return -1;
    /* Innermost first into the end of a buffer, each component "/name"; the root's own name
     * (the hierarchy's, "" for cgroup v2's) is not part of the path. */
    char path[LX_CGROUP_PATH_MAX + 1];
    size_t at = sizeof(path) - 1;
    path[at] = 0;
    bool cut = false;
    uint64_t seen[LX_CGROUP_MAX_DEPTH + 1]; /* a cycle is the guest's writing, not a path */
    for (unsigned depth = 0;; depth++) {
        uint64_t parent;
        if (!lx_kread(kr, node + l->kn_parent, &parent, 8))
            return -1;
        if (!parent)
            break; /* the root */
        if (!kernel_pointer(parent))
            return -1;
        seen[depth] = node;
        for (unsigned i = 0; i <= depth; i++)
            if (seen[i] == parent)
                return -1;
        if (depth == LX_CGROUP_MAX_DEPTH) {
            cut = true;
            break;
        }
        uint64_t name_va;
        char name[LX_CGROUP_NAME_MAX + 1];
        int n;
        if (!lx_kread(kr, node + l->kn_name, &name_va, 8) || !kernel_pointer(name_va & ~7ull) ||
            (n = read_name(kr, name_va, name)) <= 0)
            return -1;
        if ((size_t)n + 1 > at || (size_t)n + 1 + 4 > len - (sizeof(path) - 1 - at)) {
            cut = true;
            break;
        }
        at -= (size_t)n;
        memcpy(path + at, name, (size_t)n);
        path[--at] = '/';
        node = parent;
    }
    const char *p = path + at;
    size_t n = sizeof(path) - 1 - at;
    if (cut)
        return snprintf(out, len, "\xe2\x80\xa6%s", n ? p : "/") >= (int)len ? -1
                                                                             : (int)strlen(out);
    if (!n)
        p = "/", n = 1;
    if (n + 1 > len)
        return -1;
    memcpy(out, p, n + 1);
    return (int)n;
}

static bool kread_fn(void *ctx, uint64_t va, void *dst, size_t len)
{
    return lx_kread(ctx, va, dst, len);
}

bool lx_task_ns_pid_by(lx_cgroup_read_fn rd, void *ctx, const struct lx_cgroup_layout *l,
                       uint64_t task, struct lx_ns_pid *out)
{
    uint64_t pid, ns;
    uint32_t level;
    int32_t nr;
    if (!l->ns_known || !rd(ctx, task + l->task_thread_pid, &pid, 8) || !kernel_pointer(pid) ||
        !rd(ctx, pid + l->pid_level, &level, 4) || level >= LX_PID_NS_LEVELS)
        return false;
    uint64_t upid = pid + l->pid_numbers + (uint64_t)level * l->upid_size;
    if (!rd(ctx, upid + l->upid_nr, &nr, 4) || nr < 0 || !rd(ctx, upid + l->upid_ns, &ns, 8) ||
        !kernel_pointer(ns) || !rd(ctx, ns + l->pidns_inum, &out->inum, 4))
        return false;
    out->nr = nr;
    out->level = level;
    return true;
}

bool lx_task_ns_pid(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t task,
                    struct lx_ns_pid *out)
{
    return lx_task_ns_pid_by(kread_fn, kr, l, task, out);
}

bool lx_task_uts(struct lx_kread *kr, const struct lx_cgroup_layout *l, uint64_t task,
                 char hostname[LX_UTS_NODENAME_LEN], uint32_t *mnt_inum)
{
    uint64_t nsproxy, uts, mnt;
    if (!l->uts_known || !lx_kread(kr, task + l->task_nsproxy, &nsproxy, 8) ||
        !kernel_pointer(nsproxy) || !lx_kread(kr, nsproxy + l->nsproxy_uts, &uts, 8) ||
        !kernel_pointer(uts) || !lx_kread(kr, nsproxy + l->nsproxy_mnt, &mnt, 8) ||
        !kernel_pointer(mnt) || !lx_kread(kr, mnt + l->mntns_inum, mnt_inum, 4) ||
        !lx_kread(kr, uts + l->uts_nodename, hostname, LX_UTS_NODENAME_LEN))
        return false;
    hostname[LX_UTS_NODENAME_LEN - 1] = 0;
    for (char *c = hostname; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
    return true;
}
