/* libFuzzer: a recording cut anywhere reports what it holds. The input's first 4 bytes choose
 * the cut, the rest is the recording (the corpus holds whole ones): the cut file must load
 * exactly when the whole file's prefix up to the last record end before the cut loads, with
 * the same samples (report/fxt_load.c, fxt/reader.c's cut). */
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fxt/reader.h"
#include "report/fxt_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t pick;
    memcpy(&pick, data, 4);
    data += 4;
    size -= 4;
    size_t cut = size ? pick % (size + 1) : 0;
    size_t boundary = fxtr_whole_records(data, cut);
    struct profile a, b;
    struct fxt_load_stats sa, sb;
    profile_init(&a);
    profile_init(&b);
    struct profile whole;
    profile_init(&whole);
    bool valid = fxt_load_profile(data, size, &whole, NULL, NULL, NULL, NULL) == 0;
    profile_free(&whole);
    int ra = fxt_load_profile(data, boundary, &a, &sa, NULL, NULL, NULL);
    int rb = fxt_load_profile(data, cut, &b, &sb, NULL, NULL, NULL);
    /* A recording that loads whole: cut anywhere, it loads as its prefix to the last record
     * end before the cut does, with the same samples. */
    if (valid && ra == 0 && (rb != 0 || a.samples.n != b.samples.n))
        abort();
    if (rb == 0)
        profile_symbolize(&b, NULL, NULL, NULL);
    profile_free(&a);
    profile_free(&b);
    return 0;
}
