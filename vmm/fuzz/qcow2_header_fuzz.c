/* libFuzzer: a qcow2 header's backing file, backing format and extensions (qcow2_header.h) from
 * arbitrary bytes, the first thing hvprof reads of a disk image someone else made. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vmm/image/format.h"
#include "vmm/qcow/qcow2_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qcow2_header h;
    struct hv_err err;
    if (qcow2_header_parse(data, size, &h, &err) == 0) {
        /* What is kept is a terminated, plain string within its bound. */
        if (h.has_backing && strlen(h.backing) > QCOW2_BACKING_NAME_MAX)
            __builtin_trap();
        if (h.has_backing_format && strlen(h.backing_format) > QCOW2_FORMAT_NAME_MAX)
            __builtin_trap();
    }
    (void)image_format_probe(data, size);
    return 0;
}
