/* A virtio disk (`record --disk`, docs/virtio.md) on Debian's generic and cloud kernels, 2 vCPUs,
 * each booted twice: the kernel finds the device through the ACPI tables with its own modules
 * (virtio, virtio_ring, virtio_mmio, virtio_blk from the kernel package), sees the image's size,
 * reads the label the test bed wrote into it, writes a sector back with fsync (found in the image
 * after the run), and reads the disk in a loop beside hv_busy; the recording has kernel samples
 * in the virtio drivers' code, named from the guest's memory, and the boot stays as clean as
 * without a disk. Then both kernels boot from an ext4 root on the disk (hvtest.plan=root: their
 * ext4 and virtio modules from a small initramfs, switch_root to /dev/vda) and run the workloads
 * from it while a writer keeps files going to it with fsync: profiled by name with exact
 * stacks, and the image passes `e2fsck -fn` after the run, and after hvprof was killed with
 * SIGKILL mid-write once its journal is replayed. With no files (cloud-root-nofiles), the
 * workloads' chains and Debian's own python3, xz and sqlite3 walked to their roots; and from the
 * same root on a GPT disk as a compressed qcow2 image that boots its own grub.cfg entry
 * (`record --disk` alone, docs/disk-boot.md), no files given, which stays as it was. */
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

#define DISK TB_DISK

#define ROOT TB_ROOT

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
    tb_check_console_clean(r, s, ref);
    free(ref);
    if (strstr(r->console, "HVTEST disk missing") || strstr(r->console, "insmod"))
        fail_msg("%s: the guest found no disk:\n%s", r->name, r->console);
    /* 64 MiB = 131072 sectors; the label at sector 0. */
    if (!strstr(r->console, "HVTEST disk size 131072 label HVPROF-DISK-TEST"))
        fail_msg("%s: the guest did not read the disk's size and label:\n%s", r->name, r->console);
    assert_non_null(strstr(r->console, "HVTEST disk wrote"));
    /* The guest's qcow2 header over the first sector of its probed-raw disk: refused by hvprof
     * (its warning after the run), and the image's first sector still the label (disk.head,
     * below); the guest's own view of it is printed (docs/security.md, "Disk images"). */
    if (!strstr(r->summary, "the guest wrote a first sector that would make the image probe as "
                            "qcow2, ") ||
        !strstr(r->summary, "time(s): refused with an I/O error, the image unchanged"))
        fail_msg("%s: no warning of the refused first sector:\n%s", r->name, r->summary);
    const char *flip = strstr(r->console, "HVTEST disk flip ");
    printf("%s: the guest's qcow2 header over sector 0: %.*s\n", r->name,
           flip ? (int)strcspn(flip, "\n") : 4, flip ? flip : "(none)");
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
    /* (The summary's own line, indented: the notes before boot name the disk too.) */
    const char *ds = strstr(r->summary, "  disk vda " DISK ": ");
    unsigned long long reads = 0, writes = 0, flushes = 0, errors = 1;
    double mr, mw;
    if (!ds || sscanf(ds + strlen("  disk vda " DISK ": "),
                      "%llu reads (%lf MiB), %llu writes (%lf MiB), %llu flushes, %llu", &reads,
                      &mr, &writes, &mw, &flushes, &errors) != 6)
        fail_msg("%s: no disk line in the summary:\n%s", r->name, r->summary);
    printf("%s: %s", r->name, ds);
    assert_true(reads > 0 && writes >= 1 && errors >= 1); /* the refused first sector */
    /* KVM took the QueueNotify writes in the kernel: every request came through the I/O
     * thread's ioeventfd (the reads above prove the path, docs/virtio.md). */
    if (!strstr(r->summary, "disks: requests served on an I/O thread per disk (ioeventfd)"))
        fail_msg("%s: the disk's requests were not served on its I/O thread:\n%s", r->name,
                 r->summary);
    tb_check_recording(r);
    tb_check_kernel_symbols(r, 0.95);
    /* Kernel samples in the virtio drivers, by the names the guest's kallsyms gives them. */
    struct profile p;
    tb_load_profile(r, &p);
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

