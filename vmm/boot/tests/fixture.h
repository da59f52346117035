/* Test helpers: guest RAM laid out like the VMM does, and synthetic kernel images. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vmm/boot/boot.h"

struct test_ram {
    struct gmem gmem;
    struct ram_region region[2];
    uint8_t *host[2];
    unsigned n;
};

/* mmap (MAP_NORESERVE, so multi-GiB layouts cost only touched pages) and register every region
 * layout_ram_regions() gives for mem_bytes. Aborts the test on failure. */
void test_ram_init(struct test_ram *r, uint64_t mem_bytes);
void test_ram_free(struct test_ram *r);
/* Host pointer for [gpa, gpa + len), asserting it is in RAM. */
uint8_t *test_ram_at(struct test_ram *r, uint64_t gpa, uint64_t len);

/* A minimal valid bzImage: setup sectors + payload; fields as in boot.rst. */
struct bz_spec {
    uint8_t setup_sects; /* as stored: 0 means 4 */
    size_t payload_size; /* multiple of 16 */
    uint16_t version;
    uint16_t xloadflags;
    uint8_t relocatable;
    uint32_t kernel_alignment;
    uint64_t pref_address;
    uint32_t init_size;
    uint32_t initrd_addr_max;
    uint32_t cmdline_size;
    const uint8_t *entry_code; /* copied to payload + 0x200 if not NULL */
    size_t entry_code_size;
};
/* Defaults resembling a Debian 6.1 kernel, scaled down: protocol 2.15, 64-bit, relocatable,
 * 2 MiB alignment, pref_address 16 MiB, init_size 8 MiB, payload 64 KiB, 30 setup sectors. */
struct bz_spec bz_default_spec(void);
/* The image; free() it. Payload byte i is (uint8_t)(i * 7 + 3) except the entry code. */
uint8_t *bz_build(const struct bz_spec *spec, size_t *len);
size_t bz_payload_offset(const struct bz_spec *spec);

struct elf_seg_spec {
    uint64_t paddr, filesz, memsz;
    uint8_t fill; /* file bytes are fill ^ (i & 0xff) */
};
/* An ET_EXEC x86-64 ELF64 with the given PT_LOAD segments (+ one PT_NOTE) and entry. */
uint8_t *elf_build(const struct elf_seg_spec *segs, unsigned n, uint64_t entry, size_t *len);

/* Write `len` bytes to a new file under a per-process temp dir; returns its path (static
 * storage per call slot `slot` 0-3). */
const char *test_write_file(unsigned slot, const char *name, const void *data, size_t len);
