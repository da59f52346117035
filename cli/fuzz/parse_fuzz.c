/* libFuzzer target for cli/parse.c: every parser on arbitrary bytes (NUL-terminated copy). A
 * successful parse must respect the requested range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    struct hv_err err;
    uint64_t v;
    if (parse_size(s, "--mem", 16 << 20, 1ull << 40, &v, &err) == 0 &&
        (v < (16 << 20) || v > (1ull << 40)))
        abort();
    if (parse_freq_hz(s, "--rate", 1, 100000, &v, &err) == 0 && (v < 1 || v > 100000))
        abort();
    if (parse_duration_ns(s, "--timeout", 1000, UINT64_MAX, &v, &err) == 0 && v < 1000)
        abort();
    if (parse_uint(s, "--vcpus", 1, 254, &v, &err) == 0 && (v < 1 || v > 254))
        abort();
    char buf[32];
    parse_format_size((uint64_t)size << 30, buf, sizeof(buf));
    free(s);
    return 0;
}
