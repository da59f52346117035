/* The Java reader on a JVM image built by hand (java/fuzz/corpus/fuzz_java_walk/
 * compiled_then_interpreted, JDK 17's layout): an nmethod of Chains.leafA whose PcDesc at the
 * sampled pc names leafA at bci 5, called from an interpreted frame of leafA at bci 3; its
 * class, signature, file and lines; one thread of tid 1234; the blob found from any pc in it and
 * none from a free segment; a walk from a pc outside the code cache finds nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "java/fuzz/jdk17_layout.h"
#include "java/hs_walk.h"

struct image {
    unsigned char p[0x4000];
    size_t n;
};

static bool rd(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct image *im = ctx;
    if (va < HS_IMAGE_BASE || va - HS_IMAGE_BASE > im->n || len > im->n - (va - HS_IMAGE_BASE))
        return false;
    memcpy(dst, im->p + (va - HS_IMAGE_BASE), len);
    return true;
}

static struct image im;

static int load(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/java/fuzz/corpus/fuzz_java_walk/compiled_then_interpreted",
             getenv("HVPROF_SOURCE_DIR"));
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    im.n = fread(im.p, 1, sizeof(im.p), f);
    fclose(f);
    return 0;
}

static void test_walk_image(void **state)
{
    (void)state;
    struct rt_mem m = {rd, &im};
    struct hs_layout l = hs_jdk17_layout(HS_IMAGE_BASE);
    struct hs_code_cache cc;
    struct hv_err err = {0};
    assert_int_equal(hs_code_cache_read(&cc, &l, &m, &err), 0);
    assert_int_equal(cc.nheaps, 1);
    const uint64_t B = HS_IMAGE_BASE, blob = B + 0x1010;
    for (uint64_t pc = B + 0x1000; pc < B + 0x1400; pc += 64)
        assert_int_equal(hs_blob_at(&cc, &l, &m, pc), blob);
    assert_int_equal(hs_blob_at(&cc, &l, &m, B + 0x1400), 0); /* a free segment */

    struct hs_regs r;
    memcpy(&r, im.p + 48, sizeof(r));
    struct hs_frame f[8];
    unsigned n = hs_walk(&cc, &l, &m, &r, f, 8);
    assert_int_equal(n, 2);
    assert_int_equal(f[0].kind, HS_FRAME_COMPILED);
    assert_int_equal(f[0].bci, 5);
    assert_int_equal(f[0].code, B + 0x600);
    assert_int_equal(f[1].kind, HS_FRAME_INTERPRETED);
    assert_int_equal(f[1].bci, 3);
    assert_int_equal(r.pc, 0); /* the interpreted frame returns to 0: where native resumes */

    struct hs_method_info mi;
    assert_true(hs_method_read(&l, &m, B + 0x600, &mi));
    assert_string_equal(mi.klass, "Chains");
    assert_string_equal(mi.name, "leafA");
    assert_string_equal(mi.signature, "(J)J");
    assert_string_equal(mi.source, "Chains.java");
    assert_int_equal(hs_method_line(&l, &m, B + 0x600, 0), 7);
    assert_int_equal(hs_method_line(&l, &m, B + 0x600, 3), 7);
    assert_int_equal(hs_method_line(&l, &m, B + 0x600, 5), 8);
    assert_int_equal(hs_method_line(&l, &m, B + 0x600, 9), 8);
    assert_int_equal(hs_method_line(&l, &m, B + 0x600, 10), -1); /* past its code */

    struct hs_thread th[4];
    assert_int_equal(hs_threads(&l, &m, th, 4), 1);
    assert_int_equal(th[0].tid, 1234);

    struct hs_regs native = {B + 0x4000, r.sp, r.fp};
    assert_int_equal(hs_walk(&cc, &l, &m, &native, f, 8), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_walk_image, load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
