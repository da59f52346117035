#include "guestos/linux/linux.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/generic/file_modules.h"
#include "guestos/generic/generic.h"
#include "guestos/generic/user_modules.h"
#include "guestos/linux/cgroup.h"
#include "guestos/linux/kernel.h"
#include "guestos/linux/kmodules.h"
#include "guestos/linux/orc_load.h"
#include "guestos/linux/pagecache.h"
#include "guestos/linux/pagefile.h"
#include "guestos/linux/process.h"
#include "guestos/linux/task.h"
#include "guestos/linux/threads.h"

enum lx_state { LX_SEARCHING, LX_FOUND, LX_FAILED };

/* A look can catch the kernel half-way through writing VMCOREINFO (crash_save_vmcoreinfo_init
 * appends line by line, then copies the note), and the guest runs while the tables are read:
 * a failure is final only when it repeats. */
#define LX_MAX_FAILED_LOOKS 3

/* THREAD_SIZE is 16 KiB, 32 KiB with KASAN (arch/x86/include/asm/page_64_types.h). */
#define LX_THREAD_SIZE_MAX (32u << 10)

/* Module sets published at most (each replaces the last; a guest that loads and unloads
 * modules without end keeps its last set). */
#define LX_ORC_MAX_SETS 256
/* ORC entries of all modules' tables kept at most: Debian 6.1's kvm has ~20k, a guest's loaded
 * modules together a few 100k; 512 forged modules of 1 Mi entries each would be gigabytes
 * (docs/reliability.md, "Budgets"). A module past it is walked without ORC. */
#define LX_ORC_MODULES_MAX_ENTRIES (2u << 20)

/* The executable's path per process, once read (a process keeps it until exec, which makes a
 * new address space: a new key). */
#define LX_EXE_CACHE 256
struct lx_exe_name {
    int32_t tgid;
    uint64_t root;
    uint64_t entry;
    unsigned looks;               /* reads tried (the task list may be changing under one) */
    char path[DISCOVER_NAME_MAX]; /* "" when it could not be read */
    /* The process that forked it, once found (0: not yet, or none). */
    unsigned parent_looks;
    int32_t ppid;
    uint64_t proot;
};

struct lx_layer {
    enum lx_state state;
    struct lx_kernel *k;
    struct guestos_kernel desc;
    struct guestos_symbol *syms;
    struct hv_err failure;
    unsigned failed_looks;
    /* Kernel modules (drain thread): the reader once the kernel is described, or why not. */
    struct lx_kmods kmods;
    bool kmods_ok;
    char kmods_why[160];
    /* Published once by the drain thread (release), read at every exit (acquire). */
    _Atomic(struct lx_task_reader *) tasks;
    /* A vCPU stopped in user mode before the tasks could be read: the guest is past its boot
     * (set on the exit path, relaxed: a hint that only ever goes from false to true). */
    _Atomic bool user_seen;
    /* Processes' executables (drain thread): the reader, and what was found per process. */
    struct lx_kread procs_kr;
    struct lx_proc_layout procs;
    /* Which file a page caches (drain thread, pagefile.h): the layout and vmemmap_base's
     * value, or why not. */
    struct lx_file_layout files;
    struct lx_cache_layout cache; /* its page cache (pagecache.h) */
    uint64_t vmemmap;
    char files_why[160];
    struct lx_exe_name exe_cache[LX_EXE_CACHE];
    /* The kernel's ORC tables, published once by the drain thread (release), read at every
     * kernel-mode exit (acquire); the unwinder that uses them. */
    _Atomic(struct lx_orc *) orc;
    struct gw_unwinder kernel_unwinder;
    /* Modules' ORC tables (drain thread): one per module seen, kept until close (a vCPU may be
     * walking with an older set), and the sets published, the last one current. */
    struct lx_orc_modtab {
        uint64_t mod, text, text_end;
        char name[LX_KMOD_NAME_LEN + 1]; /* with the addresses: a module loaded again */
        bool ok;
        struct lx_orc_table t;
    } * modtabs;
    size_t nmodtabs;
    struct lx_orc_mods *sets[LX_ORC_MAX_SETS];
    size_t nsets;
    size_t modtab_entries;  /* ORC entries in modtabs, within LX_ORC_MODULES_MAX_ENTRIES */
    char orc_mods_why[160]; /* the last module whose tables could not be read, and why */
    /* Every thread, for off-CPU profiles (drain thread, threads.h): its own reader, and the
     * layouts; or why not. */
    struct lx_kread threads_kr;
    struct lx_switch_layout switched;
    struct lx_threads threads;
    char threads_why[160];
    /* Tasks' cgroups and pid namespaces (drain thread, cgroup.h): the layout and a reader. */
    struct lx_kread groups_kr;
    struct lx_cgroup_layout groups;
};

