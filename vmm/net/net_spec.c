#include "vmm/net/net_spec.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A port: 1-65535 in decimal, all of [s, end). */
static bool port(const char *s, const char *end, uint16_t *out)
{
    if (s == end || end - s > 5)
        return false;
    unsigned v = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    *out = (uint16_t)v;
    return true;
}

/* [addr]:port in [s, end); an empty address gives `dflt`. */
static bool endpoint(const char *s, const char *end, const char *dflt, struct in_addr *addr,
                     uint16_t *p)
{
    const char *colon = memrchr(s, ':', (size_t)(end - s));
    if (!colon)
        return false;
    char a[INET_ADDRSTRLEN];
    size_t alen = (size_t)(colon - s);
    if (alen >= sizeof(a))
        return false;
    memcpy(a, s, alen);
    a[alen] = 0;
    if (inet_pton(AF_INET, alen ? a : dflt, addr) != 1)
        return false;
    return port(colon + 1, end, p);
}

static int hostfwd(const char *rule, struct net_config *c, struct hv_err *err)
{
    if (c->nfwd == NET_MAX_HOSTFWD)
        return hv_errk(err, HV_ERR_LIMIT, "--net: more than %u hostfwd rules", NET_MAX_HOSTFWD);
    struct net_hostfwd f = {0};
    const char *s = rule, *end = rule + strlen(rule);
    if (!strncmp(s, "tcp:", 4)) {
        s += 4;
    } else if (!strncmp(s, "udp:", 4)) {
        f.udp = true;
        s += 4;
    } else if (*s == ':') {
        s++; /* the protocol left out: tcp */
    }
    const char *dash = memchr(s, '-', (size_t)(end - s));
    /* No host address: the host's loopback only, never every address (docs/net.md). */
    if (!dash || !endpoint(s, dash, "127.0.0.1", &f.host, &f.host_port) ||
        !endpoint(dash + 1, end, NET_GUEST_ADDR, &f.guest, &f.guest_port))
        return hv_errk(err, HV_ERR_USAGE,
                       "--net: hostfwd=%.64s: expected [PROTO]:[HOSTADDR]:HOSTPORT-"
                       "[GUESTADDR]:GUESTPORT, PROTO tcp or udp (e.g. tcp:127.0.0.1:8080-:80)",
                       rule);
    c->fwd[c->nfwd++] = f;
    return 0;
}

int net_spec_parse(const char *spec, struct net_config *c, struct hv_err *err)
{
    char buf[1024];
    if (strlen(spec) >= sizeof(buf))
        return hv_errk(err, HV_ERR_USAGE, "--net: %zu characters (at most %zu)", strlen(spec),
                       sizeof(buf) - 1);
    memcpy(buf, spec, strlen(spec) + 1);
    char *save = NULL;
    char *part = strtok_r(buf, ",", &save);
    if (!part || strcmp(part, "user"))
        return hv_errk(err, HV_ERR_USAGE,
                       "--net: '%.64s': hvprof's network is user-mode networking: --net user"
                       "[,restrict=on][,hostfwd=tcp:127.0.0.1:8080-:80]...",
                       spec);
    c->enabled = true;
    while ((part = strtok_r(NULL, ",", &save))) {
        if (!strncmp(part, "hostfwd=", 8)) {
            if (hostfwd(part + 8, c, err) < 0)
                return -1;
        } else if (!strncmp(part, "mac=", 4)) {
            if (!net_mac_parse(part + 4, c->mac))
                return hv_errk(err, HV_ERR_USAGE,
                               "--net: mac=%.32s: expected six hex bytes, unicast "
                               "(52:54:00:12:34:56)",
                               part + 4);
            c->has_mac = true;
        } else if (!strcmp(part, "restrict=on") || !strcmp(part, "restrict=yes")) {
            c->restrict_outside = true;
        } else if (!strcmp(part, "restrict=off") || !strcmp(part, "restrict=no")) {
            c->restrict_outside = false;
        } else if (!strcmp(part, "host=on") || !strcmp(part, "host=yes")) {
            c->host_open = true;
        } else if (!strcmp(part, "host=off") || !strcmp(part, "host=no")) {
            c->host_open = false;
        } else {
            return hv_errk(err, HV_ERR_USAGE,
                           "--net: '%.64s' is not hostfwd=RULE, mac=ADDR, restrict=on|off or "
                           "host=on|off",
                           part);
        }
    }
    return 0;
}

void net_hostfwd_describe(const struct net_hostfwd *f, char *out, size_t len)
{
    char h[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &f->host, h, sizeof(h));
    inet_ntop(AF_INET, &f->guest, g, sizeof(g));
    snprintf(out, len, "%s %s:%u -> %s:%u", f->udp ? "udp" : "tcp", h, f->host_port, g,
             f->guest_port);
}

bool net_mac_parse(const char *s, uint8_t mac[6])
{
    for (int i = 0; i < 6; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char ch = *s++;
            unsigned d = ch >= '0' && ch <= '9'   ? (unsigned)(ch - '0')
                         : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                         : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10)
                                                  : 16u;
            if (d == 16)
                return false;
            v = v * 16 + d;
        }
        mac[i] = (uint8_t)v;
        if (i < 5 && *s++ != ':')
            return false;
    }
    return *s == 0 && !(mac[0] & 1); /* the group bit clear: one card's address */
}
