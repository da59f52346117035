#include "guestwalk/unwind.h"
#include "guestwalk/frameless.h"
#include "guestwalk/unwinder.h"

#include <string.h>

#define CODE_WINDOW 20 /* endbr64 (4) + the longest instruction (15), rounded up */

struct walk {
    struct gw_walker *w;
    struct gw_stack *st;
    unsigned cap;
    bool user;
    unsigned access;
};

static bool in_half(uint64_t va, bool user)
{
    return user ? (va >> 63) == 0 : (va >> 63) == 1;
}

static void stop(struct walk *k, enum gw_stop why)
{
    k->st->stop = why;
}

static void stop_bad(struct walk *k, enum gw_bad_frame bad, uint64_t value)
{
    k->st->stop = GW_STOP_INVALID_FRAME;
    k->st->bad = bad;
    k->st->bad_value = value;
}

int gw_stack_read_u64(struct gw_walker *w, uint64_t va, bool user, uint64_t *v, struct pt_fault *f)
{
    size_t avail;
    const uint8_t *p = gw_tlb_map(&w->tlb, &w->mmu, w->mem, va,
                                  user ? PT_ACC_USER : PT_ACC_SUPERVISOR, &avail, NULL, f);
    if (!p)
        return -1;
    if (avail >= 8) {
        memcpy(v, p, 8);
        return 0;
    }
    return gw_read_virt(w, va, v, 8, user, f);
}

/* One 8-byte stack read. The fast path is a cache hit on an aligned word inside one page. */
static int read_u64(struct walk *k, uint64_t va, uint64_t *v, struct pt_fault *f)
{
    return gw_stack_read_u64(k->w, va, k->user, v, f);
}

/* Read a frame record {saved rbp, return address}: one cache lookup when it lies in one page
 * (fp is 8-aligned, so only fp % 4096 == 4088 splits it). */
static int read_record(struct walk *k, uint64_t fp, uint64_t *next, uint64_t *ret,
                       struct pt_fault *f)
{
    size_t avail;
    const uint8_t *p =
        gw_tlb_map(&k->w->tlb, &k->w->mmu, k->w->mem, fp, k->access, &avail, NULL, f);
    if (!p)
        return -1;
    if (avail >= 16) {
        memcpy(next, p, 8);
        memcpy(ret, p + 8, 8);
        return 0;
    }
    if (avail >= 8)
        memcpy(next, p, 8);
    else if (gw_read_virt(k->w, fp, next, 8, k->user, f) != 0)
        return -1;
    return read_u64(k, fp + 8, ret, f);
}

/* Is `v` acceptable as a return address of this walk? Sets the stop reason if not. */
static bool valid_return(struct walk *k, uint64_t v)
{
    if (!pt_canonical(&k->w->mmu, v)) {
        stop_bad(k, GW_BAD_NON_CANONICAL, v);
        return false;
    }
    if (!in_half(v, k->user)) {
        stop_bad(k, GW_BAD_WRONG_HALF, v);
        return false;
    }
    return true;
}

/* Read the code at RIP (as much of CODE_WINDOW as is mapped) and the byte before it. */
static enum gw_leaf classify_leaf(struct walk *k, uint64_t rip, uint8_t code[CODE_WINDOW],
                                  size_t *code_len)
{
    size_t len = 0, avail;
    *code_len = 0;
    struct pt_fault f;
    const uint8_t *p =
        gw_tlb_map(&k->w->tlb, &k->w->mmu, k->w->mem, rip, k->access, &avail, NULL, &f);
    if (!p)
        return GW_LEAF_NONE;
    len = avail < CODE_WINDOW ? avail : CODE_WINDOW;
    memcpy(code, p, len);
    if (len < CODE_WINDOW && rip + len > rip) {
        /* The window crosses into the next page; use it only if it is mapped. */
        const uint8_t *q =
            gw_tlb_map(&k->w->tlb, &k->w->mmu, k->w->mem, rip + len, k->access, &avail, NULL, &f);
        if (q) {
            size_t more = CODE_WINDOW - len;
            more = avail < more ? avail : more;
            memcpy(code + len, q, more);
            len += more;
        }
    }
    *code_len = len;
    uint8_t prev_byte;
    int prev = -1;
    if (rip > 0 && gw_read_virt(k->w, rip - 1, &prev_byte, 1, k->user, &f) == 0)
        prev = prev_byte;
    return gw_leaf_classify(&k->w->dec, code, len, rip, prev);
}

