/* diskfs/: ext4 images made by mkfs.ext4 -d from a directory of known files, whole-disk and in a
 * GPT partition (sfdisk), read back by the inode numbers debugfs reports; the volumes libblkid
 * finds; bad inodes, an unreadable partition and a damaged file system refused with a message.
 * mkfs.ext4, debugfs and sfdisk must be installed (scripts/deps.sh): without them this fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/files.h"
#include "diskfs/diskfs.h"

#define UUID_TEXT "0b9bb8a6-3f5e-4c1d-9a2e-7d1c5e8f4a21"
static const uint8_t uuid[16] = {0x0b, 0x9b, 0xb8, 0xa6, 0x3f, 0x5e, 0x4c, 0x1d,
                                 0x9a, 0x2e, 0x7d, 0x1c, 0x5e, 0x8f, 0x4a, 0x21};

static char dir[256];

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

/* The inode debugfs gives for `path` in `image`. */
static uint64_t inode_of(const char *image, const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "debugfs -R 'stat %s' '%s' 2>/dev/null | sed -n 's/^Inode: \\([0-9]*\\).*/\\1/p'",
             path, image);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    unsigned long long ino = 0;
    int got = fscanf(p, "%llu", &ino);
    pclose(p);
    if (got != 1 || !ino)
        fail_msg("debugfs found no inode for %s in %s", path, image);
    return ino;
}

static uint8_t *host_file(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/root/%s", dir, name);
    uint8_t *buf;
    struct hv_err err;
    if (hv_read_file(path, 64u << 20, &buf, len, &err) < 0)
        fail_msg("%s", err.msg);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/hvprof-diskfs-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    /* A program-sized file of varied bytes, one over several extents' worth, a text, a link. */
    sh("mkdir -p %s/root/usr/bin && head -c 300000 /dev/urandom >%s/root/usr/bin/prog && "
       "head -c 5000000 /dev/urandom >%s/root/big && echo hello >%s/root/small.txt && "
       "ln -s usr/bin/prog %s/root/link",
       dir, dir, dir, dir, dir);
    for (const char *t = "mkfs.ext4 debugfs sfdisk"; *t;) {
        size_t n = strcspn(t, " ");
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "command -v %.*s >/dev/null", (int)n, t);
        if (system(cmd) != 0)
            fail_msg("%.*s is not installed (scripts/deps.sh installs it)", (int)n, t);
        t += n + (t[n] == ' ');
    }
    sh("mkfs.ext4 -q -F -U " UUID_TEXT " -d %s/root %s/fs.img 16M", dir, dir);
    /* The same file system in partition 1 of a GPT disk; partition 2 left blank. */
    sh("truncate -s 40M %s/disk.img && printf 'label: gpt\\nstart=2048, size=32768\\n"
       "start=36864, size=8192\\n' | sfdisk -q %s/disk.img && "
       "dd if=%s/fs.img of=%s/disk.img bs=512 seek=2048 conv=notrunc status=none",
       dir, dir, dir, dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void check_read(struct diskfs_volume *v, const char *image, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "/%s", name);
    uint64_t ino = inode_of(image, path);
    size_t len;
    uint8_t *want = host_file(name, &len);
    struct hv_err err = {0};
    uint64_t size = 0;
    assert_int_equal(diskfs_file_size(v, ino, &size, &err), 0);
    assert_int_equal(size, len);
    uint8_t *buf = malloc(len + 100);
    size_t got = 0;
    assert_int_equal(diskfs_read(v, ino, 0, buf, len + 100, &got, &err), 0);
    assert_int_equal(got, len); /* short at the end */
    assert_memory_equal(buf, want, len);
    /* From the middle, across block boundaries. */
    assert_int_equal(diskfs_read(v, ino, 4000, buf, 10000, &got, &err), 0);
    assert_int_equal(got, len <= 4000 ? 0 : len < 14000 ? len - 4000 : 10000);
    assert_memory_equal(buf, want + 4000, got);
    /* At and past the end: nothing. */
    assert_int_equal(diskfs_read(v, ino, len, buf, 10, &got, &err), 0);
    assert_int_equal(got, 0);
    assert_int_equal(diskfs_read(v, ino, len + 12345, buf, 10, &got, &err), 0);
    assert_int_equal(got, 0);
    free(buf);
    free(want);
}

