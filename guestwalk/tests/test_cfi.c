/* The DWARF CFI unwinder on real stacks: this process's own call chains (built -O2
 * -fomit-frame-pointer, through glibc's qsort, a signal handler, a thread, and a function with
 * only a frame pointer), copied into a synthetic guest address space and walked with tables
 * compiled from this process's own .eh_frame_hdr/.eh_frame; libgcc's _Unwind_Backtrace of the
 * same stack is the reference, frame for frame. Then the rules one by one on hand-written
 * tables: the PLT's CFA expression, an untracked CFA register, a truncated FDE, pages not
 * present. */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cfi_funcs.h"
#include "guestwalk/cfi_expr.h"
#include "self_stack.h"

static struct gw_cfi_map *map;

static int setup(void **state)
{
    (void)state;
    map = self_cfi_map();
    return map ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    self_cfi_map_free(map);
    return 0;
}

static struct self_stack cap;

static void leaf(void *arg)
{
    (void)arg;
    self_stack_capture(&cap);
}

static void on_usr1(int sig)
{
    (void)sig;
    self_stack_capture(&cap);
}

static const char *name_of(uint64_t pc)
{
    Dl_info di;
    if (dladdr((void *)(uintptr_t)(pc - 1), &di) && di.dli_sname)
        return di.dli_sname;
    return "?";
}

static void print_stack(const char *what, const uint64_t *pc, unsigned n)
{
    printf("%s (%u):", what, n);
    for (unsigned i = 0; i < n; i++)
        printf(" %s(%#llx)", name_of(pc[i]), (unsigned long long)pc[i]);
    printf("\n");
}

/* Walk `cap` in a guest image; returns the frames in pcs. */
static unsigned walk(const struct gw_cfi_map *m, uint64_t *pcs, unsigned cap_frames,
                     struct gw_stack *out)
{
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    assert_int_equal(self_stack_map(&cap, &g), 0);
    struct gw_walker w;
    assert_int_equal(gw_walker_init(&w, &g.mem, NULL, NULL), 0);
    struct gw_snapshot snap = gimg_cpu(&g, cap.rip, cap.rsp, cap.rbp, 3);
    gw_walker_begin(&w, &snap);
    struct gw_regs r = gw_regs_of(&snap);
    *out = GW_STACK_INIT(pcs, cap_frames);
    gw_cfi_unwind(m, &w, &r, out);
    gw_walker_fini(&w);
    gimg_free(&g);
    return out->count;
}

static bool has(const uint64_t *pc, unsigned n, const char *fn)
{
    for (unsigned i = 0; i < n; i++)
        if (!strcmp(name_of(pc[i]), fn))
            return true;
    return false;
}

/* The walk equals libgcc's from frame 1 on (frame 0 is the capture point, libgcc's the IP after
 * its own call) and ends at the outermost frame. */
static void expect_reference(void)
{
    uint64_t pcs[SELF_MAX_FRAMES];
    struct gw_stack st;
    unsigned n = walk(map, pcs, SELF_MAX_FRAMES, &st);
    print_stack("cfi walk", pcs, n);
    /* libgcc reports the outermost frame's undefined return address as one last IP 0. */
    while (cap.nref && cap.ref[cap.nref - 1] == 0)
        cap.nref--;
    print_stack("libgcc  ", cap.ref, cap.nref);
    assert_true(cap.nref >= 4);
    assert_int_equal(n, cap.nref);
    for (unsigned i = 1; i < n; i++)
        assert_int_equal(pcs[i], cap.ref[i]);
    assert_int_equal(st.stop, GW_STOP_CHAIN_END);
    assert_int_equal(st.leaf, GW_LEAF_CFI);
    assert_true(st.cfi_frames >= n - 2);
}

