/* Benchmark (not a test): what one sample costs inside the VMM, stage by stage, for user stacks
 * of 8, 32 and 128 frames, next to a walker that asks KVM to translate every frame address
 * (KVM_TRANSLATE, api.rst 4.12) — both on the same guest memory, in the same run.
 *
 *   bench_sample_cost [batches]     (default 201; scripts/bench.sh parses the output)
 *
 * The guest memory is guestwalk's synthetic image (guestwalk/tests/guest_image.c): 4-level page
 * tables, a code page and a user stack of 96-byte frames. The image's RAM is also registered
 * with a real KVM VM (two memory slots at the same guest-physical addresses), whose vCPU gets
 * the image's CR0/CR3/CR4/EFER, so KVM_TRANSLATE walks the very same page tables.
 *
 * Stages (what sampler/exit/exit.c does at a user-mode sample):
 *   regs_ioctl   KVM_GET_REGS + KVM_GET_SREGS (the sampler reads SYNC_REGS instead when the
 *                host has it; this is the fallback's price)
 *   translate    gw_walker_begin (empty translation cache) + one gw_translate per address
 *                the frame-pointer walk reads (the walk's translations alone)
 *   unwind       gw_walker_begin + gw_unwind, leaf repair off (translation included)
 *   unwind_leaf  the same with leaf repair on, RIP on an ordinary instruction (the common case:
 *                the bytes are checked, nothing is decoded)
 *   unwind_push  leaf repair on, RIP at `push rbp` (capstone decodes, the leaf is repaired)
 *   partial      encode a kernel-mode partial record (kernel stack of N frames, continuation)
 *   ring_push    fxt_ring_reserve + encode a user sample of N frames + fxt_ring_commit
 *   ring_pop     fxt_ring_peek + fxt_ring_release of that record (the drain side)
 *   kvm_walk     the same frame-pointer walk, each frame address translated by KVM_TRANSLATE
 *                (one ioctl per frame record) and read through the host mapping
 *   cgroup       the sample's control group: its css_set looked up in the group table
 *                (sampler/exit/group_table.h) among 200 in use, as each Linux sample does
 *                (the same at every depth: it is no walk)
 *
 * Output: one line per (depth, stage): "sample_cost depth=N stage=S median_ns=.. p10_ns=..
 * p90_ns=.. per=walk", each figure over `batches` batches (time of a batch / operations in it).
 * Stages are interleaved batch by batch, so host noise lands on all of them alike. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "schema/recording.h"
#include "guestwalk/tests/guest_image.h"
#include "guestwalk/unwind.h"
#include "sampler/exit/group_table.h"

#define CSS_SET(i) (0xffff888004000000ull + (uint64_t)(i)*0xc0) /* slab objects a css_set apart */

#define CODE_VA   0x400000ull
#define STACK_VA  0x7ffe00000000ull
#define STACK_LEN (1ull << 20)
#define FRAME_GAP 96 /* bytes per frame: a typical small C frame (as bench_guestwalk) */
#define NDEPTHS   3
#define PER_BATCH 100

static const unsigned depths[NDEPTHS] = {8, 32, 128};

enum stage {
    ST_REGS,
    ST_TRANSLATE,
    ST_UNWIND,
    ST_UNWIND_LEAF,
    ST_UNWIND_PUSH,
    ST_PARTIAL,
    ST_RING_PUSH,
    ST_RING_POP,
    ST_KVM_WALK,
    ST_CGROUP,
    ST_COUNT
};
static const char *const stage_names[ST_COUNT] = {
    "regs_ioctl", "translate", "unwind",   "unwind_leaf", "unwind_push",
    "partial",    "ring_push", "ring_pop", "kvm_walk",    "cgroup",
};

struct kvm_ctx {
    int kvm, vm, vcpu;
};

