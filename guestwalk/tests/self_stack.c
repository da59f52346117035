#include "self_stack.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#define COPY_MAX (512u << 10)

struct ref_ctx {
    struct self_stack *s;
};

static _Unwind_Reason_Code on_frame(struct _Unwind_Context *ctx, void *arg)
{
    struct self_stack *s = arg;
    if (s->nref >= SELF_MAX_FRAMES)
        return _URC_END_OF_STACK;
    s->ref[s->nref++] = (uint64_t)_Unwind_GetIP(ctx);
    return _URC_NO_REASON;
}

/* A copy of live stack memory, redzones of other frames included: no sanitizer may look at it
 * (ASan's memcpy would report the redzones). */
__attribute__((no_sanitize("address"), noinline)) static void copy_stack(uint8_t *dst, uint64_t src,
                                                                         uint64_t n)
{
    const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
    for (uint64_t i = 0; i < n; i++)
        dst[i] = p[i];
}

__attribute__((noinline)) void self_stack_capture(struct self_stack *s)
{
    uint64_t rip, rsp, rbp;
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                     : "=r"(rip), "=r"(rsp), "=r"(rbp));
    s->rip = rip;
    s->rsp = rsp;
    s->rbp = rbp;
    /* The stack's top: this thread's stack mapping. */
    pthread_attr_t a;
    void *lo = NULL;
    size_t size = 0;
    uint64_t top = rsp + COPY_MAX;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &lo, &size);
        pthread_attr_destroy(&a);
        top = (uint64_t)(uintptr_t)lo + size;
    }
    if (top - rsp > COPY_MAX)
        top = rsp + COPY_MAX;
    s->copy_len = top - rsp;
    s->copy = malloc(s->copy_len);
    if (s->copy)
        copy_stack(s->copy, rsp, s->copy_len);
    s->nref = 0;
    _Unwind_Backtrace(on_frame, s);
    __asm__ volatile("" ::: "memory");
}

void self_stack_free(struct self_stack *s)
{
    free(s->copy);
    s->copy = NULL;
}

int self_stack_map(const struct self_stack *s, struct gimg *g)
{
    if (!s->copy)
        return -1;
    uint64_t lo = s->rsp & ~0xfffull, hi = (s->rsp + s->copy_len + 0xfff) & ~0xfffull;
    if (gimg_map_fresh(g, lo, hi - lo, GIMG_USER_RW | GIMG_XD) != 0)
        return -1;
    return gimg_write(g, s->rsp, s->copy, s->copy_len);
}

struct build {
    struct gw_cfi_module *m;
    size_t n, cap;
    bool failed;
};

static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct build *b = arg;
    const ElfW(Phdr) *eh = NULL, *seg = NULL;
    uint64_t lo = UINT64_MAX, hi = 0, xlo = UINT64_MAX, xhi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_GNU_EH_FRAME)
            eh = p;
        if (p->p_type != PT_LOAD)
            continue;
        lo = p->p_vaddr < lo ? p->p_vaddr : lo;
        hi = p->p_vaddr + p->p_memsz > hi ? p->p_vaddr + p->p_memsz : hi;
        if (p->p_flags & PF_X) {
            xlo = p->p_vaddr < xlo ? p->p_vaddr : xlo;
            xhi = p->p_vaddr + p->p_memsz > xhi ? p->p_vaddr + p->p_memsz : xhi;
        }
    }
    if (!eh || xlo >= xhi)
        return 0; /* the vDSO has a header too; objects without one are left to frame pointers */
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && eh->p_vaddr >= p->p_vaddr &&
            eh->p_vaddr < p->p_vaddr + p->p_memsz)
            seg = p;
    }
    if (!seg)
        return 0;
    struct cfi_table *t = calloc(1, sizeof(*t));
    struct cfi_src src = {
        .image_base = lo & ~0xfffull,
        .vaddr = seg->p_vaddr,
        .data = (const uint8_t *)(uintptr_t)(info->dlpi_addr + seg->p_vaddr),
        .len = seg->p_memsz,
    };
    if (!t || cfi_compile(&src, eh->p_vaddr, 0, t, NULL) != 0) {
        free(t);
        b->failed = true;
        return 1;
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->m = realloc(b->m, b->cap * sizeof(*b->m));
        if (!b->m) {
            b->failed = true;
            return 1;
        }
    }
    b->m[b->n++] =
        (struct gw_cfi_module){info->dlpi_addr + xlo, info->dlpi_addr + xhi, info->dlpi_addr, t};
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const struct gw_cfi_module *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct gw_cfi_map *self_cfi_map(void)
{
    struct build b = {0};
    dl_iterate_phdr(on_object, &b);
    struct gw_cfi_map *map = b.failed ? NULL : malloc(sizeof(*map) + b.n * sizeof(map->m[0]));
    if (map) {
        map->n = b.n;
        memcpy(map->m, b.m, b.n * sizeof(map->m[0]));
        qsort(map->m, map->n, sizeof(map->m[0]), by_lo);
    } else {
        for (size_t i = 0; i < b.n; i++) {
            cfi_table_free((struct cfi_table *)b.m[i].t);
            free((void *)b.m[i].t);
        }
    }
    free(b.m);
    return map;
}

void self_cfi_map_free(struct gw_cfi_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        cfi_table_free((struct cfi_table *)m->m[i].t);
        free((void *)m->m[i].t);
    }
    free(m);
}
