#include "guestos/linux/kernel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UTS_RELEASE_OFFSET 130 /* struct new_utsname: sysname[65], nodename[65], release[65] */

struct lx_kernel *lx_kernel_new(void)
{
    return calloc(1, sizeof(struct lx_kernel));
}

static void reset_symbols(struct lx_kernel *k)
{
    vec_free(&k->syms);
    vec_free(&k->names);
    k->text_lo = k->text_hi = 0;
    memset(&k->sym, 0, sizeof(k->sym));
    lx_btf_free(&k->btf);
    k->btf_types = 0;
    memset(&k->task, 0, sizeof(k->task));
    k->btf_note[0] = 0;
}

void lx_kernel_free(struct lx_kernel *k)
{
    if (!k)
        return;
    reset_symbols(k);
    free(k);
}

static int add_symbol(struct lx_kernel *k, uint64_t addr, char type, const char *name, size_t len,
                      struct hv_err *err)
{
    /* A kernel has 50-150k code symbols: start there rather than doubling up from 16. */
    uint32_t off = (uint32_t)k->names.n;
    if (!vec_reserve(&k->syms, k->syms.cap ? 1 : 65536) ||
        !vec_reserve(&k->names, k->names.cap ? len + 1 : (1u << 21)) ||
        !vec_extend(&k->names, name, len) || !vec_append(&k->names, 0))
        return hv_errk(err, HV_ERR_NO_MEMORY, "kallsyms: out of memory");
    k->syms.v[k->syms.n++] =
        (struct lx_ksym){.addr = addr, .name = off, .name_len = (uint16_t)len, .type = type};
    if (!k->text_lo || addr < k->text_lo)
        k->text_lo = addr;
    if (addr + 1 > k->text_hi)
        k->text_hi = addr + 1;
    return 0;
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && !memcmp(name, want, len);
}

static int on_symbol(void *ctx, uint64_t addr, char type, const char *name, size_t len,
                     struct hv_err *err)
{
    struct lx_kernel *k = ctx;
    const struct {
        const char *name;
        uint64_t *dst;
    } wanted[] = {
        {"current_task", &k->sym.current_task},
        {"pcpu_hot", &k->sym.pcpu_hot},
        {"__per_cpu_offset", &k->sym.per_cpu_offset},
        {"nr_cpu_ids", &k->sym.nr_cpu_ids},
        {"init_task", &k->sym.init_task},
        {"__start_BTF", &k->sym.start_btf},
        {"__stop_BTF", &k->sym.stop_btf},
        {"entry_SYSCALL_64", &k->sym.entry_syscall_64},
        {"modules", &k->sym.modules},
        {"__start_orc_unwind_ip", &k->sym.start_orc_ip},
        {"__stop_orc_unwind_ip", &k->sym.stop_orc_ip},
        {"__start_orc_unwind", &k->sym.start_orc},
        {"entry_SYSCALL_64_after_hwframe", &k->sym.entry_syscall_64_after_hwframe},
        {"panic_cpu", &k->sym.panic_cpu},
        {"vmemmap_base", &k->sym.vmemmap_base},
    };
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
        if (!*wanted[i].dst && name_is(name, len, wanted[i].name))
            *wanted[i].dst = addr;
    /* The ends of the kernel's code: what follows is data, or nothing. */
    if (name_is(name, len, "_etext") || name_is(name, len, "_einittext"))
        return add_symbol(k, addr, 0, "", 0, err);
    if (type != 't' && type != 'T' && type != 'w' && type != 'W')
        return 0;
    return add_symbol(k, addr, type, name, len, err);
}

/* §1.6 of the facts (docs/linux-introspection.md): the release string the running kernel
 * reports must be where VMCOREINFO says, read through phys_base; a stale copy from an earlier
 * boot or a wrong phys_base fails this. */
