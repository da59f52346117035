/* A server in an unmodified Debian guest, driven from outside while hvprof profiles it
 * (`record --net user,hostfwd=...`, docs/net.md): Debian's virtio_net driver finds the card
 * through the ACPI tables, the guest gets 10.0.2.15 from slirp's DHCP, and busybox's web server
 * in it answers every request the test bed sends from L1 through the forwarded host port; the
 * recording names the server's processes (httpd and its CGI program) and their kernel frames in
 * the network stack, and the summary counts the frames each way. */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/fxt_load.h"
#include "report/profile.h"
#include "tests/linux/testbed.h"

struct totals {
    unsigned runs;
    uint64_t server_samples, net_kernel;
};

/* The run's recording, symbolized as `hvprof report` does with no files. */
static void load_profile(const struct tb_result *r, struct profile *p)
{
    profile_init(p);
    struct hv_err err = {0};
    if (fxt_load_profile_file(r->rec, p, NULL, NULL, NULL, &err) < 0 ||
        profile_symbolize(p, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
}

/* A kernel function of the network path: the virtio driver's, the socket layer's, TCP's. */
static bool network_fn(const char *fn)
{
    return !strncmp(fn, "virtnet_", 8) || !strncmp(fn, "tcp_", 4) || !strncmp(fn, "sock_", 5) ||
           !strncmp(fn, "inet_", 5) || !strncmp(fn, "__sys_accept", 12) ||
           !strncmp(fn, "net_rx_action", 13) || !strncmp(fn, "__netif_", 8) ||
           !strncmp(fn, "ip_", 3) || !strncmp(fn, "skb_", 4);
}

/* The load l1_init.sh sent through the forwarded port while the guest ran: 20 pages and 20
 * CGI requests, every one answered. */
static void check_answered(const struct tb_result *r, const char *what)
{
    char *load = tb_beside(r, "net-load.txt");
    if (strncmp(load, "pages 20 answered 20 cgi 20 answered 20", 39))
        fail_msg("%s: not every request was answered: %s", r->name,
                 load[0] ? load : "(no net-load.txt)");
    printf("%s: %s: %s", r->name, what, load);
    free(load);
}

/* nginx's master and its workers: each one's user frames in a module of its own address space.
 * The workers are forked by a master that a daemonizing fork started and that then exited, so
 * they map the pages of nginx and its libraries they touched and no ELF header: their images are
 * found through the files those pages cache (guestos/generic/file_modules.h). */
static void check_nginx_modules(const struct tb_result *r, const struct profile *p)
{
    struct proc {
        uint64_t pid, frames, in_module;
    } procs[64];
    size_t np = 0;
    for (size_t i = 0; i < p->samples.n; i++) {
        const struct prof_sample *sm = &p->samples.v[i];
        if (strcmp(profile_process_name(p, sm->pid), "nginx"))
            continue;
        size_t k = 0;
        while (k < np && procs[k].pid != sm->pid)
            k++;
        if (k == np) {
            if (np == sizeof(procs) / sizeof(procs[0]))
                continue;
            procs[np++] = (struct proc){.pid = sm->pid};
        }
        for (uint32_t j = 0; j < sm->nframes; j++) {
            const struct prof_frame *f = &p->frames.v[sm->first + j];
            if ((f->flags & PROF_FRAME_KERNEL) || f->loc == PROF_NONE)
                continue;
            procs[k].frames++;
            procs[k].in_module += p->locs.v[f->loc].mapping != PROF_NONE;
        }
    }
    size_t judged = 0;
    for (size_t k = 0; k < np; k++) {
        printf("%s: nginx pid %" PRIu64 ": %" PRIu64 " of %" PRIu64 " user frames in a module\n",
               r->name, procs[k].pid, procs[k].in_module, procs[k].frames);
        /* A process that lived a moment (the daemonizing parent, a worker respawned at the
         * end) can exit before any look at its address space: its frames then have no module,
         * whatever the discovery can do. The master and its workers run the whole session. */
        if (procs[k].frames < 1000)
            continue;
        judged++;
        if ((double)procs[k].in_module < 0.9 * (double)procs[k].frames)
            fail_msg("%s: nginx pid %" PRIu64 ": only %" PRIu64 " of %" PRIu64
                     " user frames in a known module",
                     r->name, procs[k].pid, procs[k].in_module, procs[k].frames);
    }
    if (!judged)
        fail_msg("%s: no nginx process with 1000 user frames", r->name);
}

/* The Debian system (debian_disk.sh): booted by --disk alone to multi-user.target, online by
 * DHCP, its web server answering every request, powered off by one; its own processes by name
 * with named user frames (no files given: its disk and page cache give them). */
static void check_distro(const struct tb_result *r, struct totals *t)
{
    if (r->status != 0 || !strstr(r->summary, "guest stopped (poweroff)"))
        fail_msg("%s: exit status %d, no power-off:\n%s", r->name, r->status, r->summary);
    if (!strstr(r->summary, "hvprof record: booting 'Debian GNU/Linux' from /boot/grub/grub.cfg "
                            "on disk 0 partition 1: /boot/vmlinuz-"))
        fail_msg("%s: not booted from the disk's own entry:\n%s", r->name, r->summary);
    if (!strstr(r->console, "HVTEST systemd multi-user 10.0.2.15/24"))
        fail_msg("%s: multi-user.target not reached online:\n%.6000s", r->name, r->console);
    static const char *const bad[] = {"Kernel panic", "Oops", "BUG:", "FAILED", "Call Trace"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (strstr(r->console, bad[i]))
            fail_msg("%s: '%s' on the console:\n%.6000s", r->name, bad[i], r->console);
    check_answered(r, "multi-user.target reached; through 127.0.0.1:8080");
    struct profile p;
    load_profile(r, &p);
    /* The web server in front: busybox httpd alone, or nginx passing the CGI requests to it
     * (debian_disk.sh's WEB, which the unit says on the console). */
    bool nginx = strstr(r->console, " web=nginx") != NULL;
    static const char *const procs[] = {"systemd", "systemd-journal", "busybox", "work", "nginx"};
    const size_t nprocs = nginx ? 5 : 4;
    uint64_t n[5] = {0}, named[5] = {0};
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        const char *comm = profile_process_name(&p, sm->pid);
        for (size_t k = 0; k < nprocs; k++) {
            if (strcmp(comm, procs[k]))
                continue;
            n[k]++;
            for (uint32_t j = 0; j < sm->nframes; j++) {
                const struct prof_frame *f = &p.frames.v[sm->first + j];
                if (!(f->flags & PROF_FRAME_KERNEL) && f->loc != PROF_NONE &&
                    p.locs.v[f->loc].resolved) {
                    named[k]++;
                    break;
                }
            }
        }
    }
    if (nginx)
        check_nginx_modules(r, &p);
    profile_free(&p);
    for (size_t k = 0; k < nprocs; k++)
        printf("%s: %s: %" PRIu64 " samples, %" PRIu64 " with a named user frame\n", r->name,
               procs[k], n[k], named[k]);
    if (!named[0] || !named[1] || !n[2] || !n[3] || (nginx && !named[4]))
        fail_msg("%s: systemd, journald, the web server%s or its CGI program not profiled by "
                 "name",
                 r->name, nginx ? " (nginx, busybox httpd behind it)" : "");
    t->runs++;
    t->server_samples += n[2] + n[3] + n[4];
    t->net_kernel++;
}

/* QEMU/KVM's boot of a Debian system's disk, the reference for check_distro: the same console
 * lines and the same requests answered, powered off by one. */
static void check_distro_reference(const struct tb_result *r)
{
    if (r->status != 0)
        fail_msg("%s: QEMU exit status %d:\n%s", r->name, r->status, r->summary);
    if (!strstr(r->console, "HVTEST systemd multi-user 10.0.2.15/24"))
        fail_msg("%s: multi-user.target not reached online:\n%.6000s", r->name, r->console);
    check_answered(r, "QEMU/KVM: multi-user.target reached");
}

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    struct totals *t = ctx;
    if (!strcmp(s->cmd, "record-disk")) {
        check_distro(r, t);
        return;
    }
    if (!strcmp(s->cmd, "qemu-disk")) {
        check_distro_reference(r);
        return;
    }
    tb_check_boot(r, s);
    char *ref = tb_reference(s->kernel, s->vcpus);
    tb_check_console_clean(r, s, ref);
    free(ref);
    if (!strstr(r->console, "HVTEST net lease 10.0.2.15 router 10.0.2.2"))
        fail_msg("%s: no DHCP lease from the user network:\n%.4000s", r->name, r->console);
    if (!strstr(r->console, "HVTEST net mac 52:54:00:12:34:56") ||
        !strstr(r->console, "HVTEST net serving") || !strstr(r->console, "HVTEST net done stopped"))
        fail_msg("%s: the guest's server did not run as planned:\n%.4000s", r->name, r->console);
    check_answered(r, "through 127.0.0.1:8080 -> 10.0.2.15:80");
    const char *line = strstr(r->summary, "  net: user-mode networking (libslirp); forwarded: "
                                          "tcp 127.0.0.1:8080 -> 10.0.2.15:80; ");
    unsigned long long from = 0, to = 0;
    if (!line || sscanf(line,
                        "  net: user-mode networking (libslirp); forwarded: tcp "
                        "127.0.0.1:8080 -> 10.0.2.15:80; %llu frames from the guest",
                        &from) != 1)
        fail_msg("%s: no network line in the summary:\n%s", r->name, r->summary);
    const char *to_at = strstr(line, " to it (");
    if (to_at)
        while (to_at > line && to_at[-1] != ' ')
            to_at--;
    if (!to_at || sscanf(to_at, "%llu", &to) != 1 || from < 40 || to < 40)
        fail_msg("%s: too few frames for 40 requests:\n%.*s", r->name, (int)strcspn(line, "\n"),
                 line);
    printf("%s: %.*s\n", r->name, (int)strcspn(line + 2, "\n"), line + 2);
    tb_check_recording(r);
    tb_check_kernel_symbols(r, 0.95);
    /* The server by name, and the kernel's network path under its samples. */
    struct profile p;
    load_profile(r, &p);
    uint64_t server = 0, net = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        const char *comm = profile_process_name(&p, sm->pid);
        bool srv = !strcmp(comm, "httpd") || !strcmp(comm, "work");
        server += srv;
        for (uint32_t j = 0; j < sm->nframes; j++) {
            const struct prof_frame *f = &p.frames.v[sm->first + j];
            if (f->loc != PROF_NONE && p.locs.v[f->loc].resolved &&
                network_fn(p.funcs.v[p.locs.v[f->loc].func].name)) {
                net++;
                break;
            }
        }
    }
    profile_free(&p);
    printf("%s: %" PRIu64 " samples of the server's processes (httpd, its CGI program), %" PRIu64
           " with the kernel's network path on the stack\n",
           r->name, server, net);
    if (!server || !net)
        fail_msg("%s: the server's processes or the network path are not in the recording",
                 r->name);
    t->runs++;
    t->server_samples += server;
    t->net_kernel += net;
}

static void test_server_under_load(void **state)
{
    (void)state;
    char out[4096];
    struct totals t = {0};
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("net", 1, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, &t);
    assert_true(t.runs > 0 && t.server_samples > 0 && t.net_kernel > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_server_under_load)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
