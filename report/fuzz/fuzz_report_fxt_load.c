/* libFuzzer: loading an untrusted recording into a profile and symbolizing it (no symbols). */
#include <stddef.h>
#include <stdint.h>

#include "report/fxt_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct profile p;
    profile_init(&p);
    if (fxt_load_profile(data, size, &p, NULL, NULL, NULL, NULL) == 0)
        profile_symbolize(&p, NULL, NULL, NULL);
    profile_free(&p);
    return 0;
}