/* A file L1 wrote beside the run's recording ("" when absent). */
/* e2fsck's verdict on the root image after the run (`which`: fsck or fsck-replay). */
static void check_fsck(const struct tb_result *r, const char *which)
{
    char file[32];
    snprintf(file, sizeof(file), "%s.status", which);
    char *st = tb_beside(r, file), *txt = NULL;
    snprintf(file, sizeof(file), "%s.txt", which);
    txt = tb_beside(r, file);
    if (!st[0] || atoi(st) != 0)
        fail_msg("%s: e2fsck (%s) exit %s on the root image after the run:\n%s", r->name, which,
                 st[0] ? st : "(none)", txt);
    /* e2fsck's last line: files and blocks ("hvtest-root: 329/16384 files ..."). */
    const char *l = NULL;
    for (const char *p = txt; (p = strstr(p, "hvtest-root: ")); p++)
        l = p;
    printf("%s: e2fsck -fn%s: clean, %.*s\n", r->name,
           strcmp(which, "fsck") ? " after its journal's replay" : "",
           l ? (int)strcspn(l, "\n") : 0, l ? l : "");
    /* After a replay, -n leaves the superblock's summary counts as the kill found them (ext4
     * writes them at unmount): the counts e2fsck made are the files really there. */
    for (const char *c = txt; (c = strstr(c, "count wrong (")); c++) {
        const char *bol = c;
        while (bol > txt && bol[-1] != '\n')
            bol--;
        printf("%s:   %.*s\n", r->name, (int)strcspn(bol, "\n"), bol);
    }
    free(st);
    free(txt);
}

/* With no files at record or report, the frame-pointer-less workload's samples in nofp_spin are
 * named from the recording alone (its .symtab read from the disk, docs/diskfs.md) and walked
 * through nofp_middle to a caller above it (nofp_outer or nofp_worker). Returns how many of
 * them; fails under 95 %. */
static uint64_t check_named_without_files(const struct tb_result *r)
{
    struct profile p;
    tb_load_profile(r, &p);
    uint64_t leaf = 0, whole = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        const char *names[4] = {0};
        for (uint32_t k = 0; k < sm->nframes && k < 4; k++) {
            const struct prof_frame *f = &p.frames.v[sm->first + k];
            names[k] = f->loc != PROF_NONE && p.locs.v[f->loc].resolved
                           ? p.funcs.v[p.locs.v[f->loc].func].name
                           : NULL;
        }
        if (!names[0] || strcmp(names[0], "nofp_spin"))
            continue;
        leaf++;
        if (names[1] && !strcmp(names[1], "nofp_middle") && names[2] &&
            (!strcmp(names[2], "nofp_outer") || !strcmp(names[2], "nofp_worker")))
            whole++;
    }
    /* busybox's applets run through symbolic links (/bin/grep): the image is named by its own
     * file, never by a link's or the first program's name. */
    bool busybox = false;
    for (size_t i = 0; i < p.modules.n; i++) {
        const char *name = p.modules.v[i].name;
        busybox |= !strcmp(name, "/bin/busybox");
        if (!strcmp(name, "/bin/grep") || !strcmp(name, "/init"))
            fail_msg("%s: busybox's image named %s, after a link or its first program", r->name,
                     name);
    }
    if (!busybox)
        fail_msg("%s: no module named /bin/busybox", r->name);
    profile_free(&p);
    printf("%s: with no files, %" PRIu64 " of %" PRIu64
           " samples in nofp_spin named and walked to nofp_middle and its caller\n",
           r->name, whole, leaf);
    if (leaf < 20) {
        /* The emulated platform's starvation of user-mode exits (docs/linux.md) can leave the
         * workloads' phase with almost no user samples (0-7 in some runs of this scenario,
         * 138-271 in others); the boot group's cloud runs judge the same naming with no files
         * from the initramfs. */
        printf("NOTE %s: only %" PRIu64 " samples in nofp_spin: not judged on this run\n", r->name,
               leaf);
        return 0;
    }
    if (whole * 100 < leaf * 95)
        fail_msg("%s: with no files, %" PRIu64 " of %" PRIu64
                 " nofp_spin samples named and walked (95 %% wanted)",
                 r->name, whole, leaf);
    return whole;
}

struct root_totals {
    uint64_t judged, runs, killed, from_disk, debian, qcow2;
};

static const char *fn_of(const struct profile *p, const struct prof_frame *f)
{
    return f->loc != PROF_NONE && p->locs.v[f->loc].resolved
               ? p->funcs.v[p->locs.v[f->loc].func].name
               : "";
}

/* Debian's own python3, xz and sqlite3 (hvtest.debian=1), stripped and built without frame
 * pointers, profiled with no files: at least 90 % of each one's samples with a user stack walk
 * it to its root: the program's entry (_start, which a stripped executable does not name: the
 * frame below __libc_start_main, in the executable), the loader's (_start, or _dl_start_user
 * running the constructors) or a thread's (clone3). Everything by the recording alone: glibc's
 * internal functions (__libc_start_call_main, start_thread, clone3) by the debug file the
 * guest's disk holds (libc6-dbg, installed by prepare.sh), which the recorder reads from the
 * disk by the library's build-id: at least 99 % of the frames in libc.so.6 named, and the
 * summary says so. Returns the samples judged. */
