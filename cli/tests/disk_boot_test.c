/* `hvprof run|record --disk IMAGE` with no --kernel, end to end on the real VMM: a GPT disk
 * (sfdisk) whose ext4 partition (mkfs.ext4 -d) holds a GRUB-style /boot/grub/grub.cfg with
 * the test guest's kernel and boot archive, converted to a compressed qcow2 (qemu-img); the
 * guest boots from its default entry and from one --boot-entry names; a disk with no menu and
 * an entry that names no file are refused with what was looked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/need_kvm.h"
#include "tests/common/run_cmd.h"

static const char *hvprof_bin;
static char dir[128];

#define sh(...)                                                                                    \
    do {                                                                                           \
        if (hv_shf(__VA_ARGS__) != 0)                                                              \
            fail_msg("failed: " __VA_ARGS__);                                                      \
    } while (0)

static int run_hvprof(const char *args, char *out, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' %s", hvprof_bin, args);
    int rc = hv_run_cmd(cmd, out, cap);
    assert_true(rc >= 0);
    return rc;
}

/* A GPT disk with the tree `root` in partition 1 (ext4), as qcow2 at `out`. */
static void make_disk(const char *root, const char *out)
{
    sh("rm -f %s/p1.img %s/disk.raw && mkfs.ext4 -q -F -U 0b9bb8a6-3f5e-4c1d-9a2e-7d1c5e8f4a21 -d "
       "%s "
       "%s/p1.img 24M >/dev/null && "
       "truncate -s 40M %s/disk.raw && printf 'label: gpt\\nstart=2048, size=49152\\n' | "
       "sfdisk -q %s/disk.raw && dd if=%s/p1.img of=%s/disk.raw bs=512 seek=2048 "
       "conv=notrunc status=none && qemu-img convert -q -c -f raw -O qcow2 %s/disk.raw %s",
       dir, dir, root, dir, dir, dir, dir, dir, dir, out);
}

static char img[256], root[160];

/* The disk, once for both tests. */
static void make_guest_disk(void)
{
    const char *bin = getenv("HVPROF_BINARY_DIR");
    assert_non_null(bin);
    for (const char *t = "mkfs.ext4 sfdisk qemu-img"; *t;) {
        size_t n = strcspn(t, " ");
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "command -v %.*s >/dev/null", (int)n, t);
        if (system(cmd) != 0)
            fail_msg("%.*s is not installed (scripts/deps.sh installs it)", (int)n, t);
        t += n + (t[n] == ' ');
    }
    /* The menu the way grub-mkconfig writes it: a default of 0, a `search` naming the file
     * system by UUID, the kernel by a symbolic link as Debian's /vmlinuz is. */
    sh("mkdir -p %s/root/boot/grub && cp %s/tests/guest/hvprof-guest.elf "
       "%s/root/boot/hvprof-guest-1.elf && cp %s/tests/guest/hvprof-guest.cpio "
       "%s/root/boot/initrd.img-1 && ln -s boot/hvprof-guest-1.elf %s/root/vmlinuz",
       dir, bin, dir, bin, dir, dir);
    FILE *f;
    char path[256];
    snprintf(path, sizeof(path), "%s/root/boot/grub/grub.cfg", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("if [ \"${next_entry}\" ] ; then\n set default=\"${next_entry}\"\nelse\n"
          " set default=\"0\"\nfi\n"
          "menuentry 'hvprof test guest' --class os $menuentry_id_option 'guest-simple' {\n"
          "\tsearch --no-floppy --fs-uuid --set=root 0b9bb8a6-3f5e-4c1d-9a2e-7d1c5e8f4a21\n"
          "\tlinux\t/vmlinuz console=ttyS0\n\tinitrd\t/boot/initrd.img-1\n}\n"
          "menuentry 'a missing kernel' --id missing {\n\tlinux /boot/nothing-here\n}\n",
          f);
    fclose(f);
    snprintf(img, sizeof(img), "%s/disk.qcow2", dir);
    snprintf(root, sizeof(root), "%s/root", dir);
    make_disk(root, img);
}

static void test_boot_from_disk(void **state)
{
    (void)state;
    hv_need_kvm("test_boot_from_disk");
    char args[1024];
    static char out[1 << 16];
    /* The default entry, read-only (the image is never written). */
    snprintf(args, sizeof(args), "run --disk %s,readonly --timeout 60", img);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out,
                           "hvprof run: booting 'hvprof test guest' from /boot/grub/grub.cfg on "
                           "disk 0 partition 1: /vmlinuz ("));
    assert_non_null(strstr(out, "1 initrd(s) ("));
    assert_non_null(strstr(out, "command line: BOOT_IMAGE=/vmlinuz console=ttyS0\n"));
    assert_non_null(strstr(out, "hvprof-guest: status 0"));

    /* record: the recording names the disk's entry as its guest. */
    char rec[200];
    snprintf(rec, sizeof(rec), "%s/rec.fxt", dir);
    snprintf(args, sizeof(args),
             "record -o %s --disk %s,readonly --boot-entry guest-simple "
             "--timeout 60",
             rec, img);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "hvprof record: booting 'hvprof test guest'"));
    assert_non_null(strstr(out, "hvprof-guest: status 0"));
}

/* What is refused before a VM exists (no /dev/kvm needed). */
static void test_refused(void **state)
{
    (void)state;
    char args[1024];
    static char out[1 << 16];
    /* An entry whose kernel is not there: the entry, the menu and the file named. */
    snprintf(args, sizeof(args), "run --disk %s,readonly --boot-entry missing", img);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "hvprof run: --disk "));
    assert_non_null(strstr(out, "menu entry 'a missing kernel' (/boot/grub/grub.cfg on disk 0 "
                                "partition 1): kernel: disk 0 partition 1: no file "
                                "/boot/nothing-here"));
    snprintf(args, sizeof(args), "run --disk %s,readonly --boot-entry 5", img);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "no menu entry '5' in /boot/grub/grub.cfg on disk 0 partition 1; "
                                "the menu:\n  0     hvprof test guest\n  1     a missing kernel"));

    /* A disk with no menu: what was looked for, and what the disk holds. */
    char bare[256];
    snprintf(bare, sizeof(bare), "%s/bare.qcow2", dir);
    sh("rm -rf %s/bare && cp -a %s %s/bare && rm -r %s/bare/boot/grub", dir, root, dir, dir);
    snprintf(root, sizeof(root), "%s/bare", dir);
    make_disk(root, bare);
    snprintf(root, sizeof(root), "%s/root", dir);
    snprintf(args, sizeof(args), "run --disk %s,readonly", bare);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "no boot menu on the disk: no grub.cfg in /boot/grub"));
    assert_non_null(strstr(out, "disk 0 partition 1: ext4, read by inode"));
    /* --boot-entry without a disk to choose from. */
    assert_int_equal(run_hvprof("run --guest demo --boot-entry 0", out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--boot-entry chooses a disk's boot entry"));
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/hvprof-diskboot-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    make_guest_disk();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s HVPROF_BINARY\n", argv[0]);
        return 2;
    }
    hvprof_bin = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_boot_from_disk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