static void test_whole_disk(void **state)
{
    (void)state;
    char image[300];
    snprintf(image, sizeof(image), "%s/fs.img", dir);
    const char *images[] = {image};
    struct diskfs d;
    struct hv_err err = {0};
    assert_int_equal(diskfs_open(&d, images, NULL, 1, &err), 0);
    assert_int_equal(d.vols.n, 1);
    struct diskfs_volume *v = &d.vols.v[0];
    assert_string_equal(v->where, "disk 0");
    assert_string_equal(v->type, "ext4");
    assert_true(v->has_uuid);
    assert_memory_equal(v->uuid, uuid, 16);
    assert_ptr_equal(diskfs_find_uuid(&d, uuid), v);
    check_read(v, image, "usr/bin/prog");
    check_read(v, image, "big");
    check_read(v, image, "small.txt");
    char text[256];
    diskfs_describe(&d, text, sizeof(text));
    assert_string_equal(text, "disk 0: ext4, read by inode\n");
    diskfs_close(&d);
    /* The same file system in a qcow2 image (qemu-img): the same files under the same inodes,
     * read through the image's clusters. */
    char q2[320], cmd[800];
    snprintf(q2, sizeof(q2), "%s/fs.qcow2", dir);
    snprintf(cmd, sizeof(cmd), "qemu-img convert -q -f raw -O qcow2 '%s' '%s'", image, q2);
    if (system(cmd) != 0)
        fail_msg("qemu-img (qemu-utils) is needed: scripts/deps.sh installs it");
    images[0] = q2;
    assert_int_equal(diskfs_open(&d, images, NULL, 1, &err), 0);
    assert_int_equal(d.vols.n, 1);
    v = &d.vols.v[0];
    assert_string_equal(v->type, "ext4");
    assert_ptr_equal(diskfs_find_uuid(&d, uuid), v);
    check_read(v, image, "usr/bin/prog");
    check_read(v, image, "big");
    diskfs_describe(&d, text, sizeof(text));
    assert_string_equal(text, "disk 0: ext4, read by inode\n");
    diskfs_close(&d);
    unlink(q2);
}

/* A GPT disk as a compressed qcow2 overlay on a qcow2 backing file, the way cloud images are
 * used: partitions found through the image's reader, files read across the chain. A damaged
 * qcow2 image gives a volume that says why. */
static void test_qcow2_partitioned(void **state)
{
    (void)state;
    char fs[300], base[300], top[300], cmd[1200];
    snprintf(fs, sizeof(fs), "%s/fs.img", dir);
    snprintf(base, sizeof(base), "%s/base.qcow2", dir);
    snprintf(top, sizeof(top), "%s/top.qcow2", dir);
    snprintf(cmd, sizeof(cmd),
             "qemu-img convert -q -c -f raw -O qcow2 '%s/disk.img' '%s' && "
             "qemu-img create -q -f qcow2 -F qcow2 -b base.qcow2 '%s' >/dev/null",
             dir, base, top);
    if (system(cmd) != 0)
        fail_msg("qemu-img failed: %s", cmd);
    const char *images[] = {top};
    struct diskfs d;
    struct hv_err err = {0};
    assert_int_equal(diskfs_open(&d, images, NULL, 1, &err), 0);
    assert_int_equal(d.vols.n, 2);
    struct diskfs_volume *p1 = &d.vols.v[0];
    assert_string_equal(p1->where, "disk 0 partition 1");
    assert_int_equal(p1->offset, 2048 * 512);
    assert_string_equal(p1->type, "ext4");
    assert_non_null(p1->fs);
    assert_string_equal(d.vols.v[1].why, "no file system found");
    check_read(p1, fs, "usr/bin/prog");
    check_read(p1, fs, "big");
    diskfs_close(&d);
    /* Its L1 table's offset (header bytes 40..47, docs/interop/qcow2.txt) past the file's end:
     * QEMU's check refuses it, and the volume says so. */
    snprintf(cmd, sizeof(cmd),
             "printf '\\177\\377\\377\\377\\377\\377\\000\\000' | "
             "dd of='%s' bs=1 seek=40 conv=notrunc status=none",
             base);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
    images[0] = base;
    assert_int_equal(diskfs_open(&d, images, NULL, 1, &err), 0);
    assert_int_equal(d.vols.n, 1);
    assert_null(d.vols.v[0].fs);
    assert_non_null(strstr(d.vols.v[0].why, "QEMU finds the image unreadable"));
    char text[512];
    diskfs_describe(&d, text, sizeof(text));
    assert_non_null(strstr(text, "disk 0: not read ("));
    diskfs_close(&d);
    unlink(top);
    unlink(base);
}

