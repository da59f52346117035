/* Containers inside the guest (docs/containers.md), on Debian 12's cloud kernel: Debian's runc
 * runs two containers of one static program (tests/linux/workloads/ctwork.c) as Docker's
 * cgroupfs driver names them, /docker/<64 hex>, each in its own pid, mount, ipc, uts and cgroup
 * namespaces, and the same program runs outside any container beside them; a quarter of the way
 * in, the first container's process is moved to a third cgroup (echo PID > cgroup.procs) and
 * then told so (it spins in ct_before until then, in ct_after after). With no files given to
 * `record`:
 *   - every sample of a container's process carries the cgroup /proc/PID/cgroup shows inside
 *     the guest, its container id, and the NSpid the guest shows (1: each is its container's
 *     init), but for the last instants of an exiting thread, which has no pid left (its
 *     samples in do_exit, at most 5 %: runc's threads exit while it starts the program);
 *   - the two containers of one program are told apart;
 *   - the moved process's samples in ct_after all carry the new cgroup, and most of those in
 *     ct_before the old one (the rest were taken between the move and the flag);
 *   - the program outside any container has the root cgroup and no container;
 *   - the recorder's summary names the three containers, and `hvprof report --container`
 *     keeps one container's samples. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/profile.h"
#include "tests/linux/testbed.h"

struct ct_seen {
    char name[8];
    int pid, nspid;
    char cgroup[320]; /* "/docker/<id>", from the guest's "0::/docker/<id>" */
};

struct guest_view {
    struct ct_seen ct[2]; /* a, b */
    struct ct_seen host;
    int moved_pid;
    char moved_cgroup[320];
    bool a_moved, b_not_moved;
};

static void on_line(const char *line, void *arg)
{
    struct guest_view *g = arg;
    char name[8], cg[300];
    int pid, ns;
    if (sscanf(line, "HVTEST ct %7s pid=%d cgroup=0::%299s NSpid: %*d %d", name, &pid, cg, &ns) ==
            4 &&
        (!strcmp(name, "a") || !strcmp(name, "b"))) {
        struct ct_seen *c = &g->ct[name[0] - 'a'];
        snprintf(c->name, sizeof(c->name), "%s", name);
        c->pid = pid;
        c->nspid = ns;
        snprintf(c->cgroup, sizeof(c->cgroup), "%s", cg);
    } else if (sscanf(line, "HVTEST ct host pid=%d cgroup=0::%299s", &pid, cg) == 2) {
        g->host.pid = pid;
        snprintf(g->host.cgroup, sizeof(g->host.cgroup), "%s", cg);
    } else if (sscanf(line, "HVTEST ct moved pid=%d cgroup=0::%299s", &pid, cg) == 2) {
        g->moved_pid = pid;
        snprintf(g->moved_cgroup, sizeof(g->moved_cgroup), "%s", cg);
    } else if (!strncmp(line, "HVTEST ct a done moved=1", 24)) {
        g->a_moved = true;
    } else if (!strncmp(line, "HVTEST ct b done moved=0", 24)) {
        g->b_not_moved = true;
    }
}

/* Whether function `name` is on the sample's stack. */
static bool on_stack(const struct profile *p, const struct prof_sample *s, const char *name)
{
    for (uint32_t i = 0; i < s->nframes; i++) {
        const struct prof_frame *fr = &p->frames.v[s->first + i];
        if (fr->loc < p->locs.n && !strcmp(p->funcs.v[p->locs.v[fr->loc].func].name, name))
            return true;
    }
    return false;
}

/* The leaf-most of ct_before / ct_after on the sample's stack, or NULL. */
static const char *side_of(const struct profile *p, const struct prof_sample *s)
{
    for (uint32_t i = 0; i < s->nframes; i++) {
        const struct prof_frame *fr = &p->frames.v[s->first + i];
        if (fr->loc >= p->locs.n)
            continue;
        const char *fn = p->funcs.v[p->locs.v[fr->loc].func].name;
        if (!strcmp(fn, "ct_before") || !strcmp(fn, "ct_after"))
            return fn;
    }
    return NULL;
}

