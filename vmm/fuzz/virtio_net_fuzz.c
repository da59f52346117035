/* libFuzzer target: the frames a guest sends are untrusted input. The input is a sequence of
 * frames, each a 2-byte little-endian length and its bytes, given to user-mode networking
 * (libslirp, restricted: nothing leaves the process for the outside) as the network card gives
 * the guest's frames; what slirp answers goes to the card's queue for the guest (held: no
 * driver takes them). Also the --net option's parser on the input as text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/net/net_spec.h"
#include "vmm/net/user_net.h"
#include "vmm/virtio/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void to_guest(void *ctx, const uint8_t *frame, size_t len)
{
    virtio_net_receive(ctx, frame, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct virtio_net *n;
    static struct user_net *u;
    if (!u) {
        static const uint8_t mac[6] = {0x52, 0x54, 0, 0x12, 0x34, 0x56};
        n = calloc(1, sizeof(*n));
        struct net_config c = {.enabled = true, .restrict_outside = true};
        struct user_net_ops ops = {to_guest, NULL, n};
        struct hv_err err;
        if (!n || virtio_net_init(n, mac) < 0 || user_net_open(&u, &c, &ops, &err) < 0)
            abort();
    }
    char spec[256];
    size_t k = size < sizeof(spec) - 1 ? size : sizeof(spec) - 1;
    memcpy(spec, data, k);
    spec[k] = 0;
    struct net_config c = {0};
    struct hv_err err;
    (void)net_spec_parse(spec, &c, &err);
    for (size_t at = 0; at + 2 <= size;) {
        size_t len = (size_t)data[at] | (size_t)data[at + 1] << 8;
        at += 2;
        if (len > size - at)
            len = size - at;
        user_net_input(u, data + at, len);
        at += len;
    }
    /* What was held for the guest: let go, so the queue never stays full. */
    virtio_net_flush(n);
    n->n = 0;
    return 0;
}