static int check_release(const struct lx_kernel *k, struct hv_err *err)
{
    uint64_t uts;
    int64_t name_off;
    if (!lx_vmcoreinfo_symbol(&k->vmci, "init_uts_ns", &uts) ||
        !lx_vmcoreinfo_decimal(&k->vmci, "OFFSET(uts_namespace.name)", &name_off) || name_off < 0 ||
        name_off > 4096)
        return 0; /* not there to check: kallsyms' _stext check still applies */
    char rel[sizeof(k->vmci.osrelease)];
    if (!lx_kimage_read(&k->img, uts + (uint64_t)name_off + UTS_RELEASE_OFFSET, rel, sizeof(rel)))
        return hv_errk(err, HV_ERR_GUEST,
                       "vmcoreinfo: init_uts_ns at 0x%" PRIx64
                       " is not in the kernel image (phys_base 0x%" PRIx64 ")",
                       uts, k->img.phys_base);
    rel[sizeof(rel) - 1] = 0;
    if (strcmp(rel, k->vmci.osrelease))
        return hv_errk(err, HV_ERR_GUEST,
                       "vmcoreinfo: OSRELEASE %s, but the kernel's utsname says \"%.64s\" "
                       "(a stale copy?)",
                       k->vmci.osrelease, rel);
    return 0;
}

/* The task_struct members the Linux layer reads, from BTF, checked on init_task (pid 0, comm
 * "swapper/0" as the boot CPU's idle task is named, init/init_task.c and init/main.c). A kernel
 * without BTF, or whose BTF fails the check, simply has no task layout. */
static void read_btf(struct lx_kernel *k)
{
    if (!k->sym.start_btf || k->sym.stop_btf <= k->sym.start_btf) {
        snprintf(k->btf_note, sizeof(k->btf_note),
                 "no BTF (__start_BTF not in kallsyms: CONFIG_DEBUG_INFO_BTF or "
                 "CONFIG_KALLSYMS_ALL off)");
        return;
    }
    uint64_t len = k->sym.stop_btf - k->sym.start_btf;
    const void *p = len <= LX_BTF_MAX_BYTES ? lx_kimage_ptr(&k->img, k->sym.start_btf, len) : NULL;
    struct hv_err err = {0};
    if (!p) {
        snprintf(k->btf_note, sizeof(k->btf_note), "BTF of %" PRIu64 " bytes cannot be read", len);
        return;
    }
    if (lx_btf_load(&k->btf, p, (size_t)len, &err) < 0) {
        snprintf(k->btf_note, sizeof(k->btf_note), "%.150s", err.msg);
        return;
    }
    k->btf_types = k->btf.ntypes;
    uint32_t task = lx_btf_find_struct(&k->btf, "task_struct");
    struct lx_task_layout t = {0};
    uint64_t sz;
    const struct {
        const char *name;
        uint64_t *off, want_size;
    } members[] = {
        {"pid", &t.pid, 4},
        {"tgid", &t.tgid, 4},
        {"flags", &t.flags, 4},
        {"mm", &t.mm, 8},
        {"group_leader", &t.group_leader, 8},
    };
    for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
        if (!task || !lx_btf_member(&k->btf, task, members[i].name, members[i].off, &sz) ||
            sz != members[i].want_size) {
            snprintf(k->btf_note, sizeof(k->btf_note),
                     "BTF: no task_struct.%s of %" PRIu64 " bytes", members[i].name,
                     members[i].want_size);
            return;
        }
    }
    if (!lx_btf_member(&k->btf, task, "comm", &t.comm, &t.comm_size) || t.comm_size < 8 ||
        t.comm_size > 64) {
        snprintf(k->btf_note, sizeof(k->btf_note), "BTF: no task_struct.comm");
        return;
    }
    if (!lx_btf_member(&k->btf, task, "stack", &t.stack, &sz) || sz != 8)
        t.stack = 0; /* kernel stacks then not tied to their task (docs/orc.md) */
    uint32_t mm = lx_btf_find_struct(&k->btf, "mm_struct");
    if (!mm || !lx_btf_member(&k->btf, mm, "pgd", &t.mm_pgd, &sz) || sz != 8) {
        snprintf(k->btf_note, sizeof(k->btf_note), "BTF: no mm_struct.pgd of 8 bytes");
        return;
    }
    /* The check against the running kernel: init_task is the boot CPU's idle task. */
    char comm[65] = {0};
    int32_t pid = -1;
    if (!k->sym.init_task ||
        !lx_kimage_read(&k->img, k->sym.init_task + t.comm, comm, t.comm_size) ||
        !lx_kimage_read(&k->img, k->sym.init_task + t.pid, &pid, sizeof(pid))) {
        snprintf(k->btf_note, sizeof(k->btf_note), "init_task cannot be read to check the layout");
        return;
    }
    comm[t.comm_size] = 0;
    if (pid != 0 || strncmp(comm, "swapper", 7)) {
        snprintf(k->btf_note, sizeof(k->btf_note),
                 "BTF's task_struct layout does not fit init_task (pid %d, comm \"%.16s\")", pid,
                 comm);
        return;
    }
    t.known = true;
    k->task = t;
    snprintf(k->btf_note, sizeof(k->btf_note),
             "BTF: %" PRIu32 " types; task_struct pid@%" PRIu64 " tgid@%" PRIu64 " comm@%" PRIu64
             " mm@%" PRIu64 ", checked on init_task (%s)",
             k->btf_types, t.pid, t.tgid, t.comm, t.mm, comm);
}