struct tally {
    uint64_t samples, right_group, right_ns, exiting, before, before_old, after, after_new;
};

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    unsigned *runs = ctx;
    tb_check_boot(r, s);
    char *ref = tb_reference(s->kernel, s->vcpus);
    tb_check_console_clean(r, s, ref);
    free(ref);
    struct guest_view g = {0};
    tb_each_line(r->console, on_line, &g);
    if (!g.ct[0].pid || !g.ct[1].pid || !g.host.pid || !g.moved_pid || !g.a_moved || !g.b_not_moved)
        fail_msg("%s: the guest did not run both containers, the program outside them and "
                 "the move:\n%s",
                 r->name, r->console);
    if (g.moved_pid != g.ct[0].pid || !strcmp(g.moved_cgroup, g.ct[0].cgroup) ||
        strncmp(g.moved_cgroup, "/docker/", 8))
        fail_msg("%s: the move is not what the guest was to do (pid %d to %s)", r->name,
                 g.moved_pid, g.moved_cgroup);
    if (!strstr(r->summary, "  cgroups: ") || !strstr(r->summary, " containers: "))
        fail_msg("%s: the recorder's summary names no containers:\n%s", r->name, r->summary);

    struct profile p;
    tb_load_profile(r, &p);
    struct tally t[2] = {0}, host = {0};
    uint64_t in_b = 0; /* every sample in b's container: its process's and runc's before it */
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        uint64_t pid = profile_shown_pid(&p, sm->pid);
        const struct prof_group *grp = profile_sample_group(&p, sm);
        const struct prof_name *pn = profile_name_of(&p, sm->pid, 0);
        in_b += grp && !strncmp(grp->path, g.ct[1].cgroup, sizeof(g.ct[1].cgroup)) && grp->ct.id[0];
        for (unsigned c = 0; c < 2; c++) {
            if (pid != (uint64_t)g.ct[c].pid)
                continue;
            struct tally *x = &t[c];
            x->samples++;
            bool old = grp && !strcmp(grp->path, g.ct[c].cgroup);
            bool moved = c == 0 && grp && !strcmp(grp->path, g.moved_cgroup);
            x->right_group += old || moved;
            /* A thread past its release (do_exit -> exit_notify -> release_task: its pids
             * detached) has an id in no namespace any more, for the guest as for hvprof. */
            if (on_stack(&p, sm, "do_exit"))
                x->exiting++;
            else
                x->right_ns += pn && pn->ns_id == g.ct[c].nspid && pn->pid_ns;
            const char *side = side_of(&p, sm);
            if (side && !strcmp(side, "ct_before")) {
                x->before++;
                x->before_old += old;
            } else if (side && !strcmp(side, "ct_after")) {
                x->after++;
                x->after_new += moved;
            }
        }
        if (pid == (uint64_t)g.host.pid) {
            host.samples++;
            host.right_group += grp && !strcmp(grp->path, g.host.cgroup) && !grp->ct.id[0];
            host.right_ns += pn && pn->ns_id < 0;
        }
    }
    for (unsigned c = 0; c < 2; c++)
        printf("%s: container %s (pid %d, %s, NSpid %d): %" PRIu64 " samples, %" PRIu64
               " with its cgroup, %" PRIu64 " with its NSpid (%" PRIu64
               " exiting); ct_before %" PRIu64 " (%" PRIu64
               " in the first cgroup), ct_after %" PRIu64 " (%" PRIu64 " in the new one)\n",
               r->name, g.ct[c].name, g.ct[c].pid, g.ct[c].cgroup, g.ct[c].nspid, t[c].samples,
               t[c].right_group, t[c].right_ns, t[c].exiting, t[c].before, t[c].before_old,
               t[c].after, t[c].after_new);
    printf("%s: outside (pid %d, %s): %" PRIu64 " samples, %" PRIu64 " in that cgroup\n", r->name,
           g.host.pid, g.host.cgroup, host.samples, host.right_group);
    for (unsigned c = 0; c < 2; c++) {
        if (t[c].samples < 20)
            fail_msg("%s: container %s has %" PRIu64 " samples", r->name, g.ct[c].name,
                     t[c].samples);
        if (t[c].right_group != t[c].samples || t[c].right_ns + t[c].exiting != t[c].samples ||
            t[c].exiting * 20 > t[c].samples)
            fail_msg("%s: container %s: %" PRIu64 " of %" PRIu64
                     " samples with its cgroup, %" PRIu64 " with its NSpid",
                     r->name, g.ct[c].name, t[c].right_group, t[c].samples, t[c].right_ns);
    }
    /* The moved one: after the flag, every sample in the new cgroup; before, mostly the old. */
    if (t[0].after < 5 || t[0].after_new != t[0].after)
        fail_msg("%s: %" PRIu64 " of the moved process's %" PRIu64
                 " samples in ct_after carry its new cgroup",
                 r->name, t[0].after_new, t[0].after);
    if (t[0].before < 5 || t[0].before_old * 2 < t[0].before)
        fail_msg("%s: %" PRIu64 " of its %" PRIu64 " samples in ct_before carry its first cgroup",
                 r->name, t[0].before_old, t[0].before);
    if (t[1].after)
        fail_msg("%s: the container not moved has %" PRIu64 " samples in ct_after", r->name,
                 t[1].after);
    if (host.samples < 20 || host.right_group != host.samples || host.right_ns != host.samples)
        fail_msg("%s: the program outside the containers: %" PRIu64 " of %" PRIu64
                 " samples in its cgroup with no container",
                 r->name, host.right_group, host.samples);
    profile_free(&p);

    /* The report's own filter keeps the one container's samples: its process's, and those of
     * runc's own processes in its cgroup before the program ran. */
    char bin[4096], cmd[12288], id[16];
    snprintf(bin, sizeof(bin), "%s/cli/hvprof", getenv("HVPROF_BINARY_DIR"));
    snprintf(id, sizeof(id), "%.12s", g.ct[1].cgroup + 8);
    snprintf(cmd, sizeof(cmd), "'%s' report '%s' -q --container %s", bin, r->rec, id);
    FILE *f = popen(cmd, "r");
    char line[512];
    unsigned long long n = 0;
    while (f && fgets(line, sizeof(line), f))
        (void)sscanf(line, "# hvprof report: %llu samples", &n);
    printf("%s: report --container %s: %llu samples (%" PRIu64 " in its cgroup, %" PRIu64
           " of its process)\n",
           r->name, id, n, in_b, t[1].samples);
    if (!f || pclose(f) != 0 || n != in_b || in_b < t[1].samples)
        fail_msg("%s: report --container %s kept %llu samples; the container has %" PRIu64, r->name,
                 id, n, in_b);
    (*runs)++;
}

static void test_containers(void **state)
{
    (void)state;
    char out[4096];
    unsigned runs = 0;
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("containers", 2, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, &runs);
    assert_true(runs > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_containers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
