/* The platform's control (docs/linux.md, "The reference under hvprof's load"): QEMU/KVM as the
 * VMM in the same outer VM, same kernel and command line, its vCPU threads kicked at hvprof's
 * sampling rate and its guest's RAM read, as hvprof's exits do. A guest hvprof loses (triple
 * fault, hung boot, no user-mode exits, its L1 dead) is hvprof's fault unless such a control
 * lost its guest too in the same test bed session: tb_each_run() asks tb_platform_evidence(). */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/files.h"
#include "tests/linux/testbed.h"

bool tb_is_control(const struct tb_scenario *s)
{
    return !strcmp(s->cmd, "qemu") && s->env && strstr(s->env, "HVTEST_KICK_HZ=");
}

/* The last non-empty line of a console, at most 120 characters. */
static void last_line(const char *console, char *buf, size_t len)
{
    size_t n = strlen(console);
    while (n && (console[n - 1] == '\n' || console[n - 1] == '\r'))
        n--;
    size_t start = n;
    while (start && console[start - 1] != '\n')
        start--;
    size_t l = n - start < 120 ? n - start : 120;
    snprintf(buf, len, "%.*s", (int)l, console + start);
}

/* Whether control run `name` in `out` lost its guest; if so, why. */
static bool control_lost(const char *out, const char *name, char *why, size_t len)
{
    struct tb_result r;
    tb_load(&r, out, name);
    bool lost = false;
    if (!r.present) {
        if (tb_l1_deaths(out, name, false)) {
            snprintf(why, len, "%s/%s: the outer VM (L1) died during QEMU/KVM's run", out, name);
            lost = true;
        }
    } else if (!r.done) {
        char line[128];
        last_line(r.console, line, sizeof(line));
        snprintf(why, len,
                 "%s/%s: QEMU/KVM's guest did not finish its workloads (exit %d after %.0f s, "
                 "%s; its console's last line: \"%s\")",
                 out, name, r.status, r.seconds, r.userspace ? "in user space" : "before /init",
                 line);
        lost = true;
    }
    tb_free(&r);
    return lost;
}

/* The control runs a group's scenario list names (run.sh's OUT.scenarios: NAME|CMD|...|ENV). */
static bool evidence_in(const char *out, char *why, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s.scenarios", out);
    uint8_t *buf;
    size_t n;
    struct hv_err err;
    if (hv_read_file(path, 1u << 20, &buf, &n, &err) < 0)
        return false;
    bool found = false;
    for (char *line = (char *)buf, *next; line && *line && !found; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *cmd = strchr(line, '|'), *env = strrchr(line, '|');
        if (!cmd || strncmp(cmd + 1, "qemu|", 5) || !strstr(env, "HVTEST_KICK_HZ="))
            continue;
        *cmd = 0;
        found = control_lost(out, line, why, len);
    }
    free(buf);
    return found;
}

bool tb_platform_evidence(const char *out, char *why, size_t len)
{
    if (evidence_in(out, why, len))
        return true;
    const char *bin = getenv("HVPROF_BINARY_DIR");
    if (!bin)
        return false;
    char ref[PATH_MAX];
    snprintf(ref, sizeof(ref), "%s/linux-runs/reference", bin);
    return strcmp(ref, out) && evidence_in(ref, why, len);
}

void tb_keep_control(const char *out, const char *name)
{
    struct tb_result r;
    tb_load(&r, out, name);
    if (!r.present) {
        printf("control %s: not finished (%s)\n", name,
               tb_l1_deaths(out, name, false) ? "the outer VM died during it"
                                              : "the outer VM died in other runs first");
        tb_free(&r);
        return;
    }
    /* A control without its load proves nothing: kick.c's report must be there, with threads
     * found and the guest's RAM read. */
    const char *k = strstr(r.summary, "hvtest_kick: ");
    uint64_t kicks = 0;
    unsigned threads = 0;
    if (!k ||
        sscanf(k, "hvtest_kick: %" SCNu64 " kicks to %u vCPU threads", &kicks, &threads) != 2 ||
        !kicks || !threads || !strstr(k, "(RAM found)"))
        fail_msg("control %s: QEMU/KVM did not run under the kicker (kick.c's report: %.200s)",
                 name, k ? k : "none");
    char why[PATH_MAX + 256];
    if (control_lost(out, name, why, sizeof(why)))
        printf("control %s: QEMU/KVM under hvprof's load lost its guest: %s\n", name, why);
    else
        printf("control %s: QEMU/KVM under hvprof's load completed the workloads in %.1f s\n", name,
               r.seconds);
    tb_free(&r);
}
