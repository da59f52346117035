#include "guestos/linux/task.h"

#include "guestos/generic/generic.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDLE_THREAD_KEY (1ull << 40) /* | cpu: the idle tasks all have tid 0 */
#define BOOT_THREAD_KEY (1ull << 41) /* | cpu: the boot's contexts (lx_boot_identity) */

static int by_base(const void *a, const void *b)
{
    const struct lx_cpu_area *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

/* Where the current task pointer is in a per-CPU area: the variable itself (6.1, >= 6.15) or
 * the member of pcpu_hot (6.2-6.14, whose layout depends on the configuration: BTF says). */
static bool current_ptr(const struct lx_kernel *k, uint64_t *out, char *why, size_t len)
{
    if (k->sym.current_task) {
        *out = k->sym.current_task;
        return true;
    }
    if (!k->sym.pcpu_hot) {
        snprintf(why, len, "neither current_task nor pcpu_hot in kallsyms");
        return false;
    }
    uint32_t sid = lx_btf_find_struct(&k->btf, "pcpu_hot");
    uint64_t off, size;
    if (!sid || !lx_btf_member(&k->btf, sid, "current_task", &off, &size) || size != 8) {
        snprintf(why, len, "BTF: no pcpu_hot.current_task");
        return false;
    }
    *out = k->sym.pcpu_hot + off;
    return true;
}

struct lx_task_reader *lx_task_reader_build(const struct lx_kernel *k, char *why, size_t len)
{
    if (!k->task.known) {
        snprintf(why, len, "no task_struct layout (%s)", k->btf_note);
        return NULL;
    }
    uint64_t cur;
    if (!current_ptr(k, &cur, why, len))
        return NULL;
    uint32_t n;
    if (!k->sym.per_cpu_offset || !k->sym.nr_cpu_ids) {
        snprintf(why, len, "__per_cpu_offset or nr_cpu_ids not in kallsyms");
        return NULL;
    }
    if (!lx_kimage_u32(&k->img, k->sym.nr_cpu_ids, &n) || n == 0 || n > LX_MAX_CPUS) {
        snprintf(why, len, "nr_cpu_ids unreadable or out of range");
        return NULL;
    }
    struct lx_task_reader *r = calloc(1, sizeof(*r) + n * sizeof(r->cpus[0]));
    if (!r) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    r->current_ptr = cur;
    r->layout = k->task;
    r->ncpus = n;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t base;
        if (!lx_kimage_u64(&k->img, k->sym.per_cpu_offset + 8ull * i, &base) || base == 0) {
            snprintf(why, len, "__per_cpu_offset[%" PRIu32 "] unreadable or zero", i);
            free(r);
            return NULL;
        }
        r->cpus[i] = (struct lx_cpu_area){base, i};
    }
    qsort(r->cpus, n, sizeof(r->cpus[0]), by_base);
    for (uint32_t i = 1; i < n; i++) {
        if (r->cpus[i].base == r->cpus[i - 1].base) {
            snprintf(why, len, "two CPUs share the per-CPU area 0x%" PRIx64, r->cpus[i].base);
            free(r);
            return NULL;
        }
    }
    snprintf(why, len, "%s at per-CPU 0x%" PRIx64 ", %" PRIu32 " CPUs",
             k->sym.current_task ? "current_task" : "pcpu_hot.current_task", cur, n);
    return r;
}