static void test_main_thread(void **state)
{
    (void)state;
    struct cfi_call c = {.leaf = leaf, .recurse = 3};
    cfi_a(&c, 0);
    expect_reference();
    uint64_t pcs[SELF_MAX_FRAMES];
    struct gw_stack st;
    unsigned n = walk(map, pcs, SELF_MAX_FRAMES, &st);
    assert_true(has(pcs, n, "cfi_c") && has(pcs, n, "cfi_b") && has(pcs, n, "cfi_a"));
    assert_true(has(pcs, n, "main"));
    /* Frame pointers alone lose the functions built without them. */
    n = walk(NULL, pcs, SELF_MAX_FRAMES, &st);
    print_stack("fp walk ", pcs, n);
    assert_false(has(pcs, n, "cfi_b"));
    self_stack_free(&cap);
}

static void *thread_main(void *arg)
{
    struct cfi_call c = {.leaf = leaf, .recurse = 1};
    cfi_a(&c, 0);
    return arg;
}

static void test_thread(void **state)
{
    (void)state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_main, NULL), 0);
    pthread_join(t, NULL);
    expect_reference(); /* up to start_thread and clone3, whose return address is undefined */
    uint64_t pcs[SELF_MAX_FRAMES];
    struct gw_stack st;
    unsigned n = walk(map, pcs, SELF_MAX_FRAMES, &st);
    assert_true(has(pcs, n, "thread_main") || has(pcs, n, "cfi_a"));
    self_stack_free(&cap);
}

static void test_through_qsort(void **state)
{
    (void)state;
    struct cfi_call c = {.leaf = leaf};
    cfi_through_qsort(&c);
    expect_reference(); /* glibc's qsort internals, built without frame pointers */
    uint64_t pcs[SELF_MAX_FRAMES];
    struct gw_stack st;
    unsigned n = walk(map, pcs, SELF_MAX_FRAMES, &st);
    assert_true(has(pcs, n, "cfi_through_qsort"));
    self_stack_free(&cap);
}

static void test_signal_frame(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = on_usr1}, old;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    struct cfi_call c = {.signal = true};
    cfi_a(&c, 0);
    sigaction(SIGUSR1, &old, NULL);
    /* Through glibc's __restore_rt: its CFA and saved registers are DWARF expressions over the
     * kernel's sigcontext, and the frame above it has its exact interrupted PC. */
    expect_reference();
    uint64_t pcs[SELF_MAX_FRAMES];
    struct gw_stack st;
    unsigned n = walk(map, pcs, SELF_MAX_FRAMES, &st);
    assert_true(has(pcs, n, "cfi_c") && has(pcs, n, "cfi_a") && has(pcs, n, "main"));
    self_stack_free(&cap);
}

static void test_mixed_with_frame_pointers(void **state)
{
    (void)state;
    struct cfi_call c = {.leaf = leaf, .through_fp = true};
    cfi_a(&c, 0);
    uint64_t pcs[SELF_MAX_FRAMES];
    struct gw_stack st;
    unsigned n = walk(map, pcs, SELF_MAX_FRAMES, &st);
    print_stack("mixed walk", pcs, n);
    /* fp_mid has no FDE: libgcc stops there, the walk crosses it by its frame record. */
    unsigned i = 0;
    while (i < n && strcmp(name_of(pcs[i]), "cfi_c"))
        i++;
    assert_true(i + 3 < n);
    assert_string_equal(name_of(pcs[i + 1]), "fp_mid");
    assert_string_equal(name_of(pcs[i + 2]), "cfi_b");
    assert_string_equal(name_of(pcs[i + 3]), "cfi_a");
    assert_true(has(pcs, n, "main"));
    assert_int_equal(st.stop, GW_STOP_CHAIN_END);
    for (unsigned k = 1; k <= i + 1 && k < cap.nref; k++)
        assert_int_equal(pcs[k], cap.ref[k]);
    self_stack_free(&cap);
}

/* ---- hand-written tables -------------------------------------------------------------- */