struct bench {
    struct gimg g;
    struct gw_walker w_plain, w_leaf; /* leaf repair off / on */
    uint64_t fp0[NDEPTHS];
    struct kvm_ctx k;
    struct fxt_ring ring;
    uint64_t pcs[GW_DEFAULT_MAX_DEPTH];
    uint64_t enc[FXT_MAX_RECORD_WORDS];
    struct group_table *groups; /* 200 css_sets in use */
    volatile uint64_t sink;
};

static int fail(const char *what)
{
    fprintf(stderr, "bench_sample_cost: %s: %s\n", what, errno ? strerror(errno) : "failed");
    return -1;
}

/* A VM whose two memory slots are the image's RAM, and a vCPU in 64-bit mode on its tables. */
static int kvm_setup(struct bench *b)
{
    struct kvm_ctx *k = &b->k;
    k->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (k->kvm < 0)
        return fail("open /dev/kvm");
    k->vm = ioctl(k->kvm, KVM_CREATE_VM, 0);
    if (k->vm < 0)
        return fail("KVM_CREATE_VM");
    struct kvm_userspace_memory_region r0 = {
        .slot = 0,
        .guest_phys_addr = GIMG_RAM0_GPA,
        .memory_size = GIMG_RAM0_SIZE,
        .userspace_addr = (uint64_t)(uintptr_t)b->g.ram0,
    };
    struct kvm_userspace_memory_region r1 = {
        .slot = 1,
        .guest_phys_addr = GIMG_RAM1_GPA,
        .memory_size = GIMG_RAM1_SIZE,
        .userspace_addr = (uint64_t)(uintptr_t)b->g.ram1,
    };
    if (ioctl(k->vm, KVM_SET_USER_MEMORY_REGION, &r0) < 0 ||
        ioctl(k->vm, KVM_SET_USER_MEMORY_REGION, &r1) < 0)
        return fail("KVM_SET_USER_MEMORY_REGION");
    k->vcpu = ioctl(k->vm, KVM_CREATE_VCPU, 0);
    if (k->vcpu < 0)
        return fail("KVM_CREATE_VCPU");
    struct kvm_sregs sr;
    if (ioctl(k->vcpu, KVM_GET_SREGS, &sr) < 0)
        return fail("KVM_GET_SREGS");
    struct gw_snapshot c = gimg_cpu(&b->g, 0, 0, 0, 3);
    sr.cr0 = c.cr0;
    sr.cr3 = c.cr3;
    sr.cr4 = c.cr4;
    sr.efer = c.efer;
    /* 64-bit code segment (SDM 3A 5.2.1: L=1, D=0); DPL 3 like a sampled user thread. */
    sr.cs = (struct kvm_segment){.base = 0,
                                 .limit = 0xffffffff,
                                 .selector = 0x23,
                                 .type = 11,
                                 .present = 1,
                                 .dpl = 3,
                                 .s = 1,
                                 .l = 1,
                                 .g = 1};
    struct kvm_segment data = {.base = 0,
                               .limit = 0xffffffff,
                               .selector = 0x1b,
                               .type = 3,
                               .present = 1,
                               .dpl = 3,
                               .s = 1,
                               .db = 1,
                               .g = 1};
    sr.ds = sr.es = sr.fs = sr.gs = sr.ss = data;
    if (ioctl(k->vcpu, KVM_SET_SREGS, &sr) < 0)
        return fail("KVM_SET_SREGS");
    return 0;
}

/* Translate one address with KVM: -1 if KVM refuses or the address does not map. */
static int kvm_translate(struct bench *b, uint64_t va, uint64_t *gpa)
{
    struct kvm_translation t = {.linear_address = va};
    if (ioctl(b->k.vcpu, KVM_TRANSLATE, &t) < 0 || !t.valid)
        return -1;
    *gpa = t.physical_address;
    return 0;
}

/* A frame-pointer walk that translates each frame record's address with KVM_TRANSLATE: what a
 * VMM without its own page-table walker would do. Same bounds as the real walk (upward frames,
 * chain end at fp 0). Returns frames (pc[0] = rip). */
