/* libFuzzer: QEMU's map of a qcow2 chain as hvprof parses it (vmm/qcow/qemu_map.c): the map
 * reflects a hostile image's tables, so every extent must be checked against the disk's and the
 * files' sizes, or the whole map refused with a message. Each extent taken must lie within the
 * disk, in order, and a data extent within its file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/qcow/qemu_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    static const uint64_t files[3] = {1u << 20, 64u << 20, 4096};
    const uint64_t disk = 16u << 20;
    struct qcow_map m;
    struct hv_err err = {0};
    if (qcow_map_parse(&m, (const char *)data, size, disk, files, 3, &err) < 0) {
        if (m.v || m.n || !err.msg[0])
            abort(); /* refused whole, with a reason */
        return 0;
    }
    uint64_t end = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct qcow_extent *x = &m.v[i];
        if (x->start < end || !x->length || x->start + x->length > disk)
            abort();
        if (x->kind == QCOW_EXTENT_DATA &&
            (x->depth >= 3 || x->offset + x->length > files[x->depth]))
            abort();
        if (qcow_map_find(&m, x->start) != x)
            abort();
        end = x->start + x->length;
    }
    qcow_map_free(&m);
    return 0;
}
