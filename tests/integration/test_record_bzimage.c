/* `hvprof record` of a bzImage's first moments, on KVM: a bzImage built to the boot protocol
 * (vmm/boot/tests/fixture.c) whose 64-bit entry spins, as a decompressor does before the kernel
 * it unpacks runs. Every sample must say what it is: the process "[boot]" (pid 0), the thread
 * "swapper/0", the function bzImage_decompressor of the kernel-space module "[decompressor]"
 * that the VMM's load range gives (docs/linux-introspection.md, "At record time"), where they
 * showed as "asN cr3=0x..." and "[unknown] [k] 0x..." before. The top table says so too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "guest_run.h"
#include "report/fxt_load.h"
#include "report/profile.h"
#include "tests/common/need_kvm.h"
#include "vmm/boot/tests/fixture.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    (void)n;
    fclose(f);
    return buf;
}

static void test_boot_named(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    static const uint8_t spin[] = {0xf3, 0x90, 0xeb, 0xfc}; /* 1: pause; jmp 1b */
    struct bz_spec spec = bz_default_spec();
    spec.entry_code = spin;
    spec.entry_code_size = sizeof(spin);
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    const char *kernel = test_write_file(0, "vmlinuz", img, len);
    free(img);
    char fxt[600], top[600], log[600], cmd[4096];
    snprintf(fxt, sizeof(fxt), "%s.fxt", kernel);
    snprintf(top, sizeof(top), "%s.top", kernel);
    snprintf(log, sizeof(log), "%s.log", kernel);
    const char *hvprof = guest_build_path("cli/hvprof");
    snprintf(cmd, sizeof(cmd),
             "%s record --quiet -o '%s' --kernel '%s' --hz 500 --timeout 2 > '%s' 2>&1", hvprof,
             fxt, kernel, log);
    int rc = system(cmd);
    /* The entry never stops: --timeout ends the recording, with status 124 (docs/errors.md). */
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 124) {
        char *out = slurp(log);
        fail_msg("hvprof record exited %d:\n%s", rc, out ? out : "");
    }

    struct profile p;
    profile_init(&p);
    struct hv_err err = {0};
    if (fxt_load_profile_file(fxt, &p, NULL, NULL, NULL, &err) < 0 ||
        profile_symbolize(&p, NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    assert_true(p.samples.n >= 50); /* 2 s at 500 Hz, slowed by emulation */
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *s = &p.samples.v[i];
        assert_int_equal(s->cpl, PROF_CPL_KERNEL);
        assert_string_equal(profile_process_name(&p, s->pid), "[boot]");
        assert_int_equal(profile_shown_pid(&p, s->pid), 0);
        assert_string_equal(profile_thread_name(&p, s->pid, s->tid), "swapper/0");
        assert_true(s->nframes >= 1);
        const struct prof_frame *f = &p.frames.v[s->first];
        assert_int_not_equal(f->loc, PROF_NONE);
        const struct prof_loc *l = &p.locs.v[f->loc];
        assert_true(l->resolved);
        assert_string_equal(p.funcs.v[l->func].name, "bzImage_decompressor");
    }
    profile_free(&p);

    snprintf(cmd, sizeof(cmd), "%s report -q '%s' > '%s'", hvprof, fxt, top);
    assert_int_equal(system(cmd), 0);
    char *text = slurp(top);
    assert_non_null(text);
    assert_non_null(strstr(text, "[decompressor]"));
    assert_non_null(strstr(text, "[k] bzImage_decompressor"));
    assert_non_null(strstr(text, "  0            [boot]\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_boot_named)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