static unsigned kvm_walk(struct bench *b, uint64_t rip, uint64_t fp, unsigned max)
{
    unsigned n = 0;
    b->pcs[n++] = rip;
    while (fp && n < max) {
        uint64_t gpa;
        if ((fp & 7) || kvm_translate(b, fp, &gpa) < 0)
            break;
        const uint64_t *rec = gmem_ptr(&b->g.mem, gpa, 16);
        if (!rec)
            break;
        uint64_t next = rec[0], ret = rec[1];
        if (!ret)
            break;
        b->pcs[n++] = ret;
        if (next && next <= fp)
            break;
        fp = next;
    }
    return n;
}

static int build(struct bench *b)
{
    struct gimg *g = &b->g;
    if (gimg_init(g, false) != 0 || gimg_map_fresh(g, CODE_VA, 4096, GIMG_P | GIMG_US) != 0 ||
        gimg_map_fresh(g, STACK_VA, STACK_LEN, GIMG_USER_RW | GIMG_XD) != 0)
        return fail("guest image");
    /* Code: `mov eax,[rbx]` bytes (an ordinary instruction: checked, never decoded) and one
     * `push rbp` at 0x800 (the entry case of leaf repair: decoded and repaired). */
    static uint8_t code[4096];
    for (unsigned i = 0; i + 2 < sizeof(code); i += 2) {
        code[i] = 0x8b;
        code[i + 1] = 0x03;
    }
    code[0x800] = 0x55;
    if (gimg_write(g, CODE_VA, code, sizeof(code)) != 0)
        return fail("code page");
    static uint64_t ret[GW_DEFAULT_MAX_DEPTH];
    for (unsigned i = 0; i < GW_DEFAULT_MAX_DEPTH; i++)
        ret[i] = CODE_VA + 0x40 + 2 * i;
    for (unsigned d = 0; d < NDEPTHS; d++) {
        /* depth N = pc[0] + N-1 return addresses; each chain in its own 256 KiB region */
        b->fp0[d] = STACK_VA + d * (256u << 10) + 0x200;
        if (gimg_write_chain(g, b->fp0[d], depths[d] - 1, FRAME_GAP, ret) != 0)
            return fail("frame chain");
        /* [rsp] of the push-rbp case: a return address into the code page */
        if (gimg_write_u64(g, b->fp0[d] - 0x40, CODE_VA + 0x20) != 0)
            return fail("leaf return address");
    }
    struct gw_config plain = {.max_depth = GW_DEFAULT_MAX_DEPTH, .no_leaf_repair = true};
    struct gw_config leaf = {.max_depth = GW_DEFAULT_MAX_DEPTH};
    if (gw_walker_init(&b->w_plain, &g->mem, &plain, NULL) != 0 ||
        gw_walker_init(&b->w_leaf, &g->mem, &leaf, NULL) != 0)
        return fail("gw_walker_init");
    if (hvfxt_vcpu_ring_init(&b->ring, 1u << 16, 0, NULL) != 0)
        return fail("fxt_ring_init");
    if (!(b->groups = calloc(1, sizeof(*b->groups))))
        return fail("the group table");
    for (unsigned i = 0; i < 200; i++)
        if (!group_table_number(b->groups, CSS_SET(i), 1))
            return fail("the group table's 200 css_sets");
    return kvm_setup(b);
}

static struct gw_snapshot cpu_for(struct bench *b, unsigned d, bool at_push)
{
    uint64_t fp0 = b->fp0[d];
    return gimg_cpu(&b->g, CODE_VA + (at_push ? 0x800 : 0x10), fp0 - 0x40, fp0, 3);
}

static unsigned walk(struct gw_walker *w, const struct gw_snapshot *c, uint64_t *pcs)
{
    struct gw_stack st = GW_STACK_INIT(pcs, GW_DEFAULT_MAX_DEPTH);
    gw_walker_begin(w, c);
    gw_unwind(w, &st);
    return st.stop == GW_STOP_CHAIN_END || st.stop == GW_STOP_DEPTH_CAP ? st.count : 0;
}

