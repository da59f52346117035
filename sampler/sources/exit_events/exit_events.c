/* Exit events (docs/exits.md): the VM's exit sites named once in the recording, as the symbols
 * of the module HVFXT_EXIT_MODULE over the frames a report roots the exits' stacks at
 * (hvfxt_exit_frame); and the summary's account of what was recorded against the VMM's own
 * count of the exits it handled. The records themselves are the exit core's
 * (exit_vcpu_exited). The recorder source "exit-events", with `record --events exits`. */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/exit/core.h"
#include "sampler/parts/module_registry.h"
#include "sampler/source/source.h"
#include "schema/recording.h"
#include "vmm/vm.h"
#include "vmm/exit_sites.h"

#define SITES_MAX 4096

static int by_addr(const void *a, const void *b)
{
    const struct hvfxt_symbol *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool exit_events_wanted(const struct sampler_config *cfg)
{
    return cfg->exit_events;
}

/* The sites' names, once, at the recording's start. */
static int exit_events_begin(void *st, const struct rec_env *env, struct hv_err *err)
{
    (void)st;
    if (!env->vm)
        return 0;
    uint32_t *sites = calloc(SITES_MAX, sizeof(*sites));
    struct hvfxt_symbol *syms = calloc(SITES_MAX + 1, sizeof(*syms));
    char *names = calloc(SITES_MAX, 64);
    int rc = -1;
    if (!sites || !syms || !names) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    size_t n = vm_exit_sites(env->vm, sites, SITES_MAX);
    if (n > SITES_MAX)
        n = SITES_MAX;
    for (size_t i = 0; i < n; i++) {
        char *name = names + i * 64, what[56];
        vm_exit_site_name(env->vm, sites[i], what, sizeof(what));
        /* A symbol has no spaces (schema/encode.c): "[exit:pio-out:post:0x80]". */
        for (char *c = what; *c; c++)
            if (*c == ' ')
                *c = ':';
        int len = snprintf(name, 64, "[exit:%s]", what);
        syms[i] = (struct hvfxt_symbol){.addr = hvfxt_exit_frame(sites[i]),
                                        .type = 'T',
                                        .name = name,
                                        .name_len = (uint16_t)(len < 63 ? len : 63)};
    }
    qsort(syms, n, sizeof(*syms), by_addr);
    uint64_t end = HVFXT_EXIT_FRAME_BASE + HVFXT_EXIT_FRAME_SIZE;
    struct discover_module m = {
        .header_va = HVFXT_EXIT_FRAME_BASE,
        .start = HVFXT_EXIT_FRAME_BASE,
        .end = end,
        .e_type = ET_EXEC,
        .nseg = 1,
        .seg = {{.start = HVFXT_EXIT_FRAME_BASE, .size = HVFXT_EXIT_FRAME_SIZE, .flags = PF_R}},
    };
    snprintf(m.name, sizeof(m.name), "%s", HVFXT_EXIT_MODULE);
    int64_t id = discover_record_module(env->w, env->modules, hvfxt_koid_guest_process(0), &m,
                                        env->start_ns, err);
    if (id == -1)
        goto out;
    rc = 0;
    if (id < 0)
        goto out; /* no room in the metadata budget: counted there */
    /* Each name spans its 4 bytes only: an end marker after it unless the next site follows. */
    struct hvfxt_symbol *all = calloc(2 * n + 1, sizeof(*all));
    if (!all) {
        rc = hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        all[k++] = syms[i];
        if (i + 1 == n || syms[i + 1].addr != syms[i].addr + 4)
            all[k++] = (struct hvfxt_symbol){.addr = syms[i].addr + 4, .name = ""};
    }
    rc = hvfxt_write_symbols(env->w, (uint64_t)id, all, k, err);
    free(all);
out:
    free(sites);
    free(syms);
    free(names);
    return rc;
}

static void exit_events_summary(const void *st, const struct rec_env *env, FILE *out)
{
    (void)st;
    const struct exit_core *core = env->core;
    uint64_t events = 0, stacks = 0, ns = 0;
    uint64_t vmm[VM_EXIT_KINDS] = {0};
    for (unsigned i = 0; i < env->cfg->nvcpus; i++) {
        events += core->v[i].st.exit_events;
        stacks += core->v[i].st.exit_stacks;
        ns += core->v[i].st.t_exit_events;
        for (unsigned k = 0; k < VM_EXIT_KINDS; k++)
            vmm[k] += core->v[i].st.vmm_exits[k];
    }
    char every[96] = "each exit";
    if (core->cfg.exit_every > 1)
        snprintf(every, sizeof(every), "every %uth of a vCPU's exits", core->cfg.exit_every);
    else if (!core->cfg.exit_every && stacks < events)
        snprintf(every, sizeof(every),
                 "while their walks took at most 5%% of the vCPU's time; "
                 "--exit-stacks-every 1 for all");
    fprintf(out,
            "  exit events: %" PRIu64 " recorded, %" PRIu64 " with the guest's stacks (%s), "
            "%.2f us of hvprof's time each; the VMM handled %" PRIu64 " pio in, %" PRIu64
            " pio out, %" PRIu64 " mmio read, %" PRIu64 " mmio write, %" PRIu64
            " hlt (report --exits)\n",
            events, stacks, every, events ? (double)ns / (double)events / 1000.0 : 0.0,
            vmm[VM_EXIT_PIO_IN], vmm[VM_EXIT_PIO_OUT], vmm[VM_EXIT_MMIO_READ],
            vmm[VM_EXIT_MMIO_WRITE], vmm[VM_EXIT_HLT]);
}

const struct rec_source_ops rec_source_exit_events = {
    .name = "exit-events",
    .wanted = exit_events_wanted,
    .begin = exit_events_begin,
    .summary = exit_events_summary,
};
