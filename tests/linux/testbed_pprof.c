/* Google's pprof on a Debian guest's recording (docs/report.md, "Checked with the real
 * consumers"): `hvprof report --format pprof` with the guest's binaries as symbol files, then
 * `pprof -disasm` of one function in each kind of user image the workloads run: a static
 * executable (hv_busy's spin), a PIE (hv_nofp's nofp_spin) and a shared object (hv_dlopen's
 * libhvplug.so, plug_spin). pprof maps each sample address to the binary's file through the
 * mapping's start and file offset; a wrong offset leaves the function without its samples. */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

static const struct tb_pprof_fn {
    const char *name, *kind;
} fns[TB_PPROF_FNS] = {
    {"spin", "static executable"},
    {"nofp_spin", "PIE"},
    {"plug_spin", "shared object"},
};

/* The command's whole standard output, malloc'd; NULL when it cannot be run. */
static char *capture(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 4096) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                buf = NULL;
            }
            buf = b;
        }
    }
    *status = pclose(p);
    if (buf)
        buf[len] = 0;
    return buf;
}

/* pprof's ROUTINE header for `name` (its flat samples), and the flat samples on its
 * instruction lines ("  N  M  addr: insn"). Returns false when there is no ROUTINE. */
static bool routine(const char *out, const char *name, uint64_t *flat, uint64_t *on_insns)
{
    char head[128];
    snprintf(head, sizeof(head), "ROUTINE ======================== %s", name);
    const char *r = strstr(out, head);
    if (!r || !(r = strchr(r, '\n')) || sscanf(r + 1, "%" SCNu64, flat) != 1)
        return false;
    *on_insns = 0;
    for (const char *l = strchr(r + 1, '\n'); l && *l; l = strchr(l + 1, '\n')) {
        uint64_t f, c;
        char addr[32];
        if (sscanf(l + 1, " %" SCNu64 " %" SCNu64 " %31[0-9a-f]:", &f, &c, addr) == 3)
            *on_insns += f;
        if (!strncmp(l + 1, "ROUTINE", 7))
            break;
    }
    return true;
}

void tb_pprof_paths(char *bin, char *pprof)
{
    const char *b = getenv("HVPROF_BINARY_DIR");
    if (!b)
        fail_msg("HVPROF_BINARY_DIR is not set (run the test through ctest)");
    snprintf(bin, PATH_MAX, "%s", b);
    snprintf(pprof, PATH_MAX, "%s/consumers/pprof-bin/pprof", b);
    if (access(pprof, X_OK) != 0)
        fail_msg("%s missing: the consumers_pprof fixture builds it (tests/consumers)", pprof);
}

unsigned tb_check_pprof_disasm(const struct tb_result *r)
{
    char bin[PATH_MAX], pprof[PATH_MAX], files[PATH_MAX], prof[PATH_MAX + 16], cmd[8 * PATH_MAX];
    tb_pprof_paths(bin, pprof);
    snprintf(files, sizeof(files), "%s/guest-files", tb_cache());
    snprintf(prof, sizeof(prof), "%s.pb.gz", r->rec);
    snprintf(cmd, sizeof(cmd),
             "'%s/cli/hvprof' report '%s' --symbols '%s' --format pprof -o '%s' -q 2>&1", bin,
             r->rec, files, prof);
    int st;
    char *out = capture(cmd, &st);
    if (!out || st != 0)
        fail_msg("%s: hvprof report --format pprof failed: %s", r->name, out ? out : "");
    free(out);
    /* User-mode samples narrowed to the function's own (docs/report.md, "Using pprof"). */
    unsigned verified = 0;
    for (unsigned i = 0; i < TB_PPROF_FNS; i++) {
        const char *f = fns[i].name;
        snprintf(cmd, sizeof(cmd),
                 "PPROF_BINARY_PATH='%s' HOME=/nonexistent '%s' -sample_index=samples "
                 "-tagfocus=cpl=3 -show_from='\\b%s\\b' -top -nodecount=1000 '%s' 2>/dev/null",
                 files, pprof, f, prof);
        out = capture(cmd, &st);
        /* Sampled in this run: its row's flat samples (the name, or name.suffix of a clone). */
        uint64_t flat = 0;
        size_t fl = strlen(f);
        for (const char *l = out; l && *l && !flat; l = strchr(l + 1, '\n')) {
            uint64_t v;
            int end = 0;
            if (sscanf(l, " %" SCNu64 " %*f%% %*f%% %*u %*f%% %n", &v, &end) == 1 && end &&
                !strncmp(l + end, f, fl) && (l[end + fl] == '\n' || l[end + fl] == '.'))
                flat = v;
        }
        if (!flat)
            continue;
        snprintf(cmd, sizeof(cmd),
                 "PPROF_BINARY_PATH='%s' HOME=/nonexistent '%s' -sample_index=samples "
                 "-tagfocus=cpl=3 -show_from='\\b%s\\b' -disasm='\\b%s\\b' '%s' 2>&1",
                 files, pprof, f, f, prof);
        out = capture(cmd, &st);
        uint64_t head = 0, on = 0;
        /* Every sample pprof puts in the routine lies on one of its instructions, and (almost)
         * all of -top's: pprof takes a routine's end from the next symbol of any kind in nm's
         * list, hvprof from the next function, so a sample in a function's tail padding may be
         * left out (1 of 194 in one run). A wrong file offset leaves none. */
        if (!out || !routine(out, f, &head, &on) || head == 0 || on != head ||
            (double)head < 0.95 * (double)flat)
            fail_msg("%s: pprof -disasm of %s (%s): %" PRIu64 " samples in -top, %" PRIu64
                     " in its ROUTINE, %" PRIu64 " on its instructions:\n%.2000s",
                     r->name, f, fns[i].kind, flat, head, on, out ? out : "");
        printf("%s: pprof -disasm=%s (%s): %" PRIu64 " of its %" PRIu64
               " samples on its instructions\n",
               r->name, f, fns[i].kind, on, flat);
        free(out);
        verified |= 1u << i;
    }
    remove(prof);
    return verified;
}