/* A CIE (x86-64 defaults: CFA = rsp + 8, RA at CFA - 8; 'zR' with pcrel|sdata4) at `at`. */
static size_t put_cie(uint8_t *b)
{
    static const uint8_t cie[] = {
        0x14, 0,    0,    0, /* length 20 */
        0,    0,    0,    0, /* CIE id */
        1,    'z',  'R',  0, /* version, augmentation */
        1,    0x78, 0x10,    /* code align 1, data align -8, RA column 16 */
        1,    0x1b,          /* augmentation data: FDE pointers pcrel|sdata4 */
        0x0c, 0x07, 0x08,    /* DW_CFA_def_cfa rsp 8 */
        0x90, 0x01,          /* DW_CFA_offset r16 at CFA-8 */
        0,    0,             /* padding */
    };
    memcpy(b, cie, sizeof(cie));
    return sizeof(cie);
}

/* An FDE at b + off covering [pc, pc + len) with instructions ins. Returns its size. */
static size_t put_fde(uint8_t *b, size_t off, uint64_t base_va, uint64_t pc, uint32_t len,
                      const uint8_t *ins, size_t nins)
{
    size_t body = 4 + 4 + 4 + 1 + nins;
    uint32_t l = (uint32_t)body, cie_ptr = (uint32_t)(off + 4);
    int32_t rel = (int32_t)(pc - (base_va + off + 8));
    memcpy(b + off, &l, 4);
    memcpy(b + off + 4, &cie_ptr, 4);
    memcpy(b + off + 8, &rel, 4);
    memcpy(b + off + 12, &len, 4);
    b[off + 16] = 0; /* augmentation data length */
    memcpy(b + off + 17, ins, nins);
    return 4 + body;
}

#define EH_VA 0x500000ull

