/* libFuzzer: kallsyms / System.map text parsing and the slide computation. */
#include <stddef.h>
#include <stdint.h>

#include "symbolize/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct symtab t;
    symtab_init(&t);
    if (kallsyms_parse(&t, (const char *)data, size, NULL) == 0) {
        int64_t slide;
        kallsyms_kaslr_slide(&t, 0xffffffff81000000ull, &slide, NULL);
        symtab_lookup(&t, 0xffffffff81000000ull);
    }
    symtab_free(&t);
    return 0;
}