int lx_kernel_discover(struct lx_kernel *k, const struct gmem *mem, struct hv_err *err)
{
    reset_symbols(k);
    int rc = lx_vmcoreinfo_find(mem, &k->vmci, err);
    if (rc <= 0)
        return rc;
    return lx_kernel_describe(k, mem, err);
}

int lx_kernel_describe(struct lx_kernel *k, const struct gmem *mem, struct hv_err *err)
{
    reset_symbols(k);
    int64_t phys_base, image_size = (int64_t)LX_KERNEL_IMAGE_MAX;
    /* phys_base is an unsigned long that wraps below zero when the virtual KASLR slide exceeds
     * the physical one (arch/x86/kernel/head64.c adds the load delta to it); NUMBER() prints it
     * signed. Image reads add it modulo 2^64. */
    if (!lx_vmcoreinfo_decimal(&k->vmci, "NUMBER(phys_base)", &phys_base))
        return hv_errk(err, HV_ERR_GUEST,
                       "vmcoreinfo: no NUMBER(phys_base) (not an x86-64 kernel?)");
    if (lx_vmcoreinfo_decimal(&k->vmci, "NUMBER(KERNEL_IMAGE_SIZE)", &image_size) &&
        (image_size <= 0 || (uint64_t)image_size > LX_KERNEL_IMAGE_MAX))
        return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: KERNEL_IMAGE_SIZE %" PRId64 " out of range",
                       image_size);
    k->img = (struct lx_kimage){
        .mem = mem, .phys_base = (uint64_t)phys_base, .image_size = (uint64_t)image_size};
    k->kaslr_offset = k->vmci.has_kernel_offset ? k->vmci.kernel_offset : 0;
    if (check_release(k, err) < 0)
        return -1;
    uint64_t stext;
    if (!lx_vmcoreinfo_symbol(&k->vmci, "_stext", &stext))
        return hv_errk(err, HV_ERR_GUEST,
                       "vmcoreinfo: no SYMBOL(_stext) to check kallsyms against");
    if (!lx_kallsyms_loc_from_vmcoreinfo(&k->vmci, &k->ks_loc)) {
        /* Before 6.0 VMCOREINFO does not name the tables: they are in the image's read-only
         * data, after the code that starts at _stext. */
        uint64_t end = LX_START_KERNEL_MAP + k->img.image_size;
        uint64_t from = k->kallsyms_scan_from ? k->kallsyms_scan_from : stext;
        uint64_t to =
            stext < end && end - stext > LX_KALLSYMS_SCAN_MAX ? stext + LX_KALLSYMS_SCAN_MAX : end;
        if (lx_kallsyms_find(&k->img, from, to, &k->ks_loc, err) < 0)
            return -1;
    }
    if (lx_kallsyms_decode(&k->img, &k->ks_loc, stext, on_symbol, k, &k->ks, err) < 0) {
        reset_symbols(k);
        return -1;
    }
    if (k->syms.n == 0)
        return hv_errk(err, HV_ERR_GUEST, "kallsyms: %" PRIu32 " symbols, none of them code",
                       k->ks.nsyms);
    read_btf(k);
    return 1;
}
