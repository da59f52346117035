/* The guest kernel's description of itself into the recording (drain thread): once the OS layer
 * finds it (guestos_discover_kernel: for Linux, VMCOREINFO and kallsyms, a second or so into the
 * guest's boot), one module "[kernel.kallsyms]" with the kernel's build-id, its mapping into the
 * kernel's address space (link-time addresses, so a vmlinux or System.map given to `report`
 * fits it too), its code symbols, and a guest_kernel marker with the release and KASLR offset.
 * `hvprof report` then names kernel frames with no file given. docs/fxt-samples.md. Then,
 * each pass after the rings, a look for the kernel's own record of a panic: a marker, and the
 * flight recorder's snapshot. The recorder source "kernel": it writes the core's description of
 * the kernel (struct rec_kernel) that the other sources read. */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "guestos/guestos.h"
#include "sampler/exit/core.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/parts/module_registry.h"
#include "sampler/source/source.h"
#include "schema/recording.h"

/* How often the drain thread looks for the kernel while it has not found it. A scan reads the
 * first bytes of every 4 KiB page of guest RAM: ~22 ms for 512 MiB on the nested test bed, so
 * the interval grows from 250 ms by half each time up to 2 s (a 10 s boot costs ~10 scans). */
#define KERNEL_POLL_FIRST_NS 250000000ull
#define KERNEL_POLL_MAX_NS   2000000000ull

static int write_kernel(const struct rec_env *env, const struct guestos_kernel *k, uint64_t now,
                        struct hv_err *err)
{
    struct rec_kernel *sk = env->kernel;
    struct discover_module m = {
        .header_va = k->text_start - k->kaslr_offset,
        .bias = k->kaslr_offset,
        .start = k->text_start,
        .end = k->text_end,
        .e_type = 2, /* ET_EXEC */
        .nseg = 1,
        .seg = {{.start = k->text_start,
                 .size = k->text_end - k->text_start,
                 .flags = PF_R | PF_X}},
    };
    snprintf(m.name, sizeof(m.name), "%s", REC_KERNEL_MODULE_NAME);
    memcpy(m.build_id, k->build_id, k->build_id_len);
    m.build_id_len = k->build_id_len;
    int64_t id =
        discover_record_module(env->w, env->modules, hvfxt_koid_guest_process(0), &m, now, err);
    if (id == -1)
        return -1;

    /* Symbols at link-time addresses, the module's own address space; as many as the metadata
     * budget holds (a distribution kernel's ~100k take ~6 MiB). */
    size_t nsyms = 0;
    uint64_t left = id < 0 ? 0 : meta_budget_symbols_left(env->meta), need = 0;
    while (nsyms < k->nsyms && (need += META_SYMBOL_COST(k->syms[nsyms].name_len)) <= left)
        nsyms++;
    if (nsyms < k->nsyms)
        env->meta->cut_symbol_tables++;
    sk->symbols = nsyms;
    enum { CHUNK = 4096 };
    struct hvfxt_symbol *buf = malloc(CHUNK * sizeof(*buf));
    if (!buf)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < nsyms && rc == 0; i += CHUNK) {
        size_t n = nsyms - i < CHUNK ? nsyms - i : CHUNK;
        for (size_t j = 0; j < n; j++) {
            const struct guestos_symbol *g = &k->syms[i + j];
            buf[j] = (struct hvfxt_symbol){.addr = g->addr - k->kaslr_offset,
                                           .type = g->type,
                                           .name = g->name,
                                           .name_len = g->name_len};
        }
        rc = hvfxt_write_symbols(env->w, (uint64_t)id, buf, n, err);
    }
    free(buf);
    if (rc < 0)
        return -1;

    char bid[2 * sizeof(k->build_id) + 1] = "";
    for (uint32_t i = 0; i < k->build_id_len; i++)
        snprintf(bid + 2 * i, 3, "%02x", k->build_id[i]);
    struct fxt_arg args[] = {
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline(HVFXT_ARG_OSRELEASE),
         .v.str = fxt_str_inline(k->release)},
        {.type = FXT_ARG_STRING,
         .name = fxt_str_inline(HVFXT_ARG_BUILD_ID),
         .v.str = fxt_str_inline(bid)},
        {.type = FXT_ARG_U64,
         .name = fxt_str_inline(HVFXT_ARG_KERNEL_OFFSET),
         .v.u64 = k->kaslr_offset},
        {.type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_KERNEL_SYMBOLS), .v.u64 = nsyms},
    };
    return hvfxt_write_marker(env->w, HVFXT_GUEST_KERNEL, now, args, sizeof(args) / sizeof(args[0]),
                              err);
}

