/* A module's DWARF CFI from its file, for tables the guest's memory does not show whole (pages of
 * .eh_frame the guest never touched are not mapped; docs/cfi.md): a host file (`record --symbols
 * DIR`) or a file of a disk hvprof serves (diskfs/). Only the program headers (ELF-64 object file
 * format, "Program header"), the PT_NOTE segments (for the build-id) and the PT_LOAD segment that
 * holds PT_GNU_EH_FRAME are read, bounded: a file that is not a regular ELF64 x86-64 file is
 * refused. */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elf_header.h"
#include "common/elfnote.h"
#include "guestwalk/cfi.h"
#include "sampler/parts/cfi_file.h"

#define MAX_PHDRS     256
#define MAX_NOTE_SIZE 4096 /* a PT_NOTE segment read for the build-id, at most */

/* Whether the file's build-id note is `id`. */
static bool same_build(const struct cfi_file_reader *r, const Elf64_Phdr *ph, unsigned n,
                       const uint8_t *id, uint32_t id_len)
{
    uint8_t notes[MAX_NOTE_SIZE], got[ELF_BUILD_ID_MAX];
    for (unsigned i = 0; i < n; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_offset > r->size)
            continue;
        size_t len = ph[i].p_filesz < sizeof(notes) ? (size_t)ph[i].p_filesz : sizeof(notes);
        if (len > r->size - ph[i].p_offset || !r->read(r->ctx, ph[i].p_offset, notes, len))
            continue;
        uint32_t got_len = elf_notes_find_build_id(notes, len, got);
        if (got_len)
            return got_len == id_len && !memcmp(got, id, id_len);
    }
    return false;
}

struct cfi_table *cfi_table_from_reader(const struct cfi_file_reader *r, const uint8_t *build_id,
                                        uint32_t build_id_len, struct hv_err *err)
{
    struct cfi_table *t = NULL;
    uint8_t *data = NULL;
    Elf64_Ehdr eh;
    Elf64_Phdr ph[MAX_PHDRS];
    uint8_t raw[sizeof(Elf64_Ehdr)];
    struct hv_elf_want want = {.max_phnum = MAX_PHDRS, .extent = r->size};
    if (r->size < sizeof(raw) || !r->read(r->ctx, 0, raw, sizeof(raw)) ||
        hv_elf64_header(raw, sizeof(raw), &want, &eh) != HV_ELF_OK ||
        !r->read(r->ctx, eh.e_phoff, ph, eh.e_phnum * sizeof(Elf64_Phdr))) {
        hv_errk(err, HV_ERR_CORRUPT, "%s: not an x86-64 ELF64 file with program headers", r->name);
        return NULL;
    }
    if (build_id_len && !same_build(r, ph, eh.e_phnum, build_id, build_id_len)) {
        hv_errk(err, HV_ERR_CORRUPT, "%s: another build than the guest's (build-id differs)",
                r->name);
        return NULL;
    }
    const Elf64_Phdr *hdr = NULL, *seg = NULL;
    uint64_t lo = UINT64_MAX;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type == PT_GNU_EH_FRAME && !hdr)
            hdr = &ph[i];
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo)
            lo = ph[i].p_vaddr;
    }
    for (unsigned i = 0; hdr && i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && hdr->p_vaddr >= ph[i].p_vaddr &&
            hdr->p_vaddr - ph[i].p_vaddr < ph[i].p_filesz)
            seg = &ph[i];
    if (!seg) {
        hv_errk(err, HV_ERR_CORRUPT, "%s: no .eh_frame_hdr in a loaded segment", r->name);
        return NULL;
    }
    if (seg->p_filesz > CFI_MAX_INPUT || seg->p_offset > r->size ||
        seg->p_filesz > r->size - seg->p_offset) {
        hv_errk(err, HV_ERR_CORRUPT, "%s: its unwind-table segment lies outside the file", r->name);
        return NULL;
    }
    data = malloc(seg->p_filesz ? seg->p_filesz : 1);
    t = calloc(1, sizeof(*t));
    if (!data || !t) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    if (!r->read(r->ctx, seg->p_offset, data, seg->p_filesz)) {
        hv_errk(err, HV_ERR_OS, "%s: its unwind-table segment cannot be read", r->name);
        goto fail;
    }
    struct cfi_src src = {
        .image_base = lo & ~0xfffull, .vaddr = seg->p_vaddr, .data = data, .len = seg->p_filesz};
    if (cfi_compile(&src, hdr->p_vaddr, 0, t, err) == 0)
        goto out;
fail:
    free(t);
    t = NULL;
out:
    free(data);
    return t;
}

static bool fd_read(void *ctx, uint64_t off, void *dst, size_t len)
{
    int fd = *(int *)ctx;
    uint8_t *p = dst;
    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n <= 0)
            return false;
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return true;
}

struct cfi_table *cfi_table_from_file(const char *path, struct hv_err *err)
{
    /* O_NONBLOCK: a FIFO planted in a symbol directory must not block the drain thread. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        hv_errf_errno(err, "%s", path);
        return NULL;
    }
    struct stat st;
    struct cfi_table *t = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        hv_errk(err, HV_ERR_UNSUPPORTED, "%s: not a regular file", path);
    else {
        struct cfi_file_reader r = {
            .name = path, .size = (uint64_t)st.st_size, .read = fd_read, .ctx = &fd};
        t = cfi_table_from_reader(&r, NULL, 0, err);
    }
    close(fd);
    return t;
}
