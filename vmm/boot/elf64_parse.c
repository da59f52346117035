/* ELF64 header and program-header validation (System V gABI, "ELF Header" and "Program
 * Header"; x86-64 psABI for EM_X86_64): the file header through common/elf_header.h, the program
 * headers here. Every offset is checked against the file size. */
#include <elf.h>
#include <inttypes.h>
#include <string.h>

#include "common/elf_header.h"
#include "vmm/boot/elf64.h"
#include "vmm/boot/layout.h"

static int overlaps(const struct elf64_segment *a, const struct elf64_segment *b)
{
    return a->paddr < b->paddr + b->memsz && b->paddr < a->paddr + a->memsz;
}

static int check_segment(const Elf64_Phdr *ph, unsigned idx, size_t len, struct hv_err *err)
{
    if (ph->p_filesz > ph->p_memsz)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "segment %u: p_filesz 0x%" PRIx64 " > p_memsz 0x%" PRIx64, idx,
                       (uint64_t)ph->p_filesz, (uint64_t)ph->p_memsz);
    if (ph->p_offset > len || ph->p_filesz > len - ph->p_offset)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated ELF: segment %u data [0x%" PRIx64 ", +0x%" PRIx64
                       ") is past the end of the file (%zu bytes)",
                       idx, (uint64_t)ph->p_offset, (uint64_t)ph->p_filesz, len);
    if (ph->p_paddr < HVPROF_KERNEL_MIN)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "segment %u at 0x%" PRIx64 " is below 1 MiB (the boot area)", idx,
                       (uint64_t)ph->p_paddr);
    if (ph->p_paddr > UINT64_MAX - ph->p_memsz)
        return hv_errk(err, HV_ERR_CORRUPT, "segment %u: p_paddr + p_memsz overflows", idx);
    return 0;
}

/* The build-id identifies the kernel in a recording, so `report` finds its symbol file. A note
 * outside the file is ignored, not an error: the kernel still boots without one. */
static void find_build_id(const uint8_t *img, size_t len, const Elf64_Ehdr *eh,
                          struct elf64_info *out)
{
    for (unsigned i = 0; i < eh->e_phnum && !out->build_id_len; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, img + eh->e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
        if (ph.p_type == PT_NOTE && ph.p_offset <= len && ph.p_filesz <= len - ph.p_offset)
            out->build_id_len =
                elf_notes_find_build_id(img + ph.p_offset, ph.p_filesz, out->build_id);
    }
}

int elf64_parse(const uint8_t *img, size_t len, struct elf64_info *out, struct hv_err *err)
{
    Elf64_Ehdr eh;
    struct hv_elf_want want = {.exec_only = true, .max_phnum = ELF64_MAX_PHNUM, .extent = len};
    if (hv_elf64_header_err(img, len, &want, &eh, err) < 0)
        return -1;

    memset(out, 0, sizeof(*out));
    out->entry = eh.e_entry;
    out->lowest = UINT64_MAX;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, img + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
            continue;
        if (check_segment(&ph, i, len, err))
            return -1;
        if (out->nseg == ELF64_MAX_SEGMENTS)
            return hv_errk(err, HV_ERR_LIMIT, "more than %u PT_LOAD segments", ELF64_MAX_SEGMENTS);
        struct elf64_segment s = {.paddr = ph.p_paddr,
                                  .memsz = ph.p_memsz,
                                  .filesz = ph.p_filesz,
                                  .offset = ph.p_offset,
                                  .vaddr = ph.p_vaddr,
                                  .flags = ph.p_flags & (PF_R | PF_W | PF_X)};
        for (unsigned j = 0; j < out->nseg; j++)
            if (overlaps(&s, &out->seg[j]))
                return hv_errk(err, HV_ERR_CORRUPT,
                               "segment %u [0x%" PRIx64 ", 0x%" PRIx64
                               ") overlaps another PT_LOAD segment",
                               i, s.paddr, s.paddr + s.memsz);
        out->seg[out->nseg++] = s;
        if (s.paddr < out->lowest)
            out->lowest = s.paddr;
        if (s.paddr + s.memsz > out->end)
            out->end = s.paddr + s.memsz;
    }
    if (out->nseg == 0)
        return hv_errk(err, HV_ERR_CORRUPT, "no loadable (PT_LOAD) segments");
    find_build_id(img, len, &eh, out);

    for (unsigned j = 0; j < out->nseg; j++) {
        const struct elf64_segment *s = &out->seg[j];
        if (out->entry >= s->paddr && out->entry - s->paddr < s->filesz)
            return 0;
    }
    return hv_errk(err, HV_ERR_CORRUPT,
                   "entry point 0x%" PRIx64 " is not inside a loaded segment's file data",
                   out->entry);
}
