/* libFuzzer: the parts of a hostile module file a symbol table is read from (elf_parts.c), as
 * the drain thread reads them from the guest's page cache, pages missing at the input's will,
 * then handed to libelf as module_files.c does. The input's first byte says which pages are
 * holes (page i when bit i % 8 is set); the rest is the file. Every read must stay inside the
 * file and the buffer, and what libelf gets must load or fail cleanly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/parts/elf_parts.h"
#include "symbolize/elf_symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct file {
    const uint8_t *bytes;
    size_t size;
    uint8_t holes;
};

static bool read_file(void *ctx, uint64_t off, void *dst, size_t len)
{
    struct file *f = ctx;
    if (off > f->size || len > f->size - off)
        abort(); /* the reader asked past the file it was told of */
    for (uint64_t p = off / 4096; len && p <= (off + len - 1) / 4096; p++)
        if (f->holes >> (p % 8) & 1)
            return false;
    memcpy(dst, f->bytes + off, len);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > (4u << 20))
        return 0;
    struct file f = {.bytes = data + 1, .size = size - 1, .holes = data[0]};
    struct cfi_file_reader r = {.name = "fuzz", .size = f.size, .read = read_file, .ctx = &f};
    uint8_t *buf = calloc(1, f.size);
    if (!buf)
        return 0;
    if (elf_symbol_parts_read(&r, buf)) {
        struct elf_symbols es;
        struct hv_err err;
        if (elf_symbols_load_mem(&es, buf, f.size, &err) == 0)
            elf_symbols_free(&es);
    }
    free(buf);
    return 0;
}
