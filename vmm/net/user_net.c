#include "vmm/net/user_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <slirp/libslirp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "vmm/net/frame_filter.h"

/* slirp's own timers (its TCP and IPv6 router-advertisement timers): a handful. */
#define MAX_TIMERS 16

struct timer {
    bool used, armed;
    SlirpTimerId id;
    void *cb_opaque;
    int64_t expire_ms;
};

struct user_net {
    Slirp *slirp;
    struct user_net_ops ops;
    pthread_mutex_t lock; /* every call into slirp */
    pthread_t thread;
    bool started;
    int wake_fd;
    atomic_bool stop, flush;
    struct pollfd *pfd;
    unsigned npfd, cap;
    struct timer timers[MAX_TIMERS];
    uint64_t guest_errors;
    struct net_filter filter;        /* what of the guest's frames slirp never sees */
    atomic_uint_fast64_t fragments;  /* IPv4 fragments from the guest, dropped (frame_filter.h) */
    atomic_uint_fast64_t to_host;    /* packets to the host's own addresses, dropped */
};

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static ssize_t cb_send_packet(const void *buf, size_t len, void *opaque)
{
    struct user_net *u = opaque;
    u->ops.to_guest(u->ops.ctx, buf, len);
    return (ssize_t)len;
}

static void cb_guest_error(const char *msg, void *opaque)
{
    (void)msg;
    struct user_net *u = opaque;
    u->guest_errors++;
}

static int64_t cb_clock_get_ns(void *opaque)
{
    (void)opaque;
    return now_ns();
}

static void *cb_timer_new_opaque(SlirpTimerId id, void *cb_opaque, void *opaque)
{
    struct user_net *u = opaque;
    for (unsigned i = 0; i < MAX_TIMERS; i++)
        if (!u->timers[i].used) {
            u->timers[i] = (struct timer){true, false, id, cb_opaque, 0};
            return &u->timers[i];
        }
    return NULL; /* slirp then runs without that timer (its RA timer: IPv6 is off) */
}

static void cb_timer_free(void *timer, void *opaque)
{
    (void)opaque;
    if (timer)
        ((struct timer *)timer)->used = false;
}

static void cb_timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
    (void)opaque;
    if (!timer)
        return;
    struct timer *t = timer;
    t->armed = true;
    t->expire_ms = expire_ms;
}

static void cb_register_poll_fd(int fd, void *opaque)
{
    (void)fd, (void)opaque; /* every descriptor comes back through slirp_pollfds_fill */
}

static void cb_notify(void *opaque)
{
    struct user_net *u = opaque;
    uint64_t one = 1;
    if (write(u->wake_fd, &one, sizeof(one)) < 0)
        return; /* the counter is far from full: cannot fail */
}

static const SlirpCb callbacks = {
    .send_packet = cb_send_packet,
    .guest_error = cb_guest_error,
    .clock_get_ns = cb_clock_get_ns,
    .timer_free = cb_timer_free,
    .timer_mod = cb_timer_mod,
    .register_poll_fd = cb_register_poll_fd,
    .unregister_poll_fd = cb_register_poll_fd,
    .notify = cb_notify,
    .timer_new_opaque = cb_timer_new_opaque,
};

int user_net_open(struct user_net **out, const struct net_config *c, const struct user_net_ops *ops,
                  struct hv_err *err)
{
    struct user_net *u = calloc(1, sizeof(*u));
    if (!u)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    u->ops = *ops;
    pthread_mutex_init(&u->lock, NULL);
    u->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (u->wake_fd < 0) {
        hv_errf_errno(err, "--net: eventfd");
        goto fail;
    }
    /* host=off (the default): the virtual network's aliases of the host (the gateway
     * 10.0.2.2 is the host's 127.0.0.1 in slirp) are closed by slirp itself, the host's own
     * names by the frame filter (frame_filter.h). */
    SlirpConfig cfg = {.version = 4,
                       .in_enabled = true,
                       .restricted = c->restrict_outside,
                       .disable_host_loopback = !c->host_open};
    net_filter_init(&u->filter, c->host_open);
    /* QEMU's -netdev user defaults (net_spec.h). */
    inet_pton(AF_INET, "10.0.2.0", &cfg.vnetwork);
    inet_pton(AF_INET, "255.255.255.0", &cfg.vnetmask);
    inet_pton(AF_INET, "10.0.2.2", &cfg.vhost);
    inet_pton(AF_INET, "10.0.2.15", &cfg.vdhcp_start);
    inet_pton(AF_INET, "10.0.2.3", &cfg.vnameserver);
    cfg.vhostname = "hvprof";
    u->slirp = slirp_new(&cfg, &callbacks, u);
    if (!u->slirp) {
        hv_errk(err, HV_ERR_OTHER, "--net: libslirp could not start its network");
        goto fail;
    }
    for (unsigned i = 0; i < c->nfwd; i++) {
        const struct net_hostfwd *f = &c->fwd[i];
        if (slirp_add_hostfwd(u->slirp, f->udp, f->host, f->host_port, f->guest, f->guest_port) <
            0) {
            char what[96];
            net_hostfwd_describe(f, what, sizeof(what));
            hv_errk(err, HV_ERR_OS,
                    "--net: hostfwd %s: the host port cannot be bound (in use, or below 1024 "
                    "without the privilege)",
                    what);
            goto fail;
        }
    }
    *out = u;
    return 0;
fail:
    user_net_close(u);
    return -1;
}

