#include "guestos/linux/process.h"

#include <stdio.h>
#include <string.h>

#include "guestos/generic/generic.h"

bool lx_proc_layout_of(const struct lx_kernel *k, struct lx_proc_layout *out, char *why,
                       size_t why_len)
{
    memset(out, 0, sizeof(*out));
    const struct lx_btf *b = &k->btf;
    uint32_t task = lx_btf_find_struct(b, "task_struct"), mm = lx_btf_find_struct(b, "mm_struct");
    uint64_t size;
    if (!k->btf_types || !task || !mm || !lx_btf_member(b, task, "tasks", &out->tasks, &size) ||
        size != 16 || !lx_btf_member(b, mm, "saved_auxv", &out->saved_auxv, &out->auxv_size) ||
        out->auxv_size < 16 || out->auxv_size > 16 * LX_AUXV_MAX_PAIRS) {
        snprintf(why, why_len, "BTF: no task_struct.tasks or mm_struct.saved_auxv");
        return false;
    }
    if (!k->sym.init_task) {
        snprintf(why, why_len, "no init_task in kallsyms");
        return false;
    }
    if (!lx_btf_member(b, task, "real_parent", &out->real_parent, &size) || size != 8)
        out->real_parent = 0; /* forked children then keep only what their own pages show */
    uint32_t file = lx_btf_find_struct(b, "file"), dentry = lx_btf_find_struct(b, "dentry");
    uint64_t s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    if (!file || !dentry || !lx_btf_member(b, mm, "exe_file", &out->exe_file, &s1) ||
        !lx_btf_member(b, file, "f_path.dentry", &out->f_dentry, &s2) ||
        !lx_btf_member(b, dentry, "d_name.name", &out->d_name, &s3) ||
        !lx_btf_member(b, dentry, "d_parent", &out->d_parent, &s4) || s1 != 8 || s2 != 8 ||
        s3 != 8 || s4 != 8)
        out->exe_file = 0; /* executables keep the name they were started by */
    out->known = true;
    return true;
}

static bool kernel_pointer(uint64_t p)
{
    return (p >> 56) == 0xff && (p & 7) == 0;
}

/* The path of a file from its dentry up to the root of its file system (a dentry that is its
 * own parent), names joined with '/'. Empty when a link or name cannot be read, a name is
 * empty, too long or holds a '/' or a control character, or the walk is deeper than
 * LX_PATH_DEPTH. */
static void exe_path(struct lx_kread *kr, const struct lx_proc_layout *pl, uint64_t file, char *out,
                     size_t len)
{
    char names[LX_PATH_DEPTH][256];
    unsigned depth = 0;
    uint64_t d;
    out[0] = 0;
    if (!lx_kread(kr, file + pl->f_dentry, &d, 8) || !kernel_pointer(d))
        return;
    for (;;) {
        uint64_t parent, name;
        if (!lx_kread(kr, d + pl->d_parent, &parent, 8) || !kernel_pointer(parent))
            return;
        if (parent == d)
            break; /* the root of its file system */
        if (depth == LX_PATH_DEPTH || !lx_kread(kr, d + pl->d_name, &name, 8) || !name ||
            (name >> 56) != 0xff)
            return;
        /* A name at most 255 bytes (NAME_MAX), read up to its NUL within that page. */
        char *n = names[depth];
        size_t got = 0;
        while (got < 255) {
            size_t chunk = 4096 - ((name + got) & 4095);
            if (chunk > 255 - got)
                chunk = 255 - got;
            if (!lx_kread(kr, name + got, n + got, chunk))
                return;
            if (memchr(n + got, 0, chunk))
                break;
            got += chunk;
        }
        n[255] = 0;
        size_t l = strlen(n);
        if (!l)
            return;
        for (size_t i = 0; i < l; i++)
            if ((unsigned char)n[i] < 0x20 || n[i] == 0x7f || n[i] == '/')
                return;
        depth++;
        d = parent;
    }
    size_t at = 0;
    for (unsigned i = depth; i-- > 0;) {
        int w = snprintf(out + at, len - at, "/%s", names[i]);
        if (w < 0 || (size_t)w >= len - at) {
            out[0] = 0; /* too long for the name: none rather than a cut one */
            return;
        }
        at += (size_t)w;
    }
}

uint64_t lx_task_root(struct lx_kread *kr, const struct lx_task_layout *tl, uint64_t task,
                      uint64_t *mm)
{
    uint64_t pgd;
    struct pt_xlate x;
    if (!lx_kread(kr, task + tl->mm, mm, 8) || !kernel_pointer(*mm) ||
        !lx_kread(kr, *mm + tl->mm_pgd, &pgd, 8) || !kernel_pointer(pgd) || (pgd & 0xfff) ||
        pt_translate(&kr->mmu, kr->mem, pgd, PT_ACC_SUPERVISOR, &x, NULL) < 0)
        return 0;
    return x.gpa & GUESTOS_CR3_ADDR_MASK;
}

