/* elf_parts.c on this test's own executable (built with its .symtab): read whole, every part a
 * symbol table needs lands at its file offset and libelf loads the same symbols from the sparse
 * copy as from the file; a missing page that holds only code is not needed; a missing page of
 * .symtab or of the section headers refuses the whole; a file cut short is refused. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/parts/elf_parts.h"
#include "symbolize/elf_symbols.h"

struct file {
    uint8_t *bytes;
    size_t size;
    uint64_t hole; /* a page that cannot be read, or UINT64_MAX */
    uint64_t reads;
};

static bool read_file(void *ctx, uint64_t off, void *dst, size_t len)
{
    struct file *f = ctx;
    assert_true(off <= f->size && len <= f->size - off);
    f->reads += len;
    if (len && f->hole >= off / 4096 && f->hole <= (off + len - 1) / 4096)
        return false;
    memcpy(dst, f->bytes + off, len);
    return true;
}

static struct file self;

static int setup(void **state)
{
    (void)state;
    FILE *fp = fopen("/proc/self/exe", "rb");
    assert_non_null(fp);
    self.bytes = malloc(64u << 20);
    self.size = fread(self.bytes, 1, 64u << 20, fp);
    fclose(fp);
    assert_true(self.size > 4096);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(self.bytes);
    return 0;
}

/* The section of type `type` (the first), from the file's own headers. */
static const Elf64_Shdr *section(uint32_t type)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)self.bytes;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(self.bytes + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type == type)
            return &sh[i];
    return NULL;
}

static bool read_parts(uint64_t hole, size_t size, uint8_t **out, uint64_t *reads)
{
    struct file f = {self.bytes, size, hole, 0};
    struct cfi_file_reader r = {.name = "self", .size = size, .read = read_file, .ctx = &f};
    uint8_t *buf = calloc(1, size);
    bool ok = elf_symbol_parts_read(&r, buf);
    *reads = f.reads;
    if (out)
        *out = buf;
    else
        free(buf);
    return ok;
}

static void test_whole(void **state)
{
    (void)state;
    const Elf64_Shdr *symtab = section(SHT_SYMTAB);
    assert_non_null(symtab); /* the build keeps it */
    uint8_t *buf;
    uint64_t reads;
    assert_true(read_parts(UINT64_MAX, self.size, &buf, &reads));
    assert_true(reads < self.size); /* the code and debug info are not read */
    assert_memory_equal(buf + symtab->sh_offset, self.bytes + symtab->sh_offset, symtab->sh_size);
    struct elf_symbols a, b;
    struct hv_err err;
    assert_int_equal(elf_symbols_load_mem(&a, buf, self.size, &err), 0);
    assert_int_equal(elf_symbols_load_mem(&b, self.bytes, self.size, &err), 0);
    assert_true(a.has_symtab);
    assert_int_equal(a.syms.n, b.syms.n);
    assert_int_equal(a.build_id_len, b.build_id_len);
    assert_memory_equal(a.build_id, b.build_id, a.build_id_len);
    elf_symbols_free(&a);
    elf_symbols_free(&b);
    free(buf);
}

static void test_holes(void **state)
{
    (void)state;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)self.bytes;
    const Elf64_Shdr *symtab = section(SHT_SYMTAB);
    uint64_t reads;
    /* A page inside .text, holding no part. */
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(self.bytes + eh->e_shoff);
    uint64_t code_page = UINT64_MAX;
    for (unsigned i = 0; i < eh->e_shnum && code_page == UINT64_MAX; i++) {
        uint64_t first = (sh[i].sh_offset + 4095) / 4096; /* the first whole page in it */
        if (sh[i].sh_type == SHT_PROGBITS && (sh[i].sh_flags & SHF_EXECINSTR) &&
            (first + 1) * 4096 <= sh[i].sh_offset + sh[i].sh_size)
            code_page = first;
    }
    assert_true(code_page != UINT64_MAX);
    assert_true(read_parts(code_page, self.size, NULL, &reads));
    assert_false(read_parts(symtab->sh_offset / 4096, self.size, NULL, &reads));
    assert_false(read_parts(eh->e_shoff / 4096, self.size, NULL, &reads));
    assert_false(read_parts(0, self.size, NULL, &reads)); /* the ELF header */
    /* Cut before the section headers: refused, nothing read past the end. */
    assert_false(read_parts(UINT64_MAX, eh->e_shoff, NULL, &reads));
    assert_false(read_parts(UINT64_MAX, 40, NULL, &reads)); /* shorter than a header */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_whole), cmocka_unit_test(test_holes)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
