/* libFuzzer target: the strict FXT reader on arbitrary bytes must never crash or read outside
 * the input, and must end with either the end of the buffer or an error. */
#include <stdint.h>
#include <stdlib.h>

#include "fxt/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fxtr_reader r;
    struct fxtr_record *rec = malloc(sizeof(*rec));
    struct hv_err err;
    if (!rec)
        return 0;
    fxtr_init(&r, data, size);
    int rc;
    uint64_t sink = 0;
    while ((rc = fxtr_next(&r, rec, &err)) == 1) {
        /* Touch what the decoder pointed at, so out-of-bounds pointers fault under ASan. */
        if (rec->type == FXTR_BLOB && !rec->unknown)
            for (uint32_t i = 0; i < rec->u.blob.size; i++)
                sink += rec->u.blob.payload[i];
        if (rec->type == FXTR_EVENT && !rec->unknown)
            for (unsigned i = 0; i < rec->u.event.nargs; i++)
                for (uint32_t j = 0; j < rec->u.event.args[i].name.len; j++)
                    sink += (uint8_t)rec->u.event.args[i].name.ptr[j];
    }
    if (rc == 0 && r.off != size)
        abort(); /* "end" must mean every byte was consumed */
    fxtr_free(&r);
    free(rec);
    (void)sink;
    return 0;
}
