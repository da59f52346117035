/* libFuzzer target for cli/domain_xml.c: a libvirt domain definition is text a user's VM host
 * hands hvprof, so any bytes must give a parsed domain or a message, with every field within
 * its bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/domain_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct domain_config c;
    struct hv_err err;
    if (size > 1 << 16)
        return 0;
    if (domain_xml_parse((const char *)data, size, &c, &err) < 0)
        return 0;
    if (c.vcpus == 0 || c.ndisks > VM_MAX_DISKS || c.nunsupported > DOMAIN_MAX_UNSUPPORTED ||
        strnlen(c.kernel, sizeof(c.kernel)) == sizeof(c.kernel) ||
        strnlen(c.name, sizeof(c.name)) == sizeof(c.name))
        abort();
    for (unsigned i = 0; i < c.ndisks; i++)
        if (!c.disks[i].path[0])
            abort();
    return 0;
}