/* The leader's mm if its address space is `root`, else 0. */
static uint64_t mm_of(struct lx_kread *kr, const struct lx_task_layout *tl, uint64_t task,
                      uint64_t root)
{
    uint64_t mm;
    return lx_task_root(kr, tl, task, &mm) == root ? mm : 0;
}

int lx_tasks_each(struct lx_kread *kr, const struct lx_proc_layout *pl, uint64_t init_task,
                  int (*fn)(void *ctx, uint64_t task), void *ctx)
{
    lx_kread_forget(kr);
    uint64_t head = init_task + pl->tasks, at;
    if (!pl->known || !lx_kread(kr, head, &at, 8))
        return -1;
    for (unsigned n = 0; at != head && n < LX_MAX_TASKS; n++) {
        if (!kernel_pointer(at) || at < pl->tasks)
            return -1;
        int rc = fn(ctx, at - pl->tasks);
        if (rc)
            return rc;
        if (!lx_kread(kr, at, &at, 8)) /* tasks.next */
            return -1;
    }
    return 0;
}

struct leader_search {
    struct lx_kread *kr;
    const struct lx_task_layout *tl;
    int32_t tgid;
    uint64_t root; /* 0: any address space */
    uint64_t task, mm;
};

static int is_leader(void *ctx, uint64_t task)
{
    struct leader_search *s = ctx;
    int32_t t;
    if (!lx_kread(s->kr, task + s->tl->tgid, &t, 4))
        return -1;
    if (t != s->tgid)
        return 0;
    if (s->root && !(s->mm = mm_of(s->kr, s->tl, task, s->root)))
        return 0;
    s->task = task;
    return 1;
}

uint64_t lx_task_of_pid(struct lx_kread *kr, const struct lx_task_layout *tl,
                        const struct lx_proc_layout *pl, uint64_t init_task, int32_t tgid)
{
    struct leader_search s = {.kr = kr, .tl = tl, .tgid = tgid};
    if (!tl->known || tgid <= 0)
        return 0;
    return lx_tasks_each(kr, pl, init_task, is_leader, &s) == 1 ? s.task : 0;
}

int lx_proc_parent(struct lx_kread *kr, const struct lx_task_layout *tl,
                   const struct lx_proc_layout *pl, uint64_t init_task, int32_t tgid, uint64_t root,
                   int32_t *ppid, uint64_t *proot)
{
    if (!tl->known || !pl->known || !pl->real_parent || tgid <= 0)
        return -1;
    struct leader_search s = {.kr = kr, .tl = tl, .tgid = tgid, .root = root};
    uint64_t parent;
    if (lx_tasks_each(kr, pl, init_task, is_leader, &s) != 1 ||
        !lx_kread(kr, s.task + pl->real_parent, &parent, 8) || !kernel_pointer(parent) ||
        !lx_kread(kr, parent + tl->tgid, ppid, 4) || *ppid <= 0)
        return -1;
    uint64_t mm;
    *proot = lx_task_root(kr, tl, parent, &mm);
    return *proot ? 0 : -1;
}

int lx_proc_exe(struct lx_kread *kr, const struct lx_task_layout *tl,
                const struct lx_proc_layout *pl, uint64_t init_task, int32_t tgid, uint64_t root,
                struct lx_exe *out)
{
    memset(out, 0, sizeof(*out));
    if (!tl->known || !pl->known || tgid <= 0)
        return -1;
    struct leader_search s = {.kr = kr, .tl = tl, .tgid = tgid, .root = root};
    if (lx_tasks_each(kr, pl, init_task, is_leader, &s) != 1 || !s.mm)
        return -1;
    uint64_t mm = s.mm;
    uint64_t auxv[2 * LX_AUXV_MAX_PAIRS];
    if (!lx_kread(kr, mm + pl->saved_auxv, auxv, pl->auxv_size))
        return -1;
    for (size_t i = 0; i + 1 < pl->auxv_size / 8 && auxv[i] != LX_AT_NULL; i += 2) {
        if (auxv[i] == LX_AT_EXECFN && auxv[i + 1] && (auxv[i + 1] >> 47) == 0)
            out->execfn = auxv[i + 1];
        else if (auxv[i] == LX_AT_ENTRY && (auxv[i + 1] >> 47) == 0)
            out->entry = auxv[i + 1];
    }
    uint64_t file;
    if (pl->exe_file && lx_kread(kr, mm + pl->exe_file, &file, 8) && kernel_pointer(file))
        exe_path(kr, pl, file, out->file, sizeof(out->file));
    return 0;
}
