/* libFuzzer: container identities from a cgroup path of any bytes (a guest's kernfs names are
 * the guest's to choose), and the short id of whatever parsed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/container_id.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct container_id c;
    char buf[CONTAINER_ID_MAX + 1];
    if (container_from_cgroup((const char *)data, size, &c)) {
        container_short_id(&c, buf, sizeof(buf));
        if (strlen(c.id) > CONTAINER_ID_MAX || strlen(c.pod_uid) > CONTAINER_POD_MAX)
            __builtin_trap();
    }
    return 0;
}
