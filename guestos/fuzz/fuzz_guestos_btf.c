/* libFuzzer: the kernel's BTF as a hostile guest may forge it. Loading must check every record
 * against the blob, and the lookups hvprof makes must stay bounded (typedef loops, deep
 * anonymous members, member paths through non-structs): every member lookup examines at most
 * LX_BTF_MAX_WORK members, however its anonymous members nest (docs/reliability.md, "Budgets"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "guestos/linux/btf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lx_btf b;
    if (lx_btf_load(&b, data, size, NULL) < 0)
        return 0;
    static const char *const paths[] = {"pid", "tgid", "comm", "mm", "thread.sp", "a.b.c.d.e"};
    static const char *const structs[] = {"task_struct", "mm_struct", ""};
    for (size_t s = 0; s < sizeof(structs) / sizeof(structs[0]); s++) {
        uint32_t id = lx_btf_find_struct(&b, structs[s]);
        for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
            uint64_t off, sz, work = 0;
            (void)lx_btf_member_counted(&b, id ? id : 1, paths[p], &off, &sz, &work);
            if (work > LX_BTF_MAX_WORK) {
                fprintf(stderr, "btf: a lookup of %s examined %llu members\n", paths[p],
                        (unsigned long long)work);
                abort();
            }
        }
    }
    for (uint32_t id = 0; id <= b.ntypes && id < 64; id++) {
        uint64_t sz;
        (void)lx_btf_type_size(&b, id, &sz);
    }
    lx_btf_free(&b);
    return 0;
}