static void test_partitioned(void **state)
{
    (void)state;
    char fs[300], disk[300];
    snprintf(fs, sizeof(fs), "%s/fs.img", dir);
    snprintf(disk, sizeof(disk), "%s/disk.img", dir);
    const char *images[] = {fs, disk};
    struct diskfs d;
    struct hv_err err = {0};
    assert_int_equal(diskfs_open(&d, images, NULL, 2, &err), 0);
    assert_int_equal(d.vols.n, 3);
    struct diskfs_volume *p1 = &d.vols.v[1], *p2 = &d.vols.v[2];
    assert_string_equal(p1->where, "disk 1 partition 1");
    assert_int_equal(p1->offset, 2048 * 512);
    assert_int_equal(p1->size, 32768 * 512);
    assert_string_equal(p1->type, "ext4");
    assert_non_null(p1->fs);
    assert_string_equal(p2->where, "disk 1 partition 2");
    assert_null(p2->fs);
    assert_string_equal(p2->why, "no file system found");
    /* Two volumes with the UUID (the same file system twice): the first readable one. */
    assert_ptr_equal(diskfs_find_uuid(&d, uuid), &d.vols.v[0]);
    /* The partition's file system holds the same files under the same inodes. */
    check_read(p1, fs, "usr/bin/prog");
    uint8_t other[16] = {1};
    assert_null(diskfs_find_uuid(&d, other));
    /* A partition without a file system is not read. */
    size_t got;
    uint8_t b[4];
    assert_int_equal(diskfs_read(p2, 12, 0, b, 4, &got, &err), -1);
    assert_int_equal(err.kind, HV_ERR_UNSUPPORTED);
    char text[512];
    diskfs_describe(&d, text, sizeof(text));
    assert_string_equal(text, "disk 0: ext4, read by inode\n"
                              "disk 1 partition 1: ext4, read by inode\n"
                              "disk 1 partition 2: not read (no file system found)\n");
    diskfs_close(&d);
}

static void test_bad_inodes(void **state)
{
    (void)state;
    char image[300];
    snprintf(image, sizeof(image), "%s/fs.img", dir);
    const char *images[] = {image};
    struct diskfs d;
    struct hv_err err = {0};
    assert_int_equal(diskfs_open(&d, images, NULL, 1, &err), 0);
    struct diskfs_volume *v = &d.vols.v[0];
    uint8_t b[16];
    size_t got;
    uint64_t size;
    /* The root directory, a symbolic link, inode 0, one past the last inode, 2^63. */
    uint64_t bad[] = {2,         inode_of(image, "/link"), inode_of(image, "/usr"), 0, 1ull << 40,
                      1ull << 63};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        assert_int_equal(diskfs_read(v, bad[i], 0, b, sizeof(b), &got, &err), -1);
        assert_int_equal(err.kind, HV_ERR_CORRUPT);
        assert_int_equal(got, 0);
        assert_int_equal(diskfs_file_size(v, bad[i], &size, &err), -1);
    }
    assert_non_null(strstr(err.msg, "no inode"));
    diskfs_close(&d);
}

static void test_damaged(void **state)
{
    (void)state;
    /* A super block libblkid still takes for ext4 (no metadata checksum to disagree) with
     * s_inodes_per_group zero (offset 40 in the super block at 1024): libext2fs refuses it with
     * its message. */
    char image[300], missing[300];
    snprintf(image, sizeof(image), "%s/damaged.img", dir);
    sh("mkfs.ext4 -q -F -O ^metadata_csum -U " UUID_TEXT " -d %s/root %s 16M >/dev/null && "
       "printf '\\000\\000\\000\\000' | dd of=%s bs=1 seek=1064 conv=notrunc status=none",
       dir, image, image);
    const char *images[] = {image};
    struct diskfs d;
    struct hv_err err = {0};
    assert_int_equal(diskfs_open(&d, images, NULL, 1, &err), 0);
    assert_int_equal(d.vols.n, 1);
    assert_null(d.vols.v[0].fs);
    assert_non_null(strstr(d.vols.v[0].why, "libext2fs: "));
    assert_null(diskfs_find_uuid(&d, uuid));
    diskfs_close(&d);
    /* No image: an error naming it. */
    snprintf(missing, sizeof(missing), "%s/none.img", dir);
    images[0] = missing;
    assert_int_equal(diskfs_open(&d, images, NULL, 1, &err), -1);
    assert_int_equal(err.kind, HV_ERR_OS);
    assert_non_null(strstr(err.msg, "none.img"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_disk),        cmocka_unit_test(test_partitioned),
        cmocka_unit_test(test_qcow2_partitioned), cmocka_unit_test(test_bad_inodes),
        cmocka_unit_test(test_damaged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
