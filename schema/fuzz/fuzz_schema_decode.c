/* libFuzzer target: hvprof's decoder on top of the strict FXT reader, on arbitrary bytes: never
 * crash or read outside the input; end with the end of the buffer or an error. */
#include <stdint.h>
#include <stdlib.h>

#include "schema/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fxtr_reader r;
    struct hvfxt_record *x = malloc(sizeof(*x));
    struct hv_err err;
    if (!x)
        return 0;
    fxtr_init(&r, data, size);
    int rc;
    uint64_t sink = 0;
    while ((rc = hvfxt_next(&r, x, &err)) == 1) {
        /* Touch what the decoder pointed at, so out-of-bounds pointers fault under ASan. */
        if (x->kind == HVFXT_REC_SAMPLE) {
            for (uint32_t i = 0; i < x->u.sample.user_stack.n; i++)
                sink += fxtr_word(x->u.sample.user_stack, i);
            for (uint32_t i = 0; i < x->u.sample.kernel_stack.n; i++)
                sink += fxtr_word(x->u.sample.kernel_stack, i);
        } else if (x->kind == HVFXT_REC_MODULE) {
            for (uint32_t i = 0; i < x->u.module.name.len; i++)
                sink += (uint8_t)x->u.module.name.ptr[i];
            for (uint32_t i = 0; i < x->u.module.build_id_len; i++)
                sink += x->u.module.build_id[i];
        }
    }
    if (rc == 0 && r.off != size)
        abort(); /* "end" must mean every byte was consumed */
    fxtr_free(&r);
    free(x);
    (void)sink;
    return 0;
}
