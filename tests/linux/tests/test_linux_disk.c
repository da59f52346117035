/* A virtio disk (`record --disk`, docs/virtio.md) on Debian's generic and cloud kernels, 2 vCPUs,
 * each booted twice: the kernel finds the device through the ACPI tables with its own modules
 * (virtio, virtio_ring, virtio_mmio, virtio_blk from the kernel package), sees the image's size,
 * reads the label the test bed wrote into it, writes a sector back with fsync (found in the image
 * after the run), and reads the disk in a loop beside hv_busy; the recording has kernel samples
 * in the virtio drivers' code, named from the guest's memory, and the boot stays as clean as
 * without a disk. */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/fxt_load.h"
#include "report/profile.h"
#include "tests/linux/testbed.h"

#define DISK "/tmp/hvtest-disk.img" /* created by tests/linux/l1_init.sh, 64 MiB */

static const struct tb_scenario scenarios[] = {
    {"generic-disk", "record", "generic", 2, "512M", "hvtest.plan=disk hvtest.ms=1500",
     "--hz 1000 --timeout 180 --disk " DISK, NULL},
    {"cloud-disk", "record", "cloud", 2, "512M", "hvtest.plan=disk hvtest.ms=1500",
     "--hz 1000 --timeout 180 --disk " DISK, NULL},
};
#define N (sizeof(scenarios) / sizeof(scenarios[0]))

static bool virtio_fn(const char *fn)
{
    return fn && (!strncmp(fn, "virtblk_", 8) || !strncmp(fn, "virtqueue_", 10) ||
                  !strncmp(fn, "vring_", 6) || !strncmp(fn, "vm_notify", 9) ||
                  !strncmp(fn, "vm_interrupt", 12) || !strncmp(fn, "virtio_", 7));
}

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    uint64_t *total = ctx;
    tb_check_boot(r, s);
    char *ref = tb_reference(s->kernel, s->vcpus);
    tb_check_console_clean(r, ref);
    free(ref);
    if (strstr(r->console, "HVTEST disk missing") || strstr(r->console, "insmod"))
        fail_msg("%s: the guest found no disk:\n%s", r->name, r->console);
    /* 64 MiB = 131072 sectors; the label at sector 0. */
    if (!strstr(r->console, "HVTEST disk size 131072 label HVPROF-DISK-TEST"))
        fail_msg("%s: the guest did not read the disk's size and label:\n%s", r->name, r->console);
    assert_non_null(strstr(r->console, "HVTEST disk wrote"));
    assert_non_null(strstr(r->console, "HVTEST disk read done"));
    /* The guest's write, in the image after the run (sector 8). */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%.*s/disk.head", (int)(strrchr(r->rec, '/') - r->rec), r->rec);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: %s missing (L1 keeps the image's first 8 KiB)", r->name, path);
    char head[8192] = {0};
    size_t got = fread(head, 1, sizeof(head), f);
    fclose(f);
    assert_true(got == sizeof(head));
    if (memcmp(head + 8 * 512, "HVTEST-WRITTEN-BY-THE-GUEST", 27))
        fail_msg("%s: the guest's write is not in the image's sector 8", r->name);
    assert_memory_equal(head, "HVPROF-DISK-TEST", 16);
    /* The summary's account of the disk: reads, the guest's write, no error. */
    const char *ds = strstr(r->summary, "disk vda " DISK ": ");
    unsigned long long reads = 0, writes = 0, flushes = 0, errors = 1;
    double mr, mw;
    if (!ds || sscanf(ds + strlen("disk vda " DISK ": "),
                      "%llu reads (%lf MiB), %llu writes (%lf MiB), %llu flushes, %llu", &reads,
                      &mr, &writes, &mw, &flushes, &errors) != 6)
        fail_msg("%s: no disk line in the summary:\n%s", r->name, r->summary);
    printf("%s: %s", r->name, ds);
    assert_true(reads > 0 && writes >= 1 && errors == 0);
    tb_check_recording(r);
    tb_check_kernel_symbols(r, 0.95);
    /* Kernel samples in the virtio drivers, by the names the guest's kallsyms gives them. */
    struct profile p;
    profile_init(&p);
    struct hv_err err = {{0}, 0};
    if (fxt_load_profile_file(r->rec, &p, NULL, NULL, NULL, &err) < 0 ||
        profile_symbolize(&p, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
    uint64_t in_virtio = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        for (uint32_t k = 0; k < sm->nframes; k++) {
            const struct prof_frame *fr = &p.frames.v[sm->first + k];
            const struct prof_loc *l = fr->loc == PROF_NONE ? NULL : &p.locs.v[fr->loc];
            if (l && l->resolved && virtio_fn(p.funcs.v[l->func].name)) {
                in_virtio++;
                break;
            }
        }
    }
    profile_free(&p);
    printf("%s: %.1f s, disk found, read and written; %" PRIu64
           " samples with a virtio driver function on the stack\n",
           r->name, r->seconds, in_virtio);
    *total += in_virtio;
}

static void test_disk(void **state)
{
    (void)state;
    char out[4096];
    uint64_t in_virtio = 0;
    tb_run("disk", scenarios, N, 2, out, sizeof(out));
    for (size_t i = 0; i < N; i++)
        tb_each_run(out, &scenarios[i], 2, check, &in_virtio);
    assert_true(in_virtio > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_disk)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
