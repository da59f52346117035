/* One reader of x86-64 ELF64 file headers for every part of hvprof that meets one in bytes it
 * did not check (guest memory, a binary named on the command line, a kernel image): the boot
 * loader (vmm/boot/elf64_parse.c), module discovery in guest memory (guestos/generic/
 * elf_image.c) and the CFI of --symbols files (sampler/parts/cfi_file.c). Symbol files go through
 * libelf (symbolize/), which reads the same fields for itself.
 *
 * What it checks (System V ABI, "ELF Header"; the x86-64 psABI for EM_X86_64): the magic, class
 * ELFCLASS64, data ELFDATA2LSB, machine EM_X86_64, the type the caller accepts, e_phentsize of
 * an Elf64_Phdr, 1..max program headers, and when the caller knows the bytes' extent, that the
 * program header table lies inside it. */
#pragma once

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* What is wrong with a header; HV_ELF_OK when nothing. */
enum hv_elf_bad {
    HV_ELF_OK,
    HV_ELF_SHORT,      /* fewer bytes than an ELF header */
    HV_ELF_NOT_ELF,    /* no \177ELF magic */
    HV_ELF_NOT_64,     /* another class */
    HV_ELF_NOT_LE,     /* big-endian */
    HV_ELF_NOT_X86_64, /* another machine */
    HV_ELF_TYPE,       /* a type the caller does not accept */
    HV_ELF_PHENTSIZE,  /* program header entries not Elf64_Phdr */
    HV_ELF_PHNUM,      /* no program headers, or more than the caller's bound */
    HV_ELF_PHOFF,      /* the program header table past the bytes' extent */
};

/* What the caller accepts. */
struct hv_elf_want {
    bool exec_only;     /* ET_EXEC only (a kernel); else ET_EXEC or ET_DYN (anything loaded) */
    unsigned max_phnum; /* 1..max_phnum program headers */
    uint64_t extent;    /* bytes the program header table must lie in; 0: not known */
};

/* Check the header in bytes[0..n) and copy it to *out (also when it is bad, as far as n goes:
 * callers name the fields in their messages). */
enum hv_elf_bad hv_elf64_header(const void *bytes, size_t n, const struct hv_elf_want *want,
                                Elf64_Ehdr *out);

/* The same, with what is wrong as a message: "not an ELF64 file (class 1)", "ELF machine 3 is
 * not x86-64", "truncated ELF: program headers at 0x40 are past the end of the file", ... */
int hv_elf64_header_err(const void *bytes, size_t n, const struct hv_elf_want *want,
                        Elf64_Ehdr *out, struct hv_err *err);

/* Whether bytes[0..n) start like an ELF64 file (magic and class): which loader to try. */
bool hv_elf_is_elf64(const void *bytes, size_t n);
