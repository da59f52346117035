/* ext2, ext3 and ext4 through e2fsprogs' libext2fs: a file system opened read-only at its
 * partition's offset in the image (unix_io's "offset=" option; a qcow image's through
 * ext_qcow_io.c), files read by inode number through the library's own block mapping (extents
 * or block maps). */
#include <et/com_err.h>
#include <ext2fs/ext2_err.h>
#include <ext2fs/ext2fs.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskfs/diskfs_priv.h"

/* The file types whose contents can be read (docs/diskfs.md). */
static bool is_ext(const char *type)
{
    return !strcmp(type, "ext2") || !strcmp(type, "ext3") || !strcmp(type, "ext4");
}

static pthread_once_t messages_once = PTHREAD_ONCE_INIT;
static void messages_init(void)
{
    initialize_ext2_error_table(); /* libext2fs's error texts for error_message() */
}

void diskfs_ext_open(struct diskfs_volume *v, const char *path, struct qcow_image *qcow)
{
    if (!is_ext(v->type)) {
        snprintf(v->why, sizeof(v->why), "%s: hvprof reads files of ext2, ext3 and ext4",
                 v->type[0] ? v->type : "unknown type");
        return;
    }
    pthread_once(&messages_once, messages_init);
    char opts[64], name[64];
    snprintf(opts, sizeof(opts), "offset=%" PRIu64, v->offset);
    io_manager io = unix_io_manager;
    if (qcow) {
        /* The partition's bytes through the qcow image's reader; its range is the channel's. */
        struct diskfs_qcow_range *r = malloc(sizeof(*r));
        if (!r) {
            snprintf(v->why, sizeof(v->why), "out of memory");
            return;
        }
        *r = (struct diskfs_qcow_range){qcow, v->offset, v->size};
        v->io = r;
        diskfs_qcow_io_name(r, name, sizeof(name));
        path = name;
        opts[0] = 0;
        io = &diskfs_qcow_io_manager;
    }
    ext2_filsys fs = NULL;
    /* Read-only (no EXT2_FLAG_RW): the library never writes; checksums are checked. */
    errcode_t rc = ext2fs_open2(path, opts[0] ? opts : NULL, EXT2_FLAG_64BITS, 0, 0, io, &fs);
    if (rc) {
        snprintf(v->why, sizeof(v->why), "libext2fs: %s", error_message(rc));
        return;
    }
    v->fs = fs;
}

void diskfs_ext_close(struct diskfs_volume *v)
{
    if (v->fs) {
        ext2_filsys fs = v->fs;
        ext2fs_close_free(&fs);
        v->fs = NULL;
    }
    free(v->io);
    v->io = NULL;
}

/* The inode of regular file `ino`, checked. */
static int regular_inode(struct diskfs_volume *v, uint64_t ino, struct ext2_inode *in,
                         struct hv_err *err)
{
    ext2_filsys fs = v->fs;
    if (!fs)
        return hv_errk(err, HV_ERR_UNSUPPORTED, "%s: not readable (%s)", v->where, v->why);
    if (ino < EXT2_ROOT_INO || ino > fs->super->s_inodes_count)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: no inode %" PRIu64 " (the file system has %u)",
                       v->where, ino, fs->super->s_inodes_count);
    errcode_t rc = ext2fs_read_inode(fs, (ext2_ino_t)ino, in);
    if (rc)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: inode %" PRIu64 ": %s", v->where, ino,
                       error_message(rc));
    if (!LINUX_S_ISREG(in->i_mode))
        return hv_errk(err, HV_ERR_CORRUPT, "%s: inode %" PRIu64 " is not a regular file", v->where,
                       ino);
    return 0;
}

int diskfs_file_size(struct diskfs_volume *v, uint64_t ino, uint64_t *size, struct hv_err *err)
{
    struct ext2_inode in;
    if (regular_inode(v, ino, &in, err) < 0)
        return -1;
    *size = EXT2_I_SIZE(&in);
    return 0;
}