static int discover(const struct rec_env *env, uint64_t now, bool final, struct hv_err *err)
{
    struct rec_kernel *sk = env->kernel;
    if (!env->os->ops->discover_kernel || sk->state != REC_KERNEL_SEARCHING || !rec_may_work(env))
        return 0;
    if (!sk->interval_ns)
        sk->interval_ns = KERNEL_POLL_FIRST_NS;
    if (!final && sk->attempts && now - sk->last_try_ns < sk->interval_ns)
        return 0;
    if (sk->attempts)
        sk->interval_ns += sk->interval_ns / 2;
    if (sk->interval_ns > KERNEL_POLL_MAX_NS)
        sk->interval_ns = KERNEL_POLL_MAX_NS;
    sk->last_try_ns = now;
    sk->attempts++;
    const struct guestos_kernel *k = NULL;
    struct hv_err why = {0};
    uint64_t t0 = hv_now_ns();
    int rc = guestos_discover_kernel(env->os, env->mem, &k, &why);
    sk->scan_ns += hv_now_ns() - t0;
    if (rc < 0) {
        sk->state = REC_KERNEL_FAILED;
        snprintf(sk->message, sizeof(sk->message), "%s", why.msg);
        return 0; /* the recording goes on without kernel symbols; the summary says why */
    }
    if (rc == 0) {
        if (final)
            snprintf(sk->message, sizeof(sk->message),
                     "no VMCOREINFO in guest memory after %" PRIu64
                     " looks (a kernel without CONFIG_CRASH_CORE/CONFIG_VMCORE_INFO, one "
                     "that stopped before its initcalls, or not Linux)",
                     sk->attempts);
        return 0;
    }
    sk->state = REC_KERNEL_FOUND;
    sk->found_ns = now;
    sk->tasks_known = k->tasks_known;
    snprintf(sk->tasks, sizeof(sk->tasks), "%s", k->tasks);
    sk->stacks_orc = k->stacks_orc;
    snprintf(sk->stacks, sizeof(sk->stacks), "%s", k->stacks);
    sk->files_known = k->files_known;
    snprintf(sk->files, sizeof(sk->files), "%s", k->files);
    rc = write_kernel(env, k, now, err);
    char cut[64] = "";
    if (sk->symbols < k->nsyms)
        snprintf(cut, sizeof(cut), " (of %zu: the metadata budget)", k->nsyms);
    snprintf(sk->message, sizeof(sk->message),
             "Linux %s, KASLR offset 0x%" PRIx64 ", %zu code symbols in the recording%s; %s",
             k->release, k->kaslr_offset, sk->symbols, cut, k->how);
    return rc;
}

static int watch_panic(const struct rec_env *env, uint64_t now, bool final, struct hv_err *err)
{
    struct rec_kernel *sk = env->kernel;
    if (sk->state != REC_KERNEL_FOUND || sk->panic_seen)
        return 0;
    int cpu = guestos_panicked(env->os, env->mem);
    if (cpu < 0)
        return 0;
    sk->panic_seen = true;
    sk->panic_cpu = cpu;
    sk->panic_ns = now;
    struct fxt_arg arg = {
        .type = FXT_ARG_U32, .name = fxt_str_inline(HVFXT_ARG_CPU), .v.u32 = (uint32_t)cpu};
    if (hvfxt_write_marker(env->w, HVFXT_GUEST_PANIC, now, &arg, 1, err) < 0)
        return -1;
    /* Said even with --quiet: it is how the guest ended, or will (a guest stop). */
    bool tty = !env->cfg->quiet && isatty(STDERR_FILENO);
    fprintf(stderr,
            "%shvprof record: the guest kernel panicked on CPU %d, %.1f s into the recording\n",
            tty && !final ? "\n" : "", cpu, (double)(now - env->start_ns) / 1e9);
    /* The flight recorder's trigger: what led to it, now. At the end the file is that. */
    if (!final)
        rec_snapshot(env, "panic");
    return 0;
}