bool lx_task_cpu_of(const struct lx_task_reader *r, uint64_t base, uint32_t *cpu)
{
    uint32_t lo = 0, hi = r->ncpus;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->cpus[mid].base == base) {
            *cpu = r->cpus[mid].cpu;
            return true;
        }
        if (r->cpus[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* This vCPU's per-CPU area: the GS base in effect in kernel mode, IA32_KERNEL_GS_BASE in user
 * mode, if it is one of the kernel's; else the one this vCPU last showed (the entry code before
 * SWAPGS runs with the user's GS base), or the GS base of its last kernel-mode stop before the
 * reader existed (a user-mode stop right after the kernel was described, without the MSR: one
 * such stop in ~500,000 on the test bed went unread before). 0: not known yet. */
static uint64_t percpu_base(const struct lx_task_reader *r, struct guestos_vcpu *vc,
                            const struct gw_snapshot *snap)
{
    uint64_t gs =
        snap->cpl == 3 ? ((snap->have & GW_SNAP_MSRS) ? snap->kernel_gs_base : 0) : snap->gs_base;
    if (!gs && !vc->percpu_base)
        gs = vc->kernel_gs_seen;
    uint32_t cpu;
    if (gs && gs != vc->percpu_base && lx_task_cpu_of(r, gs, &cpu)) {
        vc->percpu_base = gs;
        vc->cpu = cpu;
    }
    return vc->percpu_base;
}

/* A task_struct pointer: a kernel-half address (canonical for 4- and 5-level paging) that is
 * 8-byte aligned. */
static bool kernel_pointer(uint64_t p)
{
    return (p >> 56) == 0xff && (p & 7) == 0;
}

/* comm as the guest wrote it, made safe to print: cut at the first NUL (the kernel always
 * writes one within TASK_COMM_LEN, a hostile guest may not), control and non-ASCII bytes as '?'. */
void lx_comm_clean(char comm[GUESTOS_COMM_LEN])
{
    bool end = false;
    for (unsigned i = 0; i < GUESTOS_COMM_LEN; i++) {
        if (end || !comm[i] || i == GUESTOS_COMM_LEN - 1) {
            end = true;
            comm[i] = 0;
        } else if ((unsigned char)comm[i] < 0x20 || (unsigned char)comm[i] >= 0x7f) {
            comm[i] = '?';
        }
    }
}

static bool read_comm(struct gw_walker *w, const struct lx_task_layout *l, uint64_t task,
                      char comm[GUESTOS_COMM_LEN])
{
    if (gw_read_virt(w, task + l->comm, comm, GUESTOS_COMM_LEN, false, NULL) < 0)
        return false;
    if (l->comm_size < GUESTOS_COMM_LEN) /* BTF allows 8..64: never read the next member */
        memset(comm + l->comm_size, 0, GUESTOS_COMM_LEN - l->comm_size);
    lx_comm_clean(comm);
    return true;
}

/* The task's own address space in kernel mode, where CR3 may hold another: a task that exits
 * runs on init_mm's tables after exit_mm(), and exec switches tables before it renames the task.
 * *root: the guest-physical address of mm->pgd (the kernel PGD of a PTI pair, as CR3's canonical
 * root is), or 0 when the task has no mm any more. */
static bool own_root(struct gw_walker *w, const struct lx_task_layout *l, uint64_t task,
                     uint64_t *root)
{
    uint64_t mm, pgd, gpa;
    if (gw_read_virt(w, task + l->mm, &mm, 8, false, NULL) < 0)
        return false;
    if (!mm) {
        *root = 0;
        return true;
    }
    if (!kernel_pointer(mm) || gw_read_virt(w, mm + l->mm_pgd, &pgd, 8, false, NULL) < 0 ||
        !kernel_pointer(pgd) || (pgd & 0xfff) || gw_translate(w, pgd, false, &gpa, NULL) < 0)
        return false;
    *root = gpa & GUESTOS_CR3_ADDR_MASK;
    return true;
}

void lx_task_read(const struct lx_task_reader *r, struct guestos_vcpu *vc, struct gw_walker *w,
                  struct guestos_ident *out)
{
    const struct lx_task_layout *l = &r->layout;
    struct guestos_task t = {0};
    out->task_unreadable = true; /* until the end */
    uint64_t base = percpu_base(r, vc, &w->snap), task;
    int32_t pid, tgid;
    uint32_t flags;
    if (!base || gw_read_virt(w, base + r->current_ptr, &task, 8, false, NULL) < 0 ||
        !kernel_pointer(task) || gw_read_virt(w, task + l->pid, &pid, 4, false, NULL) < 0 ||
        gw_read_virt(w, task + l->tgid, &tgid, 4, false, NULL) < 0 ||
        gw_read_virt(w, task + l->flags, &flags, 4, false, NULL) < 0 ||
        !read_comm(w, l, task, t.comm))
        return;
    if (pid < 0 || pid > LX_PID_MAX_LIMIT || tgid < 0 || tgid > LX_PID_MAX_LIMIT)
        return;
    t.tid = pid;
    t.pid = tgid;
    t.kthread = (flags & LX_PF_KTHREAD) || pid == 0;
    if (pid == 0) {
        memcpy(t.process, "swapper", sizeof("swapper")); /* perf's name for pid 0 */
    } else if (t.kthread || pid == tgid) {
        memcpy(t.process, t.comm, GUESTOS_COMM_LEN);
    } else {
        uint64_t leader;
        if (gw_read_virt(w, task + l->group_leader, &leader, 8, false, NULL) < 0 ||
            !kernel_pointer(leader) || !read_comm(w, l, leader, t.process))
            t.process[0] = 0;
    }
    if (l->stack && (gw_read_virt(w, task + l->stack, &t.kstack, 8, false, NULL) < 0 ||
                     !kernel_pointer(t.kstack)))
        t.kstack = 0;
    /* Its css_set: one word of the task just read, what changes when it moves to another
     * cgroup (docs/containers.md). */
    if (r->cgroups && (gw_read_virt(w, task + r->cgroups, &t.group, 8, false, NULL) < 0 ||
                       !kernel_pointer(t.group)))
        t.group = 0;
    t.handle = task;
    uint64_t root = out->as_root;
    if (t.kthread)
        root = 0; /* kernel threads borrow the last user address space (lazy TLB) */
    else if (w->snap.cpl != 3 && !own_root(w, l, task, &root))
        return;
    t.known = true;
    out->task = t;
    out->task_unreadable = false;
    out->thread_key = pid ? (uint64_t)pid : IDLE_THREAD_KEY | vc->cpu;
    out->as_root = root;
    out->proc_key = root ? lx_process_key(tgid, root) : GUESTOS_KEY_NOT_ROOT | (uint64_t)tgid;
}

static bool walker_read(void *ctx, uint64_t va, void *dst, size_t len)
{
    return gw_read_virt(ctx, va, dst, len, false, NULL) == 0;
}

bool lx_task_ns_at(const struct lx_task_reader *r, struct gw_walker *w, uint64_t task, int32_t tid,
                   struct guestos_ns *out)
{
    const struct lx_task_layout *l = &r->layout;
    int32_t pid;
    uint64_t leader;
    struct lx_ns_pid self, lead;
    if (!r->groups.ns_known || !kernel_pointer(task) ||
        gw_read_virt(w, task + l->pid, &pid, 4, false, NULL) < 0 || pid != tid ||
        !lx_task_ns_pid_by(walker_read, w, &r->groups, task, &self) ||
        gw_read_virt(w, task + l->group_leader, &leader, 8, false, NULL) < 0 ||
        !kernel_pointer(leader) || !lx_task_ns_pid_by(walker_read, w, &r->groups, leader, &lead) ||
        lead.inum != self.inum)
        return false;
    *out = (struct guestos_ns){
        .ns_tid = self.nr, .ns_pid = lead.nr, .level = self.level, .pidns = self.inum};
    return true;
}

void lx_boot_identity(const struct guestos_vcpu *vc, struct guestos_ident *out)
{
    struct guestos_task t = {.known = true, .kthread = true, .pid = 0, .tid = 0};
    snprintf(t.comm, sizeof(t.comm), "swapper/%u", vc->vcpu % 1000000u);
    memcpy(t.process, "[boot]", sizeof("[boot]"));
    out->task = t;
    out->task_unreadable = false;
    out->thread_key = BOOT_THREAD_KEY | vc->vcpu;
    out->as_root = 0;
    out->proc_key = LX_BOOT_PROCESS_KEY;
}
