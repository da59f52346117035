/* Container identities from cgroup v2 paths (container_id.h has the engines' names). */
#include "common/container_id.h"

#include <stdio.h>
#include <string.h>

/* One component of the path: [s, s + n). */
struct comp {
    const char *s;
    size_t n;
};

#define MAX_COMPS 64 /* deeper paths keep their innermost components */

static bool has_prefix(struct comp c, const char *p)
{
    size_t n = strlen(p);
    return c.n >= n && !memcmp(c.s, p, n);
}

static bool has_suffix(struct comp c, const char *p)
{
    size_t n = strlen(p);
    return c.n >= n && !memcmp(c.s + c.n - n, p, n);
}

static bool is_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* `prefix`<64 hex>`suffix` (suffix may be ""): the id into out. */
static bool hex_between(struct comp c, const char *prefix, const char *suffix, char *out)
{
    size_t p = strlen(prefix), q = strlen(suffix);
    if (!has_prefix(c, prefix) || !has_suffix(c, suffix) || c.n < p + q ||
        !is_hex64(c.s + p, c.n - p - q))
        return false;
    memcpy(out, c.s + p, 64);
    out[64] = 0;
    return true;
}

/* A name engines allow (machined: printable, no '/'), at most CONTAINER_ID_MAX bytes. */
static bool name_between(struct comp c, const char *prefix, const char *suffix, char *out)
{
    size_t p = strlen(prefix), q = strlen(suffix);
    if (!has_prefix(c, prefix) || !has_suffix(c, suffix) || c.n <= p + q ||
        c.n - p - q > CONTAINER_ID_MAX)
        return false;
    size_t n = c.n - p - q;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)c.s[p + i] < 0x21 || (unsigned char)c.s[p + i] > 0x7e)
            return false;
    memcpy(out, c.s + p, n);
    out[n] = 0;
    return true;
}

/* A pod UID in a component: "pod" then 8-4-4-4-12 hex with '-' or (systemd) '_' between,
 * ending the component or followed by ".slice". */
static bool pod_uid(struct comp c, char *out)
{
    const char *s = NULL;
    for (size_t i = 0; i + 3 <= c.n; i++)
        if (!memcmp(c.s + i, "pod", 3) && (i == 0 || c.s[i - 1] == '-'))
            s = c.s + i + 3;
    if (!s)
        return false;
    size_t n = (size_t)(c.s + c.n - s);
    if (n >= 6 && !memcmp(s + n - 6, ".slice", 6))
        n -= 6;
    if (n != CONTAINER_POD_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        char ch = s[i];
        if (dash ? (ch != '-' && ch != '_')
                 : !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return false;
        out[i] = dash ? '-' : ch;
    }
    out[n] = 0;
    return true;
}

/* The container component c names, with the component before it (`up`, n == 0 at the root). */
static enum container_engine container_of(struct comp c, struct comp up, char *id)
{
    /* The monitors' cgroups first: "libpod-conmon-<id>" would otherwise not be "libpod-<id>"
     * only by its hex check. */
    if (has_prefix(c, "libpod-conmon-") || has_prefix(c, "crio-conmon-"))
        return CT_NONE;
    if (hex_between(c, "docker-", ".scope", id))
        return CT_DOCKER;
    if (hex_between(c, "libpod-", ".scope", id) || hex_between(c, "libpod-", "", id))
        return CT_PODMAN;
    if (hex_between(c, "crio-", ".scope", id))
        return CT_CRIO;
    if (hex_between(c, "cri-containerd-", ".scope", id))
        return CT_CONTAINERD;
    if (hex_between(c, "", "", id)) {
        if (up.n == 6 && !memcmp(up.s, "docker", 6))
            return CT_DOCKER;
        char uid[CONTAINER_POD_MAX + 1];
        if (pod_uid(up, uid))
            return CT_KUBERNETES;
        return CT_NONE;
    }
    if (name_between(c, "systemd-nspawn@", ".service", id) ||
        name_between(c, "machine-", ".scope", id))
        return CT_NSPAWN;
    if (name_between(c, "lxc.payload.", "", id))
        return CT_LXC;
    if (up.n == 3 && !memcmp(up.s, "lxc", 3) && name_between(c, "", "", id))
        return CT_LXC;
    return CT_NONE;
}

bool container_from_cgroup(const char *path, size_t len, struct container_id *out)
{
    memset(out, 0, sizeof(*out));
    struct comp comps[MAX_COMPS];
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && path[i] == '/')
            i++;
        size_t j = i;
        while (j < len && path[j] != '/' && path[j] != 0)
            j++;
        if (j > i) {
            if (n == MAX_COMPS) {
                memmove(comps, comps + 1, sizeof(comps[0]) * (MAX_COMPS - 1));
                n--;
            }
            comps[n++] = (struct comp){path + i, j - i};
        }
        if (j < len && path[j] == 0)
            break;
        i = j;
    }
    /* The innermost container, and the pod it is in (any component above it). */
    size_t at = n;
    for (size_t k = n; k-- > 0;) {
        struct comp up = k ? comps[k - 1] : (struct comp){NULL, 0};
        enum container_engine e = container_of(comps[k], up, out->id);
        if (e != CT_NONE) {
            out->engine = e;
            at = k;
            break;
        }
        out->id[0] = 0;
    }
    for (size_t k = at == n ? n : at + 1; k-- > 0;)
        if (pod_uid(comps[k], out->pod_uid))
            break;
    return out->engine != CT_NONE || out->pod_uid[0];
}

const char *container_engine_name(enum container_engine e)
{
    static const char *const names[] = {
        [CT_NONE] = "",
        [CT_DOCKER] = "docker",
        [CT_PODMAN] = "podman",
        [CT_CRIO] = "cri-o",
        [CT_CONTAINERD] = "containerd",
        [CT_KUBERNETES] = "kubernetes",
        [CT_NSPAWN] = "systemd-nspawn",
        [CT_LXC] = "lxc",
    };
    return (unsigned)e < sizeof(names) / sizeof(names[0]) ? names[e] : "";
}

const char *container_short_id(const struct container_id *c, char *buf, size_t len)
{
    if (is_hex64(c->id, strlen(c->id)))
        snprintf(buf, len, "%.12s", c->id);
    else
        snprintf(buf, len, "%s", c->id);
    return buf;
}