static int kernel_poll(void *st, const struct rec_env *env, enum rec_stage stage, uint64_t now,
                       bool final, struct hv_err *err)
{
    (void)st;
    if (!env->mem)
        return 0;
    /* The description: one bounded unit, a few looks a second at most. After the rings: a
     * flight recorder's panic snapshot holds the samples up to it. */
    return stage == REC_STAGE_GUEST ? discover(env, now, final, err)
                                    : watch_panic(env, now, final, err);
}

static void tasks_summary(const struct rec_env *env, FILE *out)
{
    const struct rec_kernel *sk = env->kernel;
    if (!sk->tasks_known) {
        fprintf(out,
                "  guest tasks: not read (%s): processes are address spaces, threads FS bases\n",
                sk->tasks);
        return;
    }
    uint64_t unknown = 0;
    for (unsigned i = 0; i < env->cfg->nvcpus; i++)
        unknown += env->core->v[i].st.task_unknown;
    fprintf(out,
            "  guest tasks: pid, tid and name of every stop from its task_struct (%s); %" PRIu64
            " stops could not be read and kept the address-space identity\n",
            sk->tasks, unknown);
}

static void stacks_summary(const struct rec_env *env, FILE *out)
{
    const struct rec_kernel *sk = env->kernel;
    if (!sk->stacks_orc) {
        fprintf(out, "  kernel stacks: frame pointers (%s)\n", sk->stacks);
        return;
    }
    struct sampler_totals t;
    rec_totals(env, &t);
    fprintf(out,
            "  kernel stacks: the kernel's %s; %" PRIu64 " of %" PRIu64
            " kernel samples reached the user entry frame, %" PRIu64
            " of them with the user stack walked from there at once%s\n",
            sk->stacks, t.user_entry, t.kernel, t.user_at_entry,
            env->cfg->defer_user_stacks ? " (--defer-user-stacks)" : "");
}

static void kernel_summary(const void *st, const struct rec_env *env, FILE *out)
{
    (void)st;
    const struct rec_kernel *sk = env->kernel;
    if (!env->os->ops->discover_kernel)
        return;
    switch (sk->state) {
    case REC_KERNEL_FOUND:
        fprintf(out, "  guest kernel: %s (found %.1f s into the recording, %.1f ms of scans)\n",
                sk->message, (double)(sk->found_ns - env->start_ns) / 1e9,
                (double)sk->scan_ns / 1e6);
        if (sk->panic_seen)
            fprintf(out, "  guest kernel: panicked on CPU %d, %.1f s into the recording\n",
                    sk->panic_cpu, (double)(sk->panic_ns - env->start_ns) / 1e9);
        tasks_summary(env, out);
        if (env->os->ops->user_page_file)
            fprintf(out, "  guest files: %s%s\n", sk->files_known ? "" : "not read: ", sk->files);
        stacks_summary(env, out);
        break;
    case REC_KERNEL_FAILED:
        fprintf(out,
                "  guest kernel: not described: %s; kernel frames need `report --vmlinux`, "
                "`--kallsyms` or `--system-map`\n",
                sk->message);
        break;
    case REC_KERNEL_SEARCHING:
        fprintf(out,
                "  guest kernel: not described: %s; kernel frames need `report --vmlinux`, "
                "`--kallsyms` or `--system-map`\n",
                sk->message[0] ? sk->message : "not found");
        break;
    }
}

const struct rec_source_ops rec_source_kernel = {
    .name = "kernel",
    .stages = REC_STAGE_BIT(REC_STAGE_GUEST) | REC_STAGE_BIT(REC_STAGE_DRAINED),
    .poll = kernel_poll,
    .summary = kernel_summary,
};