/* Guest code for the frameless scan: what is mapped of [va, va + len), through the walk's
 * translation (user access for a user walk). */
static size_t fetch_code(void *ctx, uint64_t va, uint8_t *dst, size_t len)
{
    struct walk *k = ctx;
    size_t got = 0;
    while (got < len) {
        size_t avail;
        struct pt_fault f;
        const uint8_t *p =
            gw_tlb_map(&k->w->tlb, &k->w->mmu, k->w->mem, va + got, k->access, &avail, NULL, &f);
        if (!p)
            break;
        size_t n = avail < len - got ? avail : len - got;
        memcpy(dst + got, p, n);
        got += n;
        if (va + got < va)
            break;
    }
    return got;
}

/* Is `ret` a plausible return address of this walk: canonical, in its half, right after a call
 * instruction? */
static bool plausible_return(struct walk *k, uint64_t ret)
{
    if (ret < 8 || !pt_canonical(&k->w->mmu, ret) || !in_half(ret, k->user))
        return false;
    uint8_t before[8];
    return fetch_code(k, ret - sizeof(before), before, sizeof(before)) == sizeof(before) &&
           gw_after_call(before, sizeof(before));
}

/* Leaf repair: if the interrupted function has not linked (or has already unlinked) its frame,
 * or has none, its return address is on the stack at RSP (+ what it pushed) and RBP is still the
 * caller's. Returns the lowest address the first frame record may occupy. A repair whose return
 * address cannot be read or is implausible is dropped: the walk then proceeds as if no case had
 * matched. */
static uint64_t repair_leaf(struct walk *k, const struct gw_regs *r)
{
    uint8_t code[CODE_WINDOW];
    size_t code_len;
    enum gw_leaf c = classify_leaf(k, r->rip, code, &code_len);
    uint64_t offset = gw_leaf_ret_offset(c);
    if (c == GW_LEAF_NONE) {
        /* User walks only: a scan costs ~9 us at its budget (capstone, ~140 ns an instruction)
         * and kernel samples land on many distinct PCs; a Linux kernel has no frame pointers
         * for the walk above the leaf anyway (ORC is its unwinder). */
        if (!k->user || code_len < 16)
            return r->rsp; /* too little code mapped at the PC to tell */
        struct gw_shape_cache *sc = &k->w->shapes;
        uint64_t root = k->w->snap.cr3 & 0x000ffffffffff000ull;
        enum gw_frame_shape shape;
        uint32_t depth = 0;
        if (!gw_shape_cache_get(sc, root, r->rip, code, &shape, &depth)) {
            shape = gw_frameless_scan(&k->w->dec, fetch_code, k, r->rip, &depth);
            gw_shape_cache_put(sc, root, r->rip, code, shape, depth);
            sc->scans++;
        } else {
            sc->hits++;
        }
        if (shape != GW_SHAPE_FRAMELESS)
            return r->rsp;
        c = GW_LEAF_FRAMELESS;
        offset = depth;
    }
    uint64_t slot = r->rsp + offset, ret;
    struct pt_fault f;
    if (slot < r->rsp || (slot & 7) || read_u64(k, slot, &ret, &f) != 0 || ret == 0 ||
        !pt_canonical(&k->w->mmu, ret) || !in_half(ret, k->user))
        return r->rsp;
    /* The scan is a heuristic: its answer must land on a return address. */
    if (c == GW_LEAF_FRAMELESS && !plausible_return(k, ret))
        return r->rsp;
    k->st->pc[k->st->count++] = ret;
    k->st->leaf = c;
    return slot + 8;
}

static struct walk walk_of(struct gw_walker *w, const struct gw_regs *r, struct gw_stack *st)
{
    return (struct walk){
        .w = w,
        .st = st,
        .cap = st->capacity < w->cfg.max_depth ? st->capacity : w->cfg.max_depth,
        .user = r->user,
        .access = r->user ? PT_ACC_USER : PT_ACC_SUPERVISOR,
    };
}

uint64_t gw_unwind_leaf(struct gw_walker *w, const struct gw_regs *r, struct gw_stack *st)
{
    struct walk k = walk_of(w, r, st);
    if (w->cfg.no_leaf_repair || st->count >= k.cap)
        return r->rsp;
    return repair_leaf(&k, r);
}