static void test_rules(void **state)
{
    (void)state;
    uint8_t buf[512] = {0};
    size_t off = put_cie(buf);
    /* f1 [0x401000, 0x401040): push rbp at +1 (CFA rsp+16, rbp at CFA-16), then mov rbp, rsp at
     * +4 (CFA rbp+16). */
    const uint8_t f1[] = {0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06};
    off += put_fde(buf, off, EH_VA, 0x401000, 0x40, f1, sizeof(f1));
    /* f2 [0x402000, 0x402010): the PLT's CFA expression (binutils' elf_x86_64 PLT eh_frame). */
    const uint8_t f2[] = {0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f,
                          0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
    off += put_fde(buf, off, EH_VA, 0x402000, 0x10, f2, sizeof(f2));
    /* f3 [0x403000, 0x403010): CFA in r10 (a stack-realigning function). */
    const uint8_t f3[] = {0x0c, 0x0a, 0x00};
    off += put_fde(buf, off, EH_VA, 0x403000, 0x10, f3, sizeof(f3));
    struct cfi_src src = {.image_base = 0x400000, .vaddr = EH_VA, .data = buf, .len = off + 4};
    struct cfi_table t;
    assert_int_equal(cfi_compile(&src, 0, EH_VA, &t, NULL), 0);
    assert_int_equal(t.stats.fdes, 3);
    assert_int_equal(t.stats.fdes_bad, 0);
    const struct cfi_row *r = cfi_find(&t, 0x401000);
    assert_non_null(r);
    assert_int_equal(r->cfa, CFI_CFA_RSP);
    assert_int_equal(r->cfa_off, 8);
    assert_int_equal(r->ra, CFI_RULE_AT);
    assert_int_equal(r->ra_off, -8);
    r = cfi_find(&t, 0x401002);
    assert_int_equal(r->cfa_off, 16);
    assert_int_equal(r->rbp, CFI_RULE_AT);
    assert_int_equal(r->rbp_off, -16);
    r = cfi_find(&t, 0x40103f);
    assert_int_equal(r->cfa, CFI_CFA_RBP);
    assert_int_equal(r->cfa_off, 16);
    assert_null(cfi_find(&t, 0x401040)); /* past the FDE */
    assert_null(cfi_find(&t, 0x3fffff));
    r = cfi_find(&t, 0x402004);
    assert_int_equal(r->cfa, CFI_CFA_EXPR);
    /* The PLT entry: before its push (PC & 15 < 11) CFA = rsp + 8, after it rsp + 16. */
    const struct cfi_expr *x = &t.exprs[r->cfa_off];
    struct cfi_expr_regs regs = {.rsp = 0x7000, .rip = 0x402004};
    uint64_t v;
    assert_true(cfi_expr_eval(t.expr_bytes + x->off, x->len, &regs, false, 0, NULL, NULL, &v));
    assert_int_equal(v, 0x7008);
    regs.rip = 0x40200b;
    assert_true(cfi_expr_eval(t.expr_bytes + x->off, x->len, &regs, false, 0, NULL, NULL, &v));
    assert_int_equal(v, 0x7010);
    r = cfi_find(&t, 0x403000);
    assert_int_equal(r->cfa, CFI_CFA_OTHER_REG);

    /* The walk on a stack: f1 after its push, called from f3 (r10: the walk stops there). */
    struct gimg g;
    assert_int_equal(gimg_init(&g, false), 0);
    assert_int_equal(gimg_map_fresh(&g, 0x7ff000, 0x1000, GIMG_USER_RW | GIMG_XD), 0);
    assert_int_equal(gimg_write_u64(&g, 0x7ff800, 0x1234), 0);   /* saved rbp */
    assert_int_equal(gimg_write_u64(&g, 0x7ff808, 0x403005), 0); /* return into f3 */
    struct gw_walker w;
    assert_int_equal(gw_walker_init(&w, &g.mem, NULL, NULL), 0);
    struct gw_snapshot snap = gimg_cpu(&g, 0x401002, 0x7ff800, 0x9999, 3);
    gw_walker_begin(&w, &snap);
    struct gw_cfi_map *m = malloc(sizeof(*m) + sizeof(m->m[0]));
    m->n = 1;
    m->m[0] = (struct gw_cfi_module){0x400000, 0x404000, 0, &t};
    uint64_t pcs[8];
    struct gw_stack st = GW_STACK_INIT(pcs, 8);
    struct gw_regs regs0 = gw_regs_of(&snap);
    assert_int_equal(gw_cfi_unwind(m, &w, &regs0, &st), 2);
    assert_int_equal(pcs[1], 0x403005);
    assert_int_equal(st.stop, GW_STOP_UNWIND_RULE);
    assert_int_equal(st.bad_value, 0x403005);
    assert_false(st.cfi_outside);
    /* The same code in a module known to have no table: frame pointers there, the code known
     * (no stack copy waits for its table, sampler/exit/stack_copy.h). */
    m->m[0].t = NULL;
    gw_cfi_unwind(m, &w, &regs0, &st);
    assert_int_equal(st.cfi_frames, 0);
    assert_true(st.cfi_gap);
    assert_false(st.cfi_outside);
    /* Frame pointers through that module, to a return address outside every module: any value
     * on the stack could be one, so it is not code waiting for its tables. */
    assert_int_equal(gimg_write_u64(&g, 0x7ff808, 0x500010), 0);
    struct gw_snapshot fp_snap = gimg_cpu(&g, 0x401002, 0x7ff7f0, 0x7ff800, 3);
    gw_walker_begin(&w, &fp_snap);
    struct gw_regs fp_regs = gw_regs_of(&fp_snap);
    gw_cfi_unwind(m, &w, &fp_regs, &st);
    assert_true(st.count >= 2);
    assert_int_equal(pcs[1], 0x500010);
    assert_false(st.cfi_outside);
    assert_int_equal(gimg_write_u64(&g, 0x7ff808, 0x403005), 0);
    gw_walker_begin(&w, &snap);
    /* Outside every module of the map: code no table covers yet. */
    m->m[0] = (struct gw_cfi_module){0x500000, 0x501000, 0, &t};
    gw_cfi_unwind(m, &w, &regs0, &st);
    assert_false(st.cfi_gap);
    assert_true(st.cfi_outside);
    m->m[0] = (struct gw_cfi_module){0x400000, 0x404000, 0, &t};
    /* A forged row whose CFA does not rise: stopped, never looped. */
    snap = gimg_cpu(&g, 0x401000, 0x7ff808, 0, 3);
    gw_walker_begin(&w, &snap);
    assert_int_equal(gimg_write_u64(&g, 0x7ff808, 0x401001), 0); /* "returns" into f1 itself */
    regs0 = gw_regs_of(&snap);
    gw_cfi_unwind(m, &w, &regs0, &st);
    assert_true(st.count <= 3);
    assert_int_not_equal(st.stop, GW_STOP_DEPTH_CAP);
    free(m);
    gw_walker_fini(&w);
    gimg_free(&g);

    /* The second FDE's page not present: counted, the others compiled. */
    size_t len = off + 4;
    uint8_t big[3 * 4096] = {0};
    memcpy(big, buf, len);
    uint8_t present[3] = {1, 1, 1};
    struct cfi_src s2 = {.image_base = 0x400000,
                         .vaddr = EH_VA,
                         .data = big,
                         .len = sizeof(big),
                         .present = present};
    cfi_table_free(&t);
    present[0] = 0;
    assert_int_equal(cfi_compile(&s2, 0, EH_VA, &t, NULL), 0);
    assert_int_equal(t.stats.fdes, 0);
    assert_true(t.stats.fdes_absent >= 1);
    cfi_table_free(&t);
    /* Truncated: the last FDE cut short is skipped as malformed. */
    struct cfi_src s3 = {.image_base = 0x400000, .vaddr = EH_VA, .data = buf, .len = off - 3};
    assert_int_equal(cfi_compile(&s3, 0, EH_VA, &t, NULL), 0);
    assert_int_equal(t.stats.fdes, 2);
    cfi_table_free(&t);
}

/* A forged .eh_frame_hdr whose 16384 entries all name one FDE of 64 KiB of instructions: the
 * compiler reads about 8 times its input, then counts the rest as malformed (without the
 * budget: 16384 x 64 KiB = 1 GiB of instructions executed). */
static void test_work_budget(void **state)
{
    (void)state;
    enum { NENT = 16384, BODY = 64 << 10 };
    size_t hdr_len = 12 + NENT * 8, cie_off = hdr_len;
    size_t len = hdr_len + 32 + 32 + BODY;
    uint8_t *buf = calloc(1, len);
    assert_non_null(buf);
    size_t off = cie_off + put_cie(buf + cie_off);
    size_t fde = off;
    uint8_t *ins = calloc(1, BODY); /* DW_CFA_nop */
    off += put_fde(buf + cie_off, off - cie_off, EH_VA + cie_off, 0x401000, 0x40, ins, BODY);
    free(ins);
    /* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4 */
    buf[0] = 1, buf[1] = 0x1b, buf[2] = 0x03, buf[3] = 0x3b;
    int32_t ef = (int32_t)(cie_off - 4);
    uint32_t count = NENT;
    memcpy(buf + 4, &ef, 4);
    memcpy(buf + 8, &count, 4);
    for (uint32_t i = 0; i < NENT; i++) {
        int32_t pc = 0x1000, at = (int32_t)fde;
        memcpy(buf + 12 + i * 8, &pc, 4);
        memcpy(buf + 16 + i * 8, &at, 4);
    }
    struct cfi_src src = {.image_base = 0x400000, .vaddr = EH_VA, .data = buf, .len = off};
    struct cfi_table t;
    assert_int_equal(cfi_compile(&src, EH_VA, 0, &t, NULL), 0);
    printf("forged table: %lu FDEs compiled, %lu refused\n", (unsigned long)t.stats.fdes,
           (unsigned long)t.stats.fdes_bad);
    assert_true(t.stats.fdes >= 1 && t.stats.fdes < 64);
    assert_true(t.stats.fdes + t.stats.fdes_bad == NENT);
    cfi_table_free(&t);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_main_thread),
        cmocka_unit_test(test_thread),
        cmocka_unit_test(test_through_qsort),
        cmocka_unit_test(test_signal_frame),
        cmocka_unit_test(test_mixed_with_frame_pointers),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_work_budget),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