static int add_poll(int fd, int events, void *opaque)
{
    struct user_net *u = opaque;
    if (u->npfd == u->cap) {
        unsigned cap = u->cap ? 2 * u->cap : 16;
        struct pollfd *p = realloc(u->pfd, cap * sizeof(*p));
        if (!p)
            return -1; /* this descriptor is not watched this round */
        u->pfd = p;
        u->cap = cap;
    }
    short ev = 0;
    ev |= events & SLIRP_POLL_IN ? POLLIN : 0;
    ev |= events & SLIRP_POLL_OUT ? POLLOUT : 0;
    ev |= events & SLIRP_POLL_PRI ? POLLPRI : 0;
    u->pfd[u->npfd] = (struct pollfd){.fd = fd, .events = ev};
    return (int)u->npfd++;
}

static int get_revents(int idx, void *opaque)
{
    struct user_net *u = opaque;
    if (idx < 0 || (unsigned)idx >= u->npfd)
        return 0;
    short r = u->pfd[idx].revents;
    int ev = 0;
    ev |= r & POLLIN ? SLIRP_POLL_IN : 0;
    ev |= r & POLLOUT ? SLIRP_POLL_OUT : 0;
    ev |= r & POLLPRI ? SLIRP_POLL_PRI : 0;
    ev |= r & POLLERR ? SLIRP_POLL_ERR : 0;
    ev |= r & POLLHUP ? SLIRP_POLL_HUP : 0;
    return ev;
}

/* Under the lock: the timers due now, and how long until the next one (ms). */
static uint32_t run_timers(struct user_net *u, uint32_t timeout)
{
    int64_t now = now_ns() / 1000000;
    for (unsigned i = 0; i < MAX_TIMERS; i++) {
        struct timer *t = &u->timers[i];
        if (!t->used || !t->armed)
            continue;
        if (t->expire_ms <= now) {
            t->armed = false;
            slirp_handle_timer(u->slirp, t->id, t->cb_opaque);
        } else if ((uint64_t)(t->expire_ms - now) < timeout) {
            timeout = (uint32_t)(t->expire_ms - now);
        }
    }
    return timeout;
}

static void *net_thread(void *arg)
{
    struct user_net *u = arg;
    pthread_setname_np(pthread_self(), "net");
    sandbox_thread_enter(SANDBOX_NET); /* sockets: slirp's; files: /etc/resolv.conf */
    while (!atomic_load(&u->stop)) {
        pthread_mutex_lock(&u->lock);
        u->npfd = 0;
        add_poll(u->wake_fd, SLIRP_POLL_IN, u);
        uint32_t timeout = 1000; /* at least once a second, whatever slirp says */
        slirp_pollfds_fill(u->slirp, &timeout, add_poll, u);
        timeout = run_timers(u, timeout);
        pthread_mutex_unlock(&u->lock);
        int rc = poll(u->pfd, u->npfd, timeout > INT_MAX ? INT_MAX : (int)timeout);
        if (rc < 0 && errno != EINTR)
            break;
        if (u->npfd && u->pfd[0].revents) {
            uint64_t n;
            if (read(u->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                break;
        }
        if (atomic_exchange(&u->flush, false) && u->ops.flush)
            u->ops.flush(u->ops.ctx);
        pthread_mutex_lock(&u->lock);
        slirp_pollfds_poll(u->slirp, rc < 0, get_revents, u);
        run_timers(u, UINT32_MAX);
        pthread_mutex_unlock(&u->lock);
    }
    return NULL;
}

int user_net_start(struct user_net *u, struct hv_err *err)
{
    int rc = pthread_create(&u->thread, NULL, net_thread, u);
    if (rc) {
        errno = rc;
        return hv_errf_errno(err, "--net: its thread");
    }
    u->started = true;
    return 0;
}

void user_net_input(struct user_net *u, const uint8_t *frame, size_t len)
{
    if (len > INT_MAX)
        return;
    switch (net_frame_verdict(&u->filter, frame, len)) {
    case NET_DROP_FRAGMENT:
        atomic_fetch_add(&u->fragments, 1);
        return;
    case NET_DROP_HOST:
        atomic_fetch_add(&u->to_host, 1);
        return;
    case NET_PASS:
        break;
    }
    pthread_mutex_lock(&u->lock);
    slirp_input(u->slirp, frame, (int)len);
    pthread_mutex_unlock(&u->lock);
    /* A frame may have opened a socket the thread must now watch. */
    cb_notify(u);
}

void user_net_wake(struct user_net *u)
{
    atomic_store(&u->flush, true);
    cb_notify(u);
}

void user_net_stop(struct user_net *u)
{
    if (!u || !u->started)
        return;
    atomic_store(&u->stop, true);
    cb_notify(u);
    pthread_join(u->thread, NULL);
    u->started = false;
}

void user_net_close(struct user_net *u)
{
    if (!u)
        return;
    user_net_stop(u);
    if (u->slirp)
        slirp_cleanup(u->slirp);
    if (u->wake_fd >= 0)
        close(u->wake_fd);
    pthread_mutex_destroy(&u->lock);
    free(u->pfd);
    free(u);
}

uint64_t user_net_guest_errors(const struct user_net *u)
{
    return u ? u->guest_errors : 0;
}

uint64_t user_net_host_dropped(const struct user_net *u)
{
    return u ? atomic_load(&((struct user_net *)u)->to_host) : 0;
}

uint64_t user_net_fragments_dropped(const struct user_net *u)
{
    return u ? atomic_load(&((struct user_net *)u)->fragments) : 0;
}