unsigned gw_unwind_regs(struct gw_walker *w, const struct gw_regs *r, struct gw_stack *st)
{
    gw_stack_reset(st);
    struct walk k = walk_of(w, r, st);
    if (w->mmu.mode == PT_MODE_NONE) {
        st->fault.reason = PT_NOT_LONG_MODE;
        stop(&k, GW_STOP_UNSUPPORTED_MODE);
        return 0;
    }
    if (k.cap == 0) {
        stop(&k, GW_STOP_DEPTH_CAP);
        return 0;
    }
    st->pc[st->count++] = r->rip; /* frame 0: the exact PC */

    uint64_t lower = r->rsp; /* the next frame record must start at or above this */
    if (!w->cfg.no_leaf_repair && st->count < k.cap)
        lower = repair_leaf(&k, r);

    uint64_t fp = r->rbp;
    for (;;) {
        if (fp == 0) {
            stop(&k, GW_STOP_CHAIN_END);
            break;
        }
        if (st->count >= k.cap) {
            stop(&k, GW_STOP_DEPTH_CAP);
            break;
        }
        if (!pt_canonical(&w->mmu, fp)) {
            stop_bad(&k, GW_BAD_NON_CANONICAL, fp);
            break;
        }
        if (!in_half(fp, k.user)) {
            stop_bad(&k, GW_BAD_WRONG_HALF, fp);
            break;
        }
        if (fp & 7) {
            stop_bad(&k, GW_BAD_MISALIGNED, fp);
            break;
        }
        /* Strictly increasing (each record above the previous one) makes cycles impossible;
         * the window bounds the stack, the frame bound catches a jump into unrelated memory. */
        if (fp < lower) {
            stop_bad(&k, GW_BAD_NOT_INCREASING, fp);
            break;
        }
        if (fp - r->rsp >= w->cfg.stack_window || fp - lower > w->cfg.max_frame ||
            fp > UINT64_MAX - 16) {
            stop_bad(&k, GW_BAD_OUTSIDE_WINDOW, fp);
            break;
        }
        uint64_t next, ret;
        if (read_record(&k, fp, &next, &ret, &st->fault) != 0) {
            stop(&k, GW_STOP_UNMAPPED);
            break;
        }
        if (ret == 0) {
            stop(&k, GW_STOP_CHAIN_END);
            break;
        }
        if (!valid_return(&k, ret))
            break;
        st->pc[st->count++] = ret;
        lower = fp + 16;
        fp = next;
    }
    return st->count;
}

unsigned gw_unwind(struct gw_walker *w, struct gw_stack *st)
{
    struct gw_regs r = {
        .rip = w->snap.rip, .rsp = w->snap.rsp, .rbp = w->snap.rbp, .user = w->snap.cpl == 3};
    return gw_unwind_regs(w, &r, st);
}

const char *gw_stop_reason_str(enum gw_stop s)
{
    switch (s) {
    case GW_STOP_NONE:
        return "not walked";
    case GW_STOP_CHAIN_END:
        return "end of frame chain";
    case GW_STOP_INVALID_FRAME:
        return "invalid frame";
    case GW_STOP_UNMAPPED:
        return "stack not mapped";
    case GW_STOP_DEPTH_CAP:
        return "depth cap reached";
    case GW_STOP_UNSUPPORTED_MODE:
        return "guest not in long mode";
    case GW_STOP_NO_UNWIND_INFO:
        return "no unwind information";
    case GW_STOP_UNWIND_RULE:
        return "unwind rule not evaluable";
    }
    return "unknown";
}

const char *gw_bad_frame_str(enum gw_bad_frame b)
{
    switch (b) {
    case GW_BAD_NONE:
        return "none";
    case GW_BAD_MISALIGNED:
        return "frame pointer not 8-byte aligned";
    case GW_BAD_NOT_INCREASING:
        return "frame pointer not above the previous frame";
    case GW_BAD_OUTSIDE_WINDOW:
        return "frame pointer outside the stack window";
    case GW_BAD_WRONG_HALF:
        return "address in the wrong half of the address space";
    case GW_BAD_NON_CANONICAL:
        return "non-canonical address";
    case GW_BAD_NOT_AFTER_CALL:
        return "return address not after a call instruction";
    }
    return "unknown";
}

static unsigned fp_unwind(const struct gw_unwinder *u, struct gw_walker *w, const struct gw_regs *r,
                          struct gw_stack *st)
{
    (void)u;
    return gw_unwind_regs(w, r, st);
}

const struct gw_unwinder gw_fp_unwinder = {.name = "fp", .unwind = fp_unwind};
