/* The synthetic guest's cgroups (cgroup_guest.h). */
#include "guestos/tests/cgroup_guest.h"

#include <string.h>

const struct lx_cgroup_layout CG_LAYOUT = {
    .known = true,
    .task_cgroups = 0x200,
    .css_dfl_cgrp = 0x10,
    .cgroup_kn = 0x20,
    .kn_name = 0x8,
    .kn_parent = 0x0,
    .ns_known = true,
    .task_thread_pid = 0x208,
    .pid_level = 0x4,
    .pid_numbers = 0x10,
    .upid_size = 16,
    .upid_nr = 0,
    .upid_ns = 8,
    .pidns_inum = 0x30,
    .uts_known = true,
    .task_nsproxy = 0x210,
    .nsproxy_uts = 0x8,
    .nsproxy_mnt = 0x18,
    .uts_nodename = 0x4 + 65, /* struct new_utsname: sysname[65], then nodename[65] */
    .mntns_inum = 0x10,
};

void cg_put64(struct tg *x, uint64_t va, uint64_t v)
{
    memcpy(tg_at(x, va - TG_DIRECT), &v, 8);
}

void cg_put32(struct tg *x, uint64_t va, uint32_t v)
{
    memcpy(tg_at(x, va - TG_DIRECT), &v, 4);
}

uint64_t cg_kn(struct tg *x, uint64_t node, uint64_t str, const char *name, uint64_t parent)
{
    memcpy(tg_at(x, CG_AREA(str) - TG_DIRECT), name, strlen(name) + 1);
    cg_put64(x, CG_AREA(node) + CG_LAYOUT.kn_name, CG_AREA(str));
    cg_put64(x, CG_AREA(node) + CG_LAYOUT.kn_parent, parent);
    return CG_AREA(node);
}

uint64_t cg_css(struct tg *x, uint64_t css, uint64_t node)
{
    cg_put64(x, CG_AREA(css) + CG_LAYOUT.css_dfl_cgrp, CG_AREA(css) + 0x100);
    cg_put64(x, CG_AREA(css) + 0x100 + CG_LAYOUT.cgroup_kn, node);
    return CG_AREA(css);
}

void cg_build(struct tg *x)
{
    const struct lx_cgroup_layout *L = &CG_LAYOUT;
    uint64_t root = cg_kn(x, 0x0, 0x4000, "", 0);
    uint64_t slice = cg_kn(x, 0x100, 0x4100, "system.slice", root);
    uint64_t scope = cg_kn(x, 0x200, 0x4200, "docker-" CG_ID ".scope", slice);
    cg_css(x, 0x1000, scope);
    cg_css(x, 0x2000, root);
    uint64_t pid = CG_AREA(0x3000), init_ns = CG_AREA(0x3400), child_ns = CG_AREA(0x3800);
    cg_put64(x, TG_TASK(1) + L->task_cgroups, CG_CSS);
    cg_put64(x, TG_TASK(1) + L->task_thread_pid, pid);
    cg_put32(x, pid + L->pid_level, 1);
    cg_put32(x, pid + L->pid_numbers + L->upid_nr, 100);
    cg_put64(x, pid + L->pid_numbers + L->upid_ns, init_ns);
    cg_put32(x, pid + L->pid_numbers + L->upid_size + L->upid_nr, 1);
    cg_put64(x, pid + L->pid_numbers + L->upid_size + L->upid_ns, child_ns);
    cg_put32(x, init_ns + L->pidns_inum, CG_INIT_INUM);
    cg_put32(x, child_ns + L->pidns_inum, CG_CHILD_INUM);
    /* Its nsproxy: the container's UTS namespace (hostname CG_HOSTNAME) and mount namespace. */
    uint64_t nsproxy = CG_AREA(0x5000), uts = CG_AREA(0x5100), mnt = CG_AREA(0x5300);
    cg_put64(x, TG_TASK(1) + L->task_nsproxy, nsproxy);
    cg_put64(x, nsproxy + L->nsproxy_uts, uts);
    cg_put64(x, nsproxy + L->nsproxy_mnt, mnt);
    memcpy(tg_at(x, uts + L->uts_nodename - TG_DIRECT), CG_HOSTNAME, sizeof(CG_HOSTNAME));
    cg_put32(x, mnt + L->mntns_inum, CG_MNT_INUM);
}