static unsigned linux_kernel_unwind(const struct gw_unwinder *u, struct gw_walker *w,
                                    const struct gw_regs *r, struct gw_stack *st)
{
    struct lx_layer *l = u->ctx;
    const struct lx_orc *o = atomic_load_explicit(&l->orc, memory_order_acquire);
    return o ? lx_orc_unwind(o, w, r, st) : gw_unwinder_run(&gw_fp_unwinder, w, r, st);
}

const struct gw_unwinder *lx_layer_kernel_unwinder(struct lx_layer *l)
{
    return &l->kernel_unwinder;
}

struct lx_layer *lx_layer_new(void)
{
    struct lx_layer *l = calloc(1, sizeof(*l));
    if (l && !(l->k = lx_kernel_new())) {
        free(l);
        l = NULL;
    }
    if (l)
        l->kernel_unwinder =
            (struct gw_unwinder){.name = "orc", .unwind = linux_kernel_unwind, .ctx = l};
    return l;
}

static void linux_close(struct guestos *os)
{
    struct lx_layer *l = os->priv;
    if (!l)
        return;
    lx_kernel_free(l->k);
    free(atomic_load(&l->tasks));
    lx_orc_free(atomic_load(&l->orc));
    for (size_t i = 0; i < l->nmodtabs; i++)
        lx_orc_table_free(&l->modtabs[i].t);
    free(l->modtabs);
    for (size_t i = 0; i < l->nsets; i++)
        free(l->sets[i]);
    free(l->syms);
    free(l);
    os->priv = NULL;
}

