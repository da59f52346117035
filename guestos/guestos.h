/* What hvprof knows about the guest's operating system, behind one interface (as Linux perf
 * gives each guest a `struct machine`). Two kinds of call:
 *
 *   exit path (the vCPU's thread, guest stopped): bounded, no allocation, no locks, no system
 *   calls. identify() says which address space and thread a vCPU snapshot belongs to;
 *   unwind_user()/unwind_kernel() walk one stack through the OS's unwinders.
 *
 *   drain thread (guest running, memory may change under us): discover_modules() finds the
 *   ELF images of an address space; discover_kernel() finds the guest kernel's description of
 *   itself (release, build-id, KASLR offset, symbols). Everything read is bounded and validated.
 *
 * guestos/generic/ is the OS-agnostic behaviour (CR3 and FS base identity, ELF images found
 * in guest memory, frame pointers); an OS-specific layer (guestos/linux/) adds what a known
 * kernel's memory tells (kernel symbols, tasks, ORC) beside it.
 *
 *   struct guestos os;
 *   guestos_open(&os, "linux", &err);                // once, before the vCPUs start
 *   struct guestos_vcpu vc; guestos_vcpu_init(&os, &vc);   // one per vCPU thread
 *   ...exit: guestos_identify(&os, &vc, mem, &snap, &id); guestos_unwind_kernel(&os, w, &st);
 *   ...drain: guestos_discover_kernel(&os, mem, &kernel, &err);
 *             guestos_discover_modules(&os, mem, &as, mods, max);
 *   guestos_close(&os);
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "guestos/module.h"
#include "guestwalk/gmem.h"
#include "guestwalk/pti.h"
#include "guestwalk/snapshot.h"
#include "guestwalk/unwinder.h"
#include "guestwalk/walker.h"

/* Per-vCPU state of the OS layer, used only by that vCPU's thread. */
struct guestos_vcpu {
    struct pti_cache pti; /* Linux PTI pairs this vCPU has seen (guestwalk/pti.h) */
};

/* Who a snapshot belongs to. */
struct guestos_ident {
    uint64_t as_root;    /* the address space: its canonical page-table root (one per process) */
    uint64_t thread_key; /* the thread within it (generic: the FS base) */
};

/* An address space to examine on the drain thread: its root and the paging mode it ran with. */
struct guestos_as {
    uint64_t cr0, root, cr4, efer;
};

/* A code symbol of the guest kernel at its run-time address; type 0 with an empty name marks
 * the end of the code before it. */
struct guestos_symbol {
    uint64_t addr;
    const char *name;
    uint16_t name_len;
    char type; /* nm letter: T, t, W, w */
};

/* The guest kernel as its memory describes it (discover_kernel). Owned by the OS layer, valid
 * until guestos_close(). */
struct guestos_kernel {
    char release[65]; /* "6.1.0-27-amd64" */
    uint8_t build_id[20];
    uint32_t build_id_len;
    uint64_t kaslr_offset;         /* run-time - link-time address of the image */
    uint64_t text_start, text_end; /* run-time extent of the code symbols */
    const struct guestos_symbol *syms;
    size_t nsyms;
    char how[384]; /* where it was found and how it was decoded, for the summary */
};

struct guestos;

struct guestos_ops {
    const char *name;
    /* Exit path. May complete the snapshot for the walks that follow (kernel_cr3). */
    void (*identify)(const struct guestos *os, struct guestos_vcpu *vc, const struct gmem *mem,
                     struct gw_snapshot *snap, struct guestos_ident *out);
    /* Drain thread, optional (NULL: the layer cannot describe the kernel). 1: *out describes
     * the kernel (from now on; later calls return 0); 0: not (yet) found; -1: this kernel cannot
     * be described (err says why; later calls return -1 again). */
    int (*discover_kernel)(struct guestos *os, const struct gmem *mem,
                           const struct guestos_kernel **out, struct hv_err *err);
    /* Drain thread. Returns the number of modules written to out (<= max). */
    size_t (*discover_modules)(const struct guestos *os, const struct gmem *mem,
                               const struct guestos_as *as, struct discover_module *out,
                               size_t max);
    void (*close)(struct guestos *os); /* optional: frees priv */
};

struct guestos {
    const struct guestos_ops *ops;
    const struct gw_unwinder *user_unwinder, *kernel_unwinder;
    void *priv; /* the layer's own state (guestos/linux/: struct lx_layer) */
};

/* The names guestos_open() knows, for help texts: "generic, linux". */
#define GUESTOS_NAMES "generic, linux"

/* The OS layer by name ("generic", "linux"). Fails with the list of known names. */
int guestos_open(struct guestos *os, const char *name, struct hv_err *err);
void guestos_close(struct guestos *os);

static inline int guestos_discover_kernel(struct guestos *os, const struct gmem *mem,
                                          const struct guestos_kernel **out, struct hv_err *err)
{
    return os->ops->discover_kernel ? os->ops->discover_kernel(os, mem, out, err) : 0;
}

static inline void guestos_vcpu_init(const struct guestos *os, struct guestos_vcpu *vc)
{
    (void)os;
    pti_cache_init(&vc->pti);
}

static inline void guestos_identify(const struct guestos *os, struct guestos_vcpu *vc,
                                    const struct gmem *mem, struct gw_snapshot *snap,
                                    struct guestos_ident *out)
{
    os->ops->identify(os, vc, mem, snap, out);
}

/* Walk the stack of the walker's current stop with the user / kernel unwinder. */
static inline unsigned guestos_unwind(const struct guestos *os, struct gw_walker *w,
                                      struct gw_stack *st)
{
    struct gw_regs r = gw_regs_of(&w->snap);
    const struct gw_unwinder *u = r.user ? os->user_unwinder : os->kernel_unwinder;
    return gw_unwinder_run(u, w, &r, st);
}

static inline size_t guestos_discover_modules(const struct guestos *os, const struct gmem *mem,
                                              const struct guestos_as *as,
                                              struct discover_module *out, size_t max)
{
    return os->ops->discover_modules(os, mem, as, out, max);
}
