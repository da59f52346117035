/* libext2fs over a qcow image: an io_manager (e2fsprogs' lib/ext2fs/ext2_io.h) whose channel
 * reads one partition's bytes through vmm/qcow. libext2fs opens a channel by name only, so the
 * name carries the address of the range it reads ("hvprof-qcow:0x..."), which the volume owns
 * for as long as its file system is open. Read-only: every write is refused. */
#include <errno.h>
#include <ext2fs/ext2_err.h>
#include <ext2fs/ext2fs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "diskfs/diskfs_priv.h"
#include "vmm/qcow/qcow_image.h"

#define NAME_PREFIX "hvprof-qcow:"

void diskfs_qcow_io_name(const struct diskfs_qcow_range *r, char *name, size_t len)
{
    snprintf(name, len, NAME_PREFIX "%p", (const void *)r);
}

static errcode_t qio_open(const char *name, int flags, io_channel *out)
{
    void *p = NULL;
    if (!name || strncmp(name, NAME_PREFIX, strlen(NAME_PREFIX)) ||
        sscanf(name + strlen(NAME_PREFIX), "%p", &p) != 1 || !p)
        return EXT2_ET_BAD_DEVICE_NAME;
    if (flags & IO_FLAG_RW)
        return EXT2_ET_RO_FILSYS;
    io_channel ch = calloc(1, sizeof(*ch));
    char *copy = strdup(name);
    if (!ch || !copy) {
        free(ch);
        free(copy);
        return EXT2_ET_NO_MEMORY;
    }
    ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
    ch->manager = &diskfs_qcow_io_manager;
    ch->name = copy;
    ch->block_size = 1024; /* libext2fs's first reads are of the superblock in 1 KiB blocks */
    ch->refcount = 1;
    ch->flags = flags;
    ch->private_data = p;
    *out = ch;
    return 0;
}

static errcode_t qio_close(io_channel ch)
{
    if (--ch->refcount > 0)
        return 0;
    free(ch->name);
    free(ch);
    return 0;
}

static errcode_t qio_set_blksize(io_channel ch, int blksize)
{
    if (blksize <= 0)
        return EXT2_ET_INVALID_ARGUMENT;
    ch->block_size = blksize;
    return 0;
}

/* count > 0: that many blocks; count < 0: -count bytes (ext2_io.h). */
static errcode_t qio_read_blk64(io_channel ch, unsigned long long block, int count, void *data)
{
    const struct diskfs_qcow_range *r = ch->private_data;
    uint64_t len =
        count < 0 ? (uint64_t) - (int64_t)count : (uint64_t)count * (uint64_t)ch->block_size;
    if (len == 0)
        return 0;
    /* Inside the partition: a hostile block number never reaches past it. */
    if (block > r->size / (uint64_t)ch->block_size)
        return EXT2_ET_SHORT_READ;
    uint64_t off = block * (uint64_t)ch->block_size;
    if (off > r->size || len > r->size - off)
        return EXT2_ET_SHORT_READ;
    struct iovec iov = {data, (size_t)len};
    struct hv_err err;
    if (!qcow_image_readv(r->qcow, &iov, 1, r->off + off, &err))
        return EIO;
    return 0;
}

static errcode_t qio_read_blk(io_channel ch, unsigned long block, int count, void *data)
{
    return qio_read_blk64(ch, block, count, data);
}

static errcode_t qio_write_blk64(io_channel ch, unsigned long long block, int count,
                                 const void *data)
{
    (void)ch, (void)block, (void)count, (void)data;
    return EXT2_ET_RO_FILSYS;
}

static errcode_t qio_write_blk(io_channel ch, unsigned long block, int count, const void *data)
{
    return qio_write_blk64(ch, block, count, data);
}

static errcode_t qio_write_byte(io_channel ch, unsigned long off, int count, const void *data)
{
    (void)ch, (void)off, (void)count, (void)data;
    return EXT2_ET_RO_FILSYS;
}

static errcode_t qio_flush(io_channel ch)
{
    (void)ch;
    return 0;
}

static errcode_t qio_set_option(io_channel ch, const char *opt, const char *arg)
{
    (void)ch, (void)opt, (void)arg;
    return EXT2_ET_INVALID_ARGUMENT; /* the range is in the name; no options are taken */
}

struct struct_io_manager diskfs_qcow_io_manager = {
    .magic = EXT2_ET_MAGIC_IO_MANAGER,
    .name = "hvprof qcow I/O manager",
    .open = qio_open,
    .close = qio_close,
    .set_blksize = qio_set_blksize,
    .read_blk = qio_read_blk,
    .write_blk = qio_write_blk,
    .flush = qio_flush,
    .write_byte = qio_write_byte,
    .set_option = qio_set_option,
    .read_blk64 = qio_read_blk64,
    .write_blk64 = qio_write_blk64,
};
