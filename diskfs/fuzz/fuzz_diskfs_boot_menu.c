/* libFuzzer: boot menus as hostile as a guest's disk can hold them (boot_menu.h). The input is
 * split at its first NUL: a grubenv before it, then either a grub.cfg (first byte even) or two
 * BLS entries (odd, split at the next NUL); the menu is parsed, sorted and an entry chosen,
 * by default and by a name taken from the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskfs/boot_menu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct boot_menu m; /* 230 KiB: not on the fuzzer's stack */
    if (!size)
        return 0;
    const char *text = (const char *)data;
    const char *nul = memchr(text, 0, size);
    size_t envlen = nul ? (size_t)(nul - text) : 0;
    const char *rest = nul ? nul + 1 : text;
    size_t restlen = size - (size_t)(rest - text);
    boot_menu_init(&m, text, envlen);
    char why[256];
    if (data[0] & 1) {
        const char *second = memchr(rest, 0, restlen);
        size_t first = second ? (size_t)(second - rest) : restlen;
        boot_menu_parse_bls(&m, "a.conf", rest, first);
        if (second)
            boot_menu_parse_bls(&m, "b-1.2.conf", second + 1, restlen - first - 1);
        boot_menu_sort_bls(&m);
    } else {
        boot_menu_parse_grub(&m, rest, restlen);
    }
    (void)boot_menu_choose(&m, NULL, why, sizeof(why));
    char want[16];
    size_t w = size < sizeof(want) - 1 ? size : sizeof(want) - 1;
    memcpy(want, text + size - w, w);
    want[w] = 0;
    (void)boot_menu_choose(&m, want, why, sizeof(why));
    return 0;
}