static int describe(struct lx_layer *l, struct hv_err *err)
{
    const struct lx_kernel *k = l->k;
    l->syms = calloc(k->syms.n, sizeof(*l->syms));
    if (!l->syms)
        return hv_errk(err, HV_ERR_NO_MEMORY, "linux: out of memory for %zu kernel symbols",
                       k->syms.n);
    for (size_t i = 0; i < k->syms.n; i++)
        l->syms[i] = (struct guestos_symbol){.addr = k->syms.v[i].addr,
                                             .name = lx_ksym_name(k, &k->syms.v[i]),
                                             .name_len = k->syms.v[i].name_len,
                                             .type = k->syms.v[i].type};
    struct guestos_kernel *d = &l->desc;
    snprintf(d->release, sizeof(d->release), "%s", k->vmci.osrelease);
    if (k->vmci.has_build_id) {
        memcpy(d->build_id, k->vmci.build_id, sizeof(k->vmci.build_id));
        d->build_id_len = sizeof(k->vmci.build_id);
    }
    d->kaslr_offset = k->kaslr_offset;
    d->text_start = k->text_lo;
    d->text_end = k->text_hi;
    d->syms = l->syms;
    d->nsyms = k->syms.n;
    snprintf(d->how, sizeof(d->how),
             "VMCOREINFO at guest-physical 0x%" PRIx64 " (%u copies), kallsyms: %" PRIu32
             " symbols, %s%s; %s",
             k->vmci.gpa, k->vmci.copies, k->ks.nsyms, lx_kallsyms_mode_name(k->ks.mode),
             k->ks_loc.by_structure ? ", found by their structure (VMCOREINFO names them from 6.0)"
                                    : "",
             k->btf_note);
    l->kmods_ok = lx_kmods_init(&l->kmods, k, k->img.mem, l->kmods_why, sizeof(l->kmods_why)) == 0;
    char why[160];
    bool kr = lx_kread_init_kernel(&l->procs_kr, k, k->img.mem, why, sizeof(why)) == 0;
    if (!kr || !lx_proc_layout_of(k, &l->procs, why, sizeof(why)))
        l->procs.known = false; /* executables keep the generic names */
    if (!kr)
        snprintf(l->files_why, sizeof(l->files_why), "%s", why);
    else if (lx_file_layout_of(k, &l->files, l->files_why, sizeof(l->files_why)) &&
             !lx_kread(&l->procs_kr, k->sym.vmemmap_base, &l->vmemmap, sizeof(l->vmemmap))) {
        l->files.known = false;
        snprintf(l->files_why, sizeof(l->files_why), "vmemmap_base cannot be read");
    }
    d->files_known = l->files.known;
    if (!l->files.known)
        snprintf(d->files, sizeof(d->files), "%s", l->files_why);
    else if (!lx_cache_layout_of(k, &l->cache, why, sizeof(why)))
        snprintf(d->files, sizeof(d->files),
                 "a page's file from its struct page; no page cache: %.100s", why);
    else
        snprintf(d->files, sizeof(d->files),
                 "a page's file from its struct page (%" PRIu64 " bytes, vmemmap at 0x%" PRIx64
                 "), the page cache from its XArray (%u slots a node%s)",
                 l->files.page_size, l->vmemmap, 1u << l->cache.chunk_shift,
                 l->cache.uptodate_bit >= 0 ? ", PG_uptodate from BTF" : "");
    if (lx_kread_init_kernel(&l->groups_kr, k, k->img.mem, d->groups, sizeof(d->groups)) < 0 ||
        !lx_cgroup_layout_of(k, &l->groups, d->groups, sizeof(d->groups)))
        l->groups.known = false;
    d->groups_known = l->groups.known;
    lx_kread_forget(&l->procs_kr);
    if (!kr)
        snprintf(l->threads_why, sizeof(l->threads_why), "%s", why);
    else if (!l->procs.known)
        snprintf(l->threads_why, sizeof(l->threads_why), "no task list: %.140s", why);
    else if (lx_kread_init_kernel(&l->threads_kr, k, k->img.mem, l->threads_why,
                                  sizeof(l->threads_why)) == 0)
        (void)lx_threads_init(&l->threads, k, &l->threads_kr, &l->procs, &l->switched,
                              l->threads_why, sizeof(l->threads_why));
    l->threads.cgroups = l->groups.known ? l->groups.task_cgroups : 0;
    struct lx_task_reader *r = lx_task_reader_build(k, d->tasks, sizeof(d->tasks));
    if (r && l->groups.known) {
        r->cgroups = l->groups.task_cgroups;
        r->groups = l->groups;
    }
    if (r)
        atomic_store_explicit(&l->tasks, r, memory_order_release);
    d->tasks_known = r != NULL;
    struct lx_orc *o = lx_orc_load(k, d->stacks, sizeof(d->stacks));
    if (o)
        atomic_store_explicit(&l->orc, o, memory_order_release);
    d->stacks_orc = o != NULL;
    return 0;
}

static int linux_discover_kernel(struct guestos *os, const struct gmem *mem,
                                 const struct guestos_kernel **out, struct hv_err *err)
{
    struct lx_layer *l = os->priv;
    if (l->state == LX_FOUND)
        return 0;
    if (l->state == LX_FAILED) {
        if (err)
            *err = l->failure;
        return -1;
    }
    int rc = lx_kernel_discover(l->k, mem, &l->failure);
    if (rc == 1)
        rc = describe(l, &l->failure) < 0 ? -1 : 1;
    if (rc < 0 && ++l->failed_looks < LX_MAX_FAILED_LOOKS)
        return 0; /* look again later */
    if (rc < 0) {
        l->state = LX_FAILED;
        if (err)
            *err = l->failure;
        return -1;
    }
    if (rc == 1) {
        l->state = LX_FOUND;
        *out = &l->desc;
    }
    return rc;
}

/* Until the kernel is described, and where its task cannot be read, the generic identity
 * stands; except while the guest boots (lx_boot_identity). */
static void linux_identify_task(const struct guestos *os, struct guestos_vcpu *vc,
                                struct gw_walker *w, struct guestos_ident *out)
{
    struct lx_layer *l = os->priv;
    const struct lx_task_reader *r = atomic_load_explicit(&l->tasks, memory_order_acquire);
    if (r) {
        lx_task_read(r, vc, w, out);
        return;
    }
    if (w->snap.cpl == 0 && w->snap.gs_base)
        vc->kernel_gs_seen = w->snap.gs_base; /* for the first user-mode stop after discovery */
    if (w->snap.cpl != 0)
        atomic_store_explicit(&l->user_seen, true, memory_order_relaxed);
    else if (!atomic_load_explicit(&l->user_seen, memory_order_relaxed))
        lx_boot_identity(vc, out);
}