static uint64_t check_debian_chains(const struct tb_result *r)
{
    static const char *const progs[] = {"python3.11", "xz", "sqlite3"};
    struct profile p;
    tb_load_profile(r, &p);
    uint64_t all = 0, libc = 0, libc_named = 0;
    for (size_t i = 0; i < p.frames.n; i++) {
        const struct prof_frame *f = &p.frames.v[i];
        if (f->loc == PROF_NONE || p.locs.v[f->loc].mapping == PROF_NONE)
            continue;
        const struct prof_loc *l = &p.locs.v[f->loc];
        const char *mod = p.modules.v[p.mappings.v[l->mapping].module].name;
        const char *base = strrchr(mod, '/');
        if (strncmp(base ? base + 1 : mod, "libc.so", 7))
            continue;
        libc++;
        libc_named += l->resolved;
    }
    printf("%s: %" PRIu64 " of %" PRIu64 " frames in libc.so.6 named with no files\n", r->name,
           libc_named, libc);
    if (!libc || libc_named * 100 < libc * 99)
        fail_msg("%s: with the guest's libc6-dbg, %" PRIu64 " of %" PRIu64
                 " frames in libc.so.6 named (99 %% wanted)",
                 r->name, libc_named, libc);
    if (!strstr(r->summary, ".symtab of its debug file (/usr/lib/debug)"))
        fail_msg("%s: the summary does not say libc was named from its debug file:\n%s", r->name,
                 r->summary);
    for (size_t k = 0; k < sizeof(progs) / sizeof(progs[0]); k++) {
        uint64_t n = 0, whole = 0, shown = 0;
        for (size_t i = 0; i < p.samples.n; i++) {
            const struct prof_sample *sm = &p.samples.v[i];
            if (strcmp(profile_process_name(&p, sm->pid), progs[k]))
                continue;
            /* The user frames: from the first one at CPL 3 to the root. */
            const struct prof_frame *f = &p.frames.v[sm->first];
            uint32_t u = 0;
            while (u < sm->nframes && (f[u].flags & PROF_FRAME_KERNEL))
                u++;
            if (u == sm->nframes)
                continue;
            n++;
            const char *root = fn_of(&p, &f[sm->nframes - 1]);
            const char *below = sm->nframes - u >= 2 ? fn_of(&p, &f[sm->nframes - 2]) : "";
            /* _dl_start_user: the loader's entry code, after _start's call of _dl_start
             * returned (glibc's RTLD_START), calling the libraries' constructors (_dl_init). */
            bool ok = !strcmp(root, "clone3") || !strcmp(root, "__clone3") ||
                      !strcmp(root, "_start") || !strcmp(root, "_dl_start_user") ||
                      !strncmp(below, "__libc_start_main", 17);
            whole += ok;
            if (!ok && shown++ < 3) {
                printf("%s: %s stack not to its root:", r->name, progs[k]);
                for (uint32_t j = u; j < sm->nframes && j < u + 10; j++)
                    printf(" %s", fn_of(&p, &f[j])[0] ? fn_of(&p, &f[j]) : "?");
                printf("\n");
            }
        }
        printf("%s: %s: %" PRIu64 " of %" PRIu64 " samples with a user stack walked to its root "
               "with no files\n",
               r->name, progs[k], whole, n);
        if (n < 20)
            fail_msg("%s: only %" PRIu64 " samples of Debian's %s (20 wanted)", r->name, n,
                     progs[k]);
        if (whole * 10 < n * 9)
            fail_msg("%s: %s: %" PRIu64 " of %" PRIu64 " stacks walked to the root, 90 %% wanted",
                     r->name, progs[k], whole, n);
        all += n;
    }
    profile_free(&p);
    return all;
}

