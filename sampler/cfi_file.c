/* A module's DWARF CFI from its file, for tables the guest's memory does not show whole
 * (`record --symbols DIR`: pages of .eh_frame the guest never touched are not mapped; docs/cfi.md).
 * The file is found by build-id by the caller; here only its program headers (ELF-64 object
 * file format, "Program header") and the PT_LOAD segment that holds PT_GNU_EH_FRAME are read,
 * bounded, with plain reads: a file that is not a regular ELF64 x86-64 file is refused. */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elf_header.h"
#include "guestwalk/cfi.h"
#include "sampler/cfi_file.h"

#define MAX_PHDRS 256

static bool read_at(int fd, uint64_t off, void *dst, size_t len)
{
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
    struct cfi_table *t = NULL;
    uint8_t *data = NULL;
    struct stat st;
    Elf64_Ehdr eh;
    Elf64_Phdr ph[MAX_PHDRS];
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        hv_errf(err, "%s: not a regular file", path);
        goto out;
    }
    uint8_t raw[sizeof(Elf64_Ehdr)];
    struct hv_elf_want want = {.max_phnum = MAX_PHDRS, .extent = (uint64_t)st.st_size};
    if (!read_at(fd, 0, raw, sizeof(raw)) ||
        hv_elf64_header(raw, sizeof(raw), &want, &eh) != HV_ELF_OK ||
        !read_at(fd, eh.e_phoff, ph, eh.e_phnum * sizeof(Elf64_Phdr))) {
        hv_errf(err, "%s: not an x86-64 ELF64 file with program headers", path);
        goto out;
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
        hv_errf(err, "%s: no .eh_frame_hdr in a loaded segment", path);
        goto out;
    }
    if (seg->p_filesz > CFI_MAX_INPUT || seg->p_offset > (uint64_t)st.st_size ||
        seg->p_filesz > (uint64_t)st.st_size - seg->p_offset) {
        hv_errf(err, "%s: its unwind-table segment lies outside the file", path);
        goto out;
    }
    data = malloc(seg->p_filesz ? seg->p_filesz : 1);
    t = calloc(1, sizeof(*t));
    if (!data || !t) {
        hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    if (!read_at(fd, seg->p_offset, data, seg->p_filesz)) {
        hv_errf_errno(err, "%s: read", path);
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
    close(fd);
    return t;
}