int diskfs_read(struct diskfs_volume *v, uint64_t ino, uint64_t off, void *buf, size_t len,
                size_t *got, struct hv_err *err)
{
    *got = 0;
    struct ext2_inode in;
    if (regular_inode(v, ino, &in, err) < 0)
        return -1;
    /* What the inode says the file holds, and no more: a read from its end on reads nothing. */
    uint64_t size = EXT2_I_SIZE(&in);
    if (off >= size)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    ext2_file_t f;
    errcode_t rc = ext2fs_file_open2(v->fs, (ext2_ino_t)ino, &in, 0, &f);
    if (rc)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: inode %" PRIu64 ": %s", v->where, ino,
                       error_message(rc));
    rc = ext2fs_file_llseek(f, off, EXT2_SEEK_SET, NULL);
    while (!rc && *got < len) {
        /* ext2fs_file_read takes an unsigned int: at most 1 MiB a call. */
        size_t want = len - *got < (1u << 20) ? len - *got : (1u << 20);
        unsigned int n = 0;
        rc = ext2fs_file_read(f, (char *)buf + *got, (unsigned int)want, &n);
        if (!rc && n == 0)
            break; /* the file's end */
        *got += n;
    }
    ext2fs_file_close(f);
    if (rc)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: inode %" PRIu64 " at %" PRIu64 ": %s", v->where,
                       ino, off, error_message(rc));
    return 0;
}

int diskfs_lookup(struct diskfs_volume *v, const char *path, uint64_t *ino, struct hv_err *err)
{
    ext2_filsys fs = v->fs;
    if (!fs)
        return hv_errk(err, HV_ERR_UNSUPPORTED, "%s: not readable (%s)", v->where, v->why);
    ext2_ino_t found = 0;
    /* Relative to the root: "/boot/vmlinuz" and "boot/vmlinuz" alike. */
    while (*path == '/')
        path++;
    if (!*path) {
        *ino = EXT2_ROOT_INO;
        return 0;
    }
    errcode_t rc = ext2fs_namei_follow(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, path, &found);
    if (rc == EXT2_ET_FILE_NOT_FOUND || rc == EXT2_ET_NO_DIRECTORY)
        return 1;
    if (rc)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: %s: %s", v->where, path, error_message(rc));
    *ino = found;
    return 0;
}

int diskfs_read_path(struct diskfs_volume *v, const char *path, size_t max, uint8_t **buf,
                     size_t *len, struct hv_err *err)
{
    *buf = NULL;
    *len = 0;
    uint64_t ino, size;
    int rc = diskfs_lookup(v, path, &ino, err);
    if (rc)
        return rc < 0 ? -1 : hv_errk(err, HV_ERR_CORRUPT, "%s: no file %s", v->where, path);
    if (diskfs_file_size(v, ino, &size, err) < 0)
        return -1;
    if (size > max)
        return hv_errk(err, HV_ERR_LIMIT, "%s: %s is %" PRIu64 " bytes, more than the %zu read",
                       v->where, path, size, max);
    uint8_t *b = malloc((size_t)size + 1);
    if (!b)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for %s (%" PRIu64 " bytes)", path,
                       size);
    size_t got = 0;
    if (diskfs_read(v, ino, 0, b, (size_t)size, &got, err) < 0) {
        free(b);
        return -1;
    }
    b[got] = 0;
    *buf = b;
    *len = got;
    return 0;
}

struct list_ctx {
    char **names;
    unsigned max, n;
    bool nomem;
};

static int list_one(struct ext2_dir_entry *de, int offset, int blocksize, char *blk, void *priv)
{
    (void)offset, (void)blocksize, (void)blk;
    struct list_ctx *c = priv;
    unsigned len = ext2fs_dirent_name_len(de);
    if ((len == 1 && de->name[0] == '.') || (len == 2 && !memcmp(de->name, "..", 2)))
        return 0;
    if (c->n >= c->max)
        return DIRENT_ABORT;
    char *name = strndup(de->name, len);
    if (!name) {
        c->nomem = true;
        return DIRENT_ABORT;
    }
    c->names[c->n++] = name;
    return 0;
}

int diskfs_list_dir(struct diskfs_volume *v, const char *path, char **names, unsigned max,
                    unsigned *n, struct hv_err *err)
{
    *n = 0;
    uint64_t ino;
    int rc = diskfs_lookup(v, path, &ino, err);
    if (rc)
        return rc < 0 ? -1 : hv_errk(err, HV_ERR_CORRUPT, "%s: no directory %s", v->where, path);
    struct list_ctx c = {names, max, 0, false};
    errcode_t e = ext2fs_dir_iterate(v->fs, (ext2_ino_t)ino, 0, NULL, list_one, &c);
    *n = c.n;
    if (c.nomem)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory listing %s", path);
    if (e)
        return hv_errk(err, HV_ERR_CORRUPT, "%s: %s: %s", v->where, path, error_message(e));
    return 0;
}