static struct hvfxt_sample user_sample(struct bench *b, unsigned n, uint64_t ts)
{
    return (struct hvfxt_sample){
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_PC | HVFXT_SF_WALK | HVFXT_SF_USER_STACK,
        .pid = hvfxt_koid_guest_process(1),
        .tid = hvfxt_koid_guest_thread(1),
        .ts = ts,
        .cpl = 3,
        .pc = b->pcs[0],
        .user_stack = b->pcs,
        .n_user = n,
        .walk = hvfxt_walk_word(HVFXT_STOP_NONE, HVFXT_STOP_END, 0, 0),
    };
}

/* One batch of PER_BATCH operations of `st` at depth index d; returns ns per operation. */
static double run_batch(struct bench *b, enum stage st, unsigned d)
{
    unsigned n = depths[d];
    struct gw_snapshot c = cpu_for(b, d, st == ST_UNWIND_PUSH);
    uint64_t sink = 0;
    uint64_t t0 = 0, t1 = 0;
    switch (st) {
    case ST_REGS: {
        struct kvm_regs r;
        struct kvm_sregs sr;
        t0 = now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            if (ioctl(b->k.vcpu, KVM_GET_REGS, &r) < 0 || ioctl(b->k.vcpu, KVM_GET_SREGS, &sr) < 0)
                return -1;
            sink += r.rip + sr.cr3;
        }
        t1 = now_ns();
        break;
    }
    case ST_TRANSLATE: {
        /* the addresses the walk reads: each frame record (fp, fp+8 share a page) */
        t0 = now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            gw_walker_begin(&b->w_plain, &c);
            uint64_t fp = b->fp0[d], gpa;
            for (unsigned f = 1; f < n; f++, fp += FRAME_GAP) {
                if (gw_translate(&b->w_plain, fp, true, &gpa, NULL) != 0)
                    return -1;
                sink += gpa;
            }
        }
        t1 = now_ns();
        break;
    }
    case ST_UNWIND:
    case ST_UNWIND_LEAF:
    case ST_UNWIND_PUSH: {
        struct gw_walker *w = st == ST_UNWIND ? &b->w_plain : &b->w_leaf;
        unsigned want = st == ST_UNWIND_PUSH ? n + 1 : n; /* + the repaired caller */
        if (want > GW_DEFAULT_MAX_DEPTH)
            want = GW_DEFAULT_MAX_DEPTH;
        t0 = now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            unsigned got = walk(w, &c, b->pcs);
            if (got != want)
                return -1;
            sink += got;
        }
        t1 = now_ns();
        break;
    }
    case ST_PARTIAL: {
        struct hvfxt_sample p = {
            .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU |
                      HVFXT_SF_CPL | HVFXT_SF_PC | HVFXT_SF_WALK | HVFXT_SF_KERNEL_STACK |
                      HVFXT_SF_CONTINUATION,
            .continuation = 42,
            .pid = hvfxt_koid_guest_process(1),
            .tid = hvfxt_koid_guest_thread(1),
            .pc = 0xffffffff80101000ull,
            .kernel_stack = b->pcs,
            .n_kernel = n,
            .walk = hvfxt_walk_word(HVFXT_STOP_END, HVFXT_STOP_DEFERRED, 0, 0),
        };
        t0 = now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            p.ts = t0 + (uint64_t)i;
            size_t w = hvfxt_enc_sample(b->enc, FXT_MAX_RECORD_WORDS, &p);
            sink += w + b->enc[w - 1];
        }
        t1 = now_ns();
        break;
    }
    case ST_RING_PUSH:
    case ST_RING_POP: {
        /* push a batch (timed for ring_push), then pop it (timed for ring_pop) */
        struct hvfxt_sample s = user_sample(b, n, 1);
        size_t words = hvfxt_sample_words(&s);
        uint64_t a = now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            s.ts = a + (uint64_t)i;
            uint64_t *slot = fxt_ring_reserve(&b->ring, (uint32_t)words, s.ts);
            if (!slot)
                return -1;
            fxt_ring_commit(&b->ring, (uint32_t)hvfxt_enc_sample(slot, words, &s));
        }
        uint64_t m = now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            uint32_t nw = 0;
            const uint64_t *rec = fxt_ring_peek(&b->ring, &nw);
            if (!rec)
                return -1;
            sink += rec[0];
            fxt_ring_release(&b->ring, nw);
        }
        uint64_t e = now_ns();
        t0 = st == ST_RING_PUSH ? a : m;
        t1 = st == ST_RING_PUSH ? m : e;
        break;
    }
    case ST_CGROUP:
        t0 = now_ns();
        for (int i = 0; i < PER_BATCH; i++)
            sink += group_table_number(b->groups, CSS_SET(i % 200), t0);
        t1 = now_ns();
        break;
    case ST_KVM_WALK:
        t0 = now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            unsigned got = kvm_walk(b, c.rip, c.rbp, GW_DEFAULT_MAX_DEPTH);
            if (got != n)
                return -1;
            sink += got;
        }
        t1 = now_ns();
        break;
    default:
        return -1;
    }
    b->sink += sink;
    return (double)(t1 - t0) / PER_BATCH;
}

