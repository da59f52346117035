#include "tests/common/tiny_elf.h"
#include "vmm/boot/tests/fixture.h"

#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/boot/zeropage.h"

void test_ram_init(struct test_ram *r, uint64_t mem_bytes)
{
    struct hv_err err = {0};
    memset(r, 0, sizeof(*r));
    gmem_init(&r->gmem);
    assert_int_equal(layout_ram_regions(mem_bytes, r->region, &r->n, &err), 0);
    for (unsigned i = 0; i < r->n; i++) {
        void *p = mmap(NULL, r->region[i].size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        assert_true(p != MAP_FAILED);
        r->host[i] = p;
        assert_int_equal(gmem_add(&r->gmem, r->region[i].gpa, r->region[i].size, p, &err), 0);
    }
}

void test_ram_free(struct test_ram *r)
{
    for (unsigned i = 0; i < r->n; i++)
        munmap(r->host[i], r->region[i].size);
    memset(r, 0, sizeof(*r));
}

uint8_t *test_ram_at(struct test_ram *r, uint64_t gpa, uint64_t len)
{
    uint8_t *p = gmem_ptr(&r->gmem, gpa, len);
    assert_non_null(p);
    return p;
}

struct bz_spec bz_default_spec(void)
{
    return (struct bz_spec){
        .setup_sects = 30,
        .payload_size = 64 << 10,
        .version = 0x020f,
        .xloadflags = XLF_KERNEL_64 | XLF_CAN_BE_LOADED_ABOVE_4G,
        .relocatable = 1,
        .kernel_alignment = 2 << 20,
        .pref_address = 16 << 20,
        .init_size = 8 << 20,
        .initrd_addr_max = 0x7fffffff,
        .cmdline_size = 2047,
    };
}

size_t bz_payload_offset(const struct bz_spec *s)
{
    return ((size_t)(s->setup_sects ? s->setup_sects : 4) + 1) * 512;
}

static void put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

uint8_t *bz_build(const struct bz_spec *s, size_t *len)
{
    size_t off = bz_payload_offset(s);
    *len = off + s->payload_size;
    uint8_t *img = calloc(1, *len);
    assert_non_null(img);
    /* Fill the boot sector with 0xff as modern kernels do (PE header area): the loader must not
     * copy it into the zero page (bootparam.h; docs/sources.md §2). */
    memset(img, 0xff, SH_START);
    img[SH_SETUP_SECTS] = s->setup_sects;
    put32(img + SH_SYSSIZE, (uint32_t)(s->payload_size / 16));
    put16(img + SH_VID_MODE, 0xfffd);
    put16(img + SH_BOOT_FLAG, 0xaa55);
    img[SH_JUMP] = 0xeb;
    img[SH_JUMP + 1] = 0x6a; /* header ends at 0x26c, as in Linux 6.x */
    memcpy(img + SH_HEADER, "HdrS", 4);
    put16(img + SH_VERSION, s->version);
    img[SH_LOADFLAGS] = 0x01; /* LOADED_HIGH */
    put32(img + SH_CODE32_START, 0x100000);
    put32(img + SH_INITRD_ADDR_MAX, s->initrd_addr_max);
    put32(img + SH_KERNEL_ALIGNMENT, s->kernel_alignment);
    img[SH_RELOCATABLE] = s->relocatable;
    put16(img + SH_XLOADFLAGS, s->xloadflags);
    put32(img + SH_CMDLINE_SIZE, s->cmdline_size);
    put64(img + SH_PREF_ADDRESS, s->pref_address);
    put32(img + SH_INIT_SIZE, s->init_size);
    /* Setup code after the header: recognisable junk that must not reach the zero page. */
    for (size_t i = 0x26c; i < off; i++)
        img[i] = 0xcc;
    for (size_t i = 0; i < s->payload_size; i++)
        img[off + i] = (uint8_t)(i * 7 + 3);
    if (s->entry_code) {
        assert_true(0x200 + s->entry_code_size <= s->payload_size);
        memcpy(img + off + 0x200, s->entry_code, s->entry_code_size);
    }
    return img;
}

uint8_t *elf_build(const struct elf_seg_spec *segs, unsigned n, uint64_t entry, size_t *len)
{
    size_t phoff = sizeof(Elf64_Ehdr);
    size_t data = phoff + (n + 1) * sizeof(Elf64_Phdr);
    data = (data + 15) & ~(size_t)15;
    size_t total = data;
    for (unsigned i = 0; i < n; i++)
        total += segs[i].filesz;
    uint8_t *img = calloc(1, total);
    assert_non_null(img);

    Elf64_Ehdr eh = tiny_elf_header(entry, n + 1);
    memcpy(img, &eh, sizeof(eh));

    size_t at = data;
    for (unsigned i = 0; i < n; i++) {
        Elf64_Phdr ph = {.p_type = PT_LOAD,
                         .p_flags = PF_R | PF_W | PF_X,
                         .p_offset = at,
                         .p_vaddr = segs[i].paddr,
                         .p_paddr = segs[i].paddr,
                         .p_filesz = segs[i].filesz,
                         .p_memsz = segs[i].memsz,
                         .p_align = 0x1000};
        memcpy(img + phoff + i * sizeof(ph), &ph, sizeof(ph));
        for (uint64_t b = 0; b < segs[i].filesz; b++)
            img[at + b] = segs[i].fill ^ (uint8_t)b;
        at += segs[i].filesz;
    }
    /* A non-loadable header the loader must skip. */
    Elf64_Phdr note = {.p_type = PT_NOTE, .p_offset = 0, .p_filesz = 4, .p_paddr = 0x10};
    memcpy(img + phoff + n * sizeof(note), &note, sizeof(note));
    *len = total;
    return img;
}

const char *test_write_file(unsigned slot, const char *name, const void *data, size_t len)
{
    static char paths[4][256];
    char dir[128];
    snprintf(dir, sizeof(dir), "/tmp/hvprof-boot-test.%d", (int)getpid());
    mkdir(dir, 0700);
    assert_true(slot < 4);
    snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", dir, name);
    FILE *f = fopen(paths[slot], "wb");
    assert_non_null(f);
    if (len)
        assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    return paths[slot];
}