static int by_text(const void *a, const void *b)
{
    const struct lx_orc_module *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Each listed module's ORC tables, read once, and the set of the listed modules published to
 * the exit path when it changed. */
static void update_module_orc(struct lx_layer *l, const struct lx_kmod *m, int n)
{
    struct lx_orc *o = atomic_load_explicit(&l->orc, memory_order_relaxed);
    if (!o || n <= 0 || l->nsets >= LX_ORC_MAX_SETS)
        return;
    struct lx_orc_mods *set = calloc(1, sizeof(*set) + (size_t)n * sizeof(set->m[0]));
    if (!set)
        return;
    for (int i = 0; i < n; i++) {
        struct lx_orc_modtab *mt = NULL;
        for (size_t j = 0; j < l->nmodtabs && !mt; j++)
            if (l->modtabs[j].mod == m[i].addr && l->modtabs[j].text == m[i].text &&
                l->modtabs[j].text_end == m[i].text + m[i].text_size &&
                !strcmp(l->modtabs[j].name, m[i].name))
                mt = &l->modtabs[j];
        if (!mt && l->nmodtabs < LX_ORC_MAX_MODULES) {
            if (!l->modtabs && !(l->modtabs = calloc(LX_ORC_MAX_MODULES, sizeof(*l->modtabs))))
                break;
            mt = &l->modtabs[l->nmodtabs++];
            *mt = (struct lx_orc_modtab){
                .mod = m[i].addr, .text = m[i].text, .text_end = m[i].text + m[i].text_size};
            snprintf(mt->name, sizeof(mt->name), "%s", m[i].name);
            if (l->modtab_entries >= LX_ORC_MODULES_MAX_ENTRIES)
                snprintf(l->orc_mods_why, sizeof(l->orc_mods_why),
                         "%s: the modules' ORC tables already hold %zu entries", mt->name,
                         l->modtab_entries);
            else
                mt->ok = lx_orc_load_module(&l->kmods, &m[i], &o->layout, &mt->t, l->orc_mods_why,
                                            sizeof(l->orc_mods_why)) == 0;
            if (mt->ok)
                l->modtab_entries += mt->t.n;
        }
        if (mt && mt->ok)
            set->m[set->n++] = (struct lx_orc_module){mt->text, mt->text_end, &mt->t};
    }
    qsort(set->m, set->n, sizeof(set->m[0]), by_text);
    for (size_t i = 1; i < set->n; i++)
        if (set->m[i].lo < set->m[i - 1].hi) { /* overlapping code regions: not modules */
            free(set);
            return;
        }
    const struct lx_orc_mods *cur = atomic_load_explicit(&o->mods, memory_order_relaxed);
    bool same = cur && cur->n == set->n;
    for (size_t i = 0; same && i < set->n; i++)
        same = cur->m[i].t == set->m[i].t;
    if (same || (!cur && !set->n)) {
        free(set);
        return;
    }
    l->sets[l->nsets++] = set;
    atomic_store_explicit(&o->mods, set, memory_order_release);
}

/* The thread's user registers at kernel entry (docs/orc.md, "The user boundary"). Linux keeps
 * them at the top of the thread's kernel stack (task_pt_regs): an ORC walk that reached pt_regs
 * elsewhere was on another task's stack (mid-switch: __switch_to_asm changes the stack before
 * __switch_to changes `current`), and a walk that stopped early (entry and exit code, retpoline
 * thunks) did not reach them: then they are read at the top of the thread's own stack, at the
 * offset this vCPU's first whole walk showed. Not in entry_SYSCALL_64 before its pt_regs are
 * written (they are the previous entry's there). */
static bool linux_user_entry(const struct guestos *os, struct guestos_vcpu *vc, struct gw_walker *w,
                             const struct guestos_ident *who, struct gw_stack *k)
{
    const struct lx_layer *l = os->priv;
    uint64_t base = who->task.kstack;
    if (!base) /* no task stack known: the walk's registers if CR3 is the thread's */
        return k->user_entry && who->as_root == who->cr3_root;
    /* Exactly at the top of the thread's stack: with VMAP_STACK the next task's stack may lie a
     * guard page above this one, so "somewhere near" is not enough. The offset is learned from a
     * walk that cannot be mid-switch (CR3 is the thread's) and lies within THREAD_SIZE. */
    uint64_t off = k->user_regs_at - base;
    if (k->user_entry && k->user_regs_at >= base &&
        (vc->regs_top ? off == vc->regs_top
                      : off < LX_THREAD_SIZE_MAX && who->as_root == who->cr3_root)) {
        vc->regs_top = off;
        return true;
    }
    k->user_entry = false;
    /* Published with the task reader (release), which gave who->task.kstack: l->k is stable.
     * In entry_SYSCALL_64 before its pt_regs are pushed, RCX still holds the user RIP SYSCALL
     * saved (the user RSP is in flux): the exact PC, the rest of the stack deferred. */
    uint64_t rip = w->snap.rip;
    if (rip >= l->k->sym.entry_syscall_64 && rip < l->k->sym.entry_syscall_64_after_hwframe) {
        if (!w->snap.rcx || (w->snap.rcx >> 47))
            return false;
        k->user_entry = true;
        k->user_regs = (struct gw_regs){.rip = w->snap.rcx, .user = true};
        k->user_regs_at = 0;
        return true;
    }
    if (!vc->regs_top)
        return false;
    uint8_t r[LX_PT_SIZE];
    uint64_t ip, cs, sp, bp;
    if (gw_read_virt(w, base + vc->regs_top, r, sizeof(r), false, NULL) < 0)
        return false;
    memcpy(&ip, r + LX_PT_IP, 8);
    memcpy(&cs, r + LX_PT_CS, 8);
    memcpy(&sp, r + LX_PT_SP, 8);
    memcpy(&bp, r + LX_PT_BP, 8);
    if (!(cs & 3) || !ip || (ip >> 47) || (sp >> 47))
        return false;
    k->user_entry = true;
    k->user_regs = (struct gw_regs){.rip = ip, .rsp = sp, .rbp = bp, .user = true};
    k->user_regs_at = base + vc->regs_top;
    return true;
}

static int linux_kernel_modules(struct guestos *os, const struct gmem *mem,
                                struct guestos_kmodule *out, size_t max, struct hv_err *err)
{
    struct lx_layer *l = os->priv;
    if (l->state != LX_FOUND)
        return hv_errf(err, "the kernel is not described yet");
    if (!l->kmods_ok)
        return hv_errf(err, "%s", l->kmods_why);
    l->kmods.kr.mem = mem;
    enum { BATCH = 64 };
    struct lx_kmod batch[BATCH];
    struct lx_kmod *m = max <= BATCH ? batch : calloc(max, sizeof(*m));
    if (!m)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    int n = lx_kmods_list(&l->kmods, m, max, err);
    update_module_orc(l, m, n);
    for (int i = 0; i < n; i++) {
        out[i] = (struct guestos_kmodule){.text_start = m[i].text,
                                          .text_end = m[i].text + m[i].text_size,
                                          .handle = {m[i].addr, m[i].kallsyms}};
        snprintf(out[i].name, sizeof(out[i].name), "%s", m[i].name);
    }
    if (m != batch)
        free(m);
    return n;
}

struct sym_relay {
    guestos_symbol_fn fn;
    void *ctx;
};

static int relay_symbol(void *ctx, uint64_t addr, char type, const char *name, size_t len)
{
    const struct sym_relay *r = ctx;
    struct guestos_symbol s = {.addr = addr, .name = name, .name_len = (uint16_t)len, .type = type};
    return r->fn(r->ctx, &s);
}

static long linux_kernel_module_symbols(struct guestos *os, const struct gmem *mem,
                                        const struct guestos_kmodule *gm, guestos_symbol_fn fn,
                                        void *ctx, struct hv_err *err)
{
    struct lx_layer *l = os->priv;
    if (!l->kmods_ok)
        return hv_errf(err, "%s", l->kmods_why);
    l->kmods.kr.mem = mem;
    struct lx_kmod m = {.addr = gm->handle[0],
                        .text = gm->text_start,
                        .text_size = gm->text_end - gm->text_start,
                        .kallsyms = gm->handle[1]};
    snprintf(m.name, sizeof(m.name), "%.*s", LX_KMOD_NAME_LEN, gm->name);
    struct sym_relay r = {fn, ctx};
    return lx_kmods_symbols(&l->kmods, &m, relay_symbol, &r, err);
}

/* The path execve() was given, from the process's own memory (AT_EXECFN). */
static void read_execfn(const struct gmem *mem, const struct guestos_as *as, uint64_t va, char *out,
                        size_t len)
{
    size_t got = 0;
    out[0] = 0;
    while (got + 1 < len) {
        size_t chunk = 4096 - ((va + got) & 4095);
        if (chunk > len - 1 - got)
            chunk = len - 1 - got;
        if (!guestos_generic_read_user(mem, as, va + got, out + got, chunk))
            break;
        char *nul = memchr(out + got, 0, chunk);
        if (nul) {
            for (char *c = out; c < nul; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                    *c = '?';
            return;
        }
        got += chunk;
    }
    out[0] = 0; /* unterminated within the bound, or unreadable */
}

/* Images a forked child shares with its parent. fork() copies no page-table entries for file
 * mappings (mm/memory.c, vma_needs_copy: they fault in again), so a child that never touches
 * an image's header page shows its code but no header to find it by. The parent's images whose
 * executable pages the child maps to the same physical pages are the child's too. */
static size_t inherit_modules(struct lx_layer *l, const struct gmem *mem,
                              const struct guestos_as *as, struct lx_exe_name *c,
                              struct discover_module *out, size_t n, size_t max)
{
    if (!c->proot && c->parent_looks < 3) {
        c->parent_looks++;
        l->procs_kr.mem = mem;
        if (lx_proc_parent(&l->procs_kr, &l->k->task, &l->procs, l->k->sym.init_task, as->pid,
                           as->root, &c->ppid, &c->proot) < 0)
            c->proot = 0;
    }
    if (!c->proot || c->proot == as->root || n >= max)
        return n;
    struct guestos_as pas = *as;
    pas.root = c->proot;
    pas.pid = c->ppid;
    struct discover_module *pm = malloc(max * sizeof(*pm));
    if (!pm)
        return n;
    size_t pn = guestos_generic_discover_modules(NULL, mem, &pas, pm, max);
    for (size_t i = 0; i < pn && n < max; i++) {
        bool have = false, shared = false;
        for (size_t j = 0; j < n && !have; j++)
            have = out[j].start == pm[i].start;
        for (unsigned s = 0; s < pm[i].nseg && !have && !shared; s++)
            shared = (pm[i].seg[s].flags & 1) && /* PF_X */
                     guestos_generic_shared_page(mem, as, &pas, pm[i].seg[s].start);
        if (shared)
            out[n++] = pm[i];
    }
    free(pm);
    return n;
}

/* The generic discovery, images inherited from the parent, images found through the files
 * their code pages cache (guestos/generic/file_modules.h: a child of a child, or of a parent
 * gone), and the executable named by the path it was started from. */
static size_t linux_discover_modules(struct guestos *os, const struct gmem *mem,
                                     const struct guestos_as *as, struct discover_module *out,
                                     size_t max)
{
    struct lx_layer *l = os->priv;
    struct discover_range *ranges = malloc(DISCOVER_GUEST_MAX_RANGES * sizeof(*ranges));
    if (!ranges)
        return 0;
    size_t nranges, n = guestos_generic_discover_in(mem, as, ranges, &nranges, out, max);
    if (l->state != LX_FOUND || !l->procs.known || as->pid <= 0) {
        free(ranges);
        return n;
    }
    struct lx_exe_name *c =
        &l->exe_cache[((uint32_t)as->pid ^ (uint32_t)(as->root >> 12)) % LX_EXE_CACHE];
    if (c->tgid != as->pid || c->root != as->root)
        *c = (struct lx_exe_name){.tgid = as->pid, .root = as->root};
    n = inherit_modules(l, mem, as, c, out, n, max);
    n = guestos_file_modules(os, mem, as, ranges, nranges, out, n, max);
    free(ranges);
    bool unnamed = false;
    for (size_t i = 0; i < n; i++)
        unnamed |= !out[i].name[0];
    if (!unnamed)
        return n;
    if (!c->path[0] && c->looks < 3) {
        struct lx_exe e;
        c->looks++;
        l->procs_kr.mem = mem;
        if (lx_proc_exe(&l->procs_kr, &l->k->task, &l->procs, l->k->sym.init_task, as->pid,
                        as->root, &e) == 0 &&
            e.execfn) {
            c->entry = e.entry;
            read_execfn(mem, as, e.execfn, c->path, sizeof(c->path));
            /* The path it was started by names a script when an interpreter runs it, and a
             * symbolic link when one was followed (/bin/grep for busybox): the image is the
             * file the kernel mapped, named by its own dentries. Without those, the path. */
            const char *a = strrchr(c->path, '/'), *b = strrchr(e.file, '/');
            if (e.file[0] && (!c->path[0] || strcmp(a ? a + 1 : c->path, b ? b + 1 : e.file)))
                snprintf(c->path, sizeof(c->path), "%s", e.file);
        }
    }
    for (size_t i = 0; i < n && c->path[0]; i++)
        if (!out[i].name[0] && c->entry >= out[i].start && c->entry < out[i].end)
            snprintf(out[i].name, sizeof(out[i].name), "%s", c->path);
    return n;
}

/* The file a user page caches, from its struct page (pagefile.h). */
static bool linux_user_page_file(struct guestos *os, const struct gmem *mem,
                                 const struct guestos_as *as, uint64_t va, struct guestos_file *out)
{
    struct lx_layer *l = os->priv;
    uint64_t gpa;
    if (l->state != LX_FOUND || !l->files.known || !guestos_generic_user_gpa(mem, as, va, &gpa))
        return false;
    l->procs_kr.mem = mem;
    struct lx_page_file f;
    bool ok = lx_page_file(&l->procs_kr, &l->files, l->vmemmap, gpa >> 12, &f);
    lx_kread_forget(&l->procs_kr); /* the guest runs between calls */
    if (!ok)
        return false;
    *out =
        (struct guestos_file){.ino = f.ino, .size = f.size, .index = f.index, .handle = f.mapping};
    memcpy(out->fs_uuid, f.uuid, sizeof(out->fs_uuid));
    return true;
}

/* A page of the file from the page cache (pagecache.h), once the address_space is still that
 * file's: a file closed meanwhile may have its memory reused for another. */
static int linux_file_page(struct guestos *os, const struct gmem *mem, const struct guestos_file *f,
                           uint64_t index, void *dst)
{
    struct lx_layer *l = os->priv;
    if (l->state != LX_FOUND || !l->files.known || !l->cache.known)
        return -1;
    l->procs_kr.mem = mem;
    struct lx_page_file now;
    int rc = -1;
    if (lx_mapping_file(&l->procs_kr, &l->files, f->handle, &now) && now.ino == f->ino &&
        !memcmp(now.uuid, f->fs_uuid, sizeof(now.uuid))) {
        enum lx_cache_page r =
            lx_cache_read(&l->procs_kr, &l->cache, &l->files, l->vmemmap, f->handle, index, dst);
        rc = r == LX_CACHE_CACHED ? 1 : r == LX_CACHE_HOLE ? 0 : -1;
    }
    lx_kread_forget(&l->procs_kr);
    return rc;
}

/* panic() and crash_kexec() claim panic_cpu (kernel/panic.c, since 4.5: PANIC_CPU_INVALID = -1
 * until then) before anything else, so it says a panic is under way even when the console is
 * quiet and the guest then spins forever (panic=0, Debian's default). */
static int linux_panicked(struct guestos *os, const struct gmem *mem)
{
    (void)mem; /* the image reads through the memory it was found in */
    struct lx_layer *l = os->priv;
    uint32_t cpu;
    if (l->state != LX_FOUND || !l->k->sym.panic_cpu ||
        !lx_kimage_u32(&l->k->img, l->k->sym.panic_cpu, &cpu))
        return -2;
    if (cpu == UINT32_MAX)
        return -1;
    return cpu < LX_MAX_CPUS ? (int)cpu : -2;
}

static long linux_threads(struct guestos *os, const struct gmem *mem, guestos_thread_fn fn,
                          void *ctx, size_t max, struct hv_err *err)
{
    (void)mem; /* the reader reads the memory the kernel was found in */
    struct lx_layer *l = os->priv;
    if (l->state != LX_FOUND)
        return hv_errk(err, HV_ERR_GUEST, "the guest kernel is not described yet");
    if (!l->threads.tl.known)
        return hv_errk(err, HV_ERR_UNSUPPORTED, "linux: the guest's threads cannot be listed: %s",
                       l->threads_why);
    char why[160];
    lx_kread_forget(&l->threads_kr);
    long n = lx_threads_each(&l->threads, fn, ctx, max, why, sizeof(why));
    if (n < 0)
        return hv_errk(err, HV_ERR_GUEST, "linux: %s", why);
    return n;
}

static bool linux_thread_regs(struct guestos *os, const struct gmem *mem,
                              const struct guestos_thread *t, struct gw_regs *kernel,
                              struct gw_regs *user)
{
    (void)mem;
    struct lx_layer *l = os->priv;
    return l->state == LX_FOUND && l->threads.tl.known &&
           lx_thread_regs(&l->threads, t, kernel, user);
}

static bool linux_thread_reread(struct guestos *os, const struct gmem *mem,
                                const struct guestos_thread *t, struct guestos_thread *now)
{
    (void)mem;
    struct lx_layer *l = os->priv;
    return l->state == LX_FOUND && l->threads.tl.known && lx_thread_reread(&l->threads, t, now);
}

static bool linux_thread_unchanged(struct guestos *os, const struct gmem *mem,
                                   const struct guestos_thread *t)
{
    (void)mem;
    struct lx_layer *l = os->priv;
    return l->state == LX_FOUND && l->threads.tl.known && lx_thread_unchanged(&l->threads, t);
}

static bool linux_task_ns_exit(const struct guestos *os, struct guestos_vcpu *vc,
                               struct gw_walker *w, uint64_t handle, int32_t tid,
                               struct guestos_ns *out)
{
    (void)vc;
    const struct lx_layer *l = os->priv;
    const struct lx_task_reader *r = atomic_load_explicit(&l->tasks, memory_order_acquire);
    return r && lx_task_ns_at(r, w, handle, tid, out);
}

static int linux_group_path(struct guestos *os, const struct gmem *mem, uint64_t group, char *out,
                            size_t len)
{
    (void)mem;
    struct lx_layer *l = os->priv;
    if (l->state != LX_FOUND || !l->groups.known)
        return -1;
    lx_kread_forget(&l->groups_kr); /* the guest runs between calls */
    return lx_cgroup_path(&l->groups_kr, &l->groups, group, out, len);
}

/* The task at `handle` is still thread `tid` (its pid word), and its ids in its namespace:
 * its own, and its thread group leader's, which is the process's. */
static bool linux_task_ns(struct guestos *os, const struct gmem *mem, uint64_t handle, int32_t tid,
                          struct guestos_ns *out)
{
    (void)mem;
    struct lx_layer *l = os->priv;
    const struct lx_task_layout *t = &l->k->task;
    if (l->state != LX_FOUND || !l->groups.ns_known || !t->known)
        return false;
    lx_kread_forget(&l->groups_kr);
    int32_t pid;
    uint64_t leader;
    struct lx_ns_pid self, lead;
    if (!lx_kread(&l->groups_kr, handle + t->pid, &pid, 4) || pid != tid ||
        !lx_task_ns_pid(&l->groups_kr, &l->groups, handle, &self) ||
        !lx_kread(&l->groups_kr, handle + t->group_leader, &leader, 8) ||
        !lx_task_ns_pid(&l->groups_kr, &l->groups, leader, &lead) || lead.inum != self.inum)
        return false;
    *out = (struct guestos_ns){
        .ns_tid = self.nr, .ns_pid = lead.nr, .level = self.level, .pidns = self.inum};
    if (!lx_task_uts(&l->groups_kr, &l->groups, handle, out->hostname, &out->mntns)) {
        out->hostname[0] = 0;
        out->mntns = 0;
    }
    return true;
}

const struct guestos_ops guestos_linux_ops = {
    .name = "linux",
    .identify = guestos_generic_identify,
    .identify_task = linux_identify_task,
    .discover_kernel = linux_discover_kernel,
    .kernel_modules = linux_kernel_modules,
    .kernel_module_symbols = linux_kernel_module_symbols,
    .discover_modules = linux_discover_modules,
    .module_symbols = guestos_generic_module_symbols,
    .read_user = guestos_generic_read_user,
    .user_entry = linux_user_entry,
    .panicked = linux_panicked,
    .user_page_file = linux_user_page_file,
    .file_page = linux_file_page,
    .threads = linux_threads,
    .thread_regs = linux_thread_regs,
    .thread_reread = linux_thread_reread,
    .thread_unchanged = linux_thread_unchanged,
    .group_path = linux_group_path,
    .task_ns = linux_task_ns,
    .task_ns_exit = linux_task_ns_exit,
    .close = linux_close,
};