static void check_root(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    struct root_totals *t = ctx;
    bool qcow2 = strstr(s->opts, TB_ROOT_QCOW2) != NULL;
    /* The qcow2 disk is a GPT disk (prepare.sh): its root is partition 1. */
    if (!strstr(r->console, qcow2 ? "HVTEST root mounted /dev/vda1 /newroot ext4"
                                  : "HVTEST root mounted /dev/vda /newroot ext4"))
        fail_msg("%s: the guest did not mount its ext4 root:\n%s", r->name, r->console);
    if (s->env) { /* killed mid-write */
        char *killed = tb_beside(r, "killed");
        if (!killed[0] || r->status != 128 + 9)
            fail_msg("%s: hvprof was not killed mid-run (status %d, %s)", r->name, r->status,
                     killed[0] ? killed : "no kill");
        printf("%s: hvprof %s", r->name, killed);
        free(killed);
        char *direct = tb_beside(r, "fsck.status");
        printf("%s: e2fsck -fn on the image as the kill left it: exit %s", r->name, direct);
        free(direct);
        check_fsck(r, "fsck-replay");
        /* What was recorded up to the kill is readable (docs/reliability.md). */
        struct profile p;
        profile_init(&p);
        struct hv_err err = {0};
        if (fxt_load_profile_file(r->rec, &p, NULL, NULL, NULL, &err) < 0)
            fail_msg("%s: the recording the kill left: %s", r->name, err.msg);
        if (p.samples.n == 0)
            fail_msg("%s: no sample kept of a run killed after its guest started writing", r->name);
        printf("%s: %zu samples kept in the recording\n", r->name, p.samples.n);
        profile_free(&p);
        t->killed++;
        return;
    }
    tb_check_boot(r, s);
    char *ref = tb_reference(s->kernel, s->vcpus);
    tb_check_console_clean(r, s, ref);
    free(ref);
    if (!strstr(r->console, "HVTEST root clean"))
        fail_msg("%s: the guest did not leave its root clean:\n%s", r->name, r->console);
    if (qcow2) {
        /* Booted by --disk alone: the default entry of the disk's grub.cfg, its kernel and
         * initramfs read from the qcow2 partition (docs/disk-boot.md). */
        if (strcmp(s->cmd, "record-disk") ||
            !strstr(r->summary, "hvprof record: booting 'Debian GNU/Linux' from "
                                "/boot/grub/grub.cfg on disk 0 partition 1: /boot/vmlinuz-") ||
            !strstr(r->summary, "command line: BOOT_IMAGE=/boot/vmlinuz-"))
            fail_msg("%s: not booted from the disk's own boot entry:\n%s", r->name, r->summary);
        printf("%s: booted from the qcow2 disk's grub.cfg\n", r->name);
        /* Read through libqcow, the guest's writes in the private overlay: the image as it was. */
        char *same = tb_beside(r, "qcow2.image");
        if (strncmp(same, "unchanged", 9) ||
            !strstr(r->summary, "disk vda " TB_ROOT_QCOW2 " (qcow2) (image not written: "))
            fail_msg("%s: the qcow2 root (%s) or its summary line:\n%s", r->name, same, r->summary);
        printf("%s: the qcow2 image unchanged after the run\n", r->name);
        free(same);
        t->qcow2++;
    } else {
        check_fsck(r, "fsck");
    }
    tb_check_recording(r);
    tb_check_kernel_symbols(r, 0.95);
    /* The workloads, started from the disk, by name, with their chains. */
    tb_check_tasks(r);
    t->judged += tb_check_user_stacks(r, 0.95, strstr(s->opts, "--symbols") != NULL);
    /* Without --symbols the unwind tables the guest never read came from the disk. */
    if (!strstr(s->opts, "--symbols")) {
        const char *c = strstr(r->summary, " of them from their files, ");
        unsigned long long from_disk = 0;
        if (!c || sscanf(c, " of them from their files, %llu from the disks", &from_disk) != 1 ||
            !from_disk)
            fail_msg("%s: no module's unwind tables came from the disk:\n%s", r->name, r->summary);
        printf("%s: %llu modules' unwind tables read from the disk\n", r->name, from_disk);
        t->from_disk += from_disk;
        check_named_without_files(r);
    }
    if (strstr(s->cmdline, "hvtest.debian=1")) {
        if (!strstr(r->console, "HVTEST debian programs running"))
            fail_msg("%s: Debian's programs did not start:\n%s", r->name, r->console);
        t->debian += check_debian_chains(r);
        /* How many stacks waited for tables compiled after their sample (docs/cfi.md). */
        const char *cp = strstr(r->summary, "stacks copied at the exit");
        if (cp)
            printf("%s: %.*s\n", r->name, (int)strcspn(cp, "\n"), cp);
    }
    const char *ds =
        strstr(r->summary, qcow2 ? "disk vda " TB_ROOT_QCOW2 " (qcow2)" : "disk vda " ROOT ": ");
    if (!ds)
        fail_msg("%s: no disk line in the summary:\n%s", r->name, r->summary);
    printf("%s: %.*s\n", r->name, (int)strcspn(ds, "\n"), ds);
    t->runs++;
}

static void test_disk(void **state)
{
    (void)state;
    char out[4096];
    uint64_t in_virtio = 0;
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("disk", 2, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, &in_virtio);
    assert_true(in_virtio > 0);
}

static void test_root_on_disk(void **state)
{
    (void)state;
    char out[4096];
    struct root_totals t = {0};
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("disk-root", 2, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check_root, &t);
    printf("root on disk: %" PRIu64 " runs checked, %" PRIu64 " killed mid-write, %" PRIu64
           " user samples judged, %" PRIu64 " modules' unwind tables from the disk, %" PRIu64
           " samples of Debian's programs judged, %" PRIu64 " runs from a qcow2 root\n",
           t.runs, t.killed, t.judged, t.from_disk, t.debian, t.qcow2);
    assert_true(t.runs > 0 && t.killed > 0 && t.from_disk > 0 && t.debian > 0 && t.qcow2 > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_disk),
                                       cmocka_unit_test(test_root_on_disk)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