int main(int argc, char **argv)
{
    unsigned batches = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 201;
    if (batches < 3 || batches > 100000) {
        fprintf(stderr, "usage: bench_sample_cost [batches 3..100000]\n");
        return 2;
    }
    static struct bench b;
    if (build(&b) != 0)
        return 1;
    /* KVM_TRANSLATE must agree with hvprof's own walker before anything is timed. */
    for (unsigned d = 0; d < NDEPTHS; d++) {
        uint64_t gk, gh = 0;
        struct gw_snapshot c = cpu_for(&b, d, false);
        gw_walker_begin(&b.w_plain, &c);
        if (kvm_translate(&b, b.fp0[d], &gk) != 0 ||
            gw_translate(&b.w_plain, b.fp0[d], true, &gh, NULL) != 0 || gk != gh) {
            struct kvm_translation t = {.linear_address = b.fp0[d]};
            int r = ioctl(b.k.vcpu, KVM_TRANSLATE, &t);
            fprintf(stderr,
                    "bench_sample_cost: KVM_TRANSLATE disagrees with gw_translate at "
                    "0x%llx (ioctl %d errno %d valid %u gpa 0x%llx; walker 0x%llx)\n",
                    (unsigned long long)b.fp0[d], r, r < 0 ? errno : 0, t.valid,
                    (unsigned long long)t.physical_address, (unsigned long long)gh);
            return 1;
        }
    }
    static double v[NDEPTHS][ST_COUNT][100000];
    for (unsigned i = 0; i < batches; i++) {
        for (unsigned d = 0; d < NDEPTHS; d++) {
            for (int s = 0; s < ST_COUNT; s++) {
                double ns = run_batch(&b, (enum stage)s, d);
                if (ns < 0) {
                    fprintf(stderr, "bench_sample_cost: stage %s at depth %u failed\n",
                            stage_names[s], depths[d]);
                    return 1;
                }
                v[d][s][i] = ns;
            }
        }
    }
    for (unsigned d = 0; d < NDEPTHS; d++) {
        for (int s = 0; s < ST_COUNT; s++) {
            double *x = v[d][s];
            qsort(x, batches, sizeof(double), cmp_double);
            printf("sample_cost depth=%u stage=%s median_ns=%.1f p10_ns=%.1f p90_ns=%.1f "
                   "batches=%u per_batch=%d\n",
                   depths[d], stage_names[s], x[batches / 2], x[batches / 10],
                   x[batches - 1 - batches / 10], batches, PER_BATCH);
        }
    }
    gw_walker_fini(&b.w_plain);
    gw_walker_fini(&b.w_leaf);
    fxt_ring_destroy(&b.ring);
    gimg_free(&b.g);
    close(b.k.vcpu);
    close(b.k.vm);
    close(b.k.kvm);
    return b.sink == 42 ? 3 : 0;
}
