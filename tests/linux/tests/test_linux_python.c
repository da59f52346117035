/* Python frames read from the hypervisor (docs/python.md) on Debian's kernel: a program of
 * known call chains (tests/linux/workloads/chains.py) run by Debian 12's python3.11 and by
 * Debian 13's python3.13, with no files given to record. Its call sites are marked in the
 * script itself ("# -> callee", "(C)" through C code, "(thread)" a new thread's first
 * function), and this test reads the marks: every sample of either interpreter running Python
 * code must carry, in the merged stack, a chain the program can have — a root (<module>, or a
 * thread's first function), each caller at the very line of its call to the next, native frames
 * between the two exactly where the call goes through C, the leaf at a line of its own
 * function, every frame in /py/chains.py — for at least 95 % of them per interpreter (samples
 * whose Python frames are all of other files, the interpreter's start-up importing its frozen
 * modules, are counted apart and must be fewer), and each
 * kind of chain (plain recursion, a C builtin calling back, a generator resumed, a thread)
 * must be seen. No other process has a Python frame, and Google's pprof puts leaf_loop's samples
 * at its own lines of the script. */
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

#include "common/files.h"
#include "report/fxt_load.h"
#include "report/profile.h"
#include "tests/linux/testbed.h"

#define SCRIPT_PATH "/py/chains.py" /* where the guest runs it (co_filename) */
#define MAX_FUNCS   32
#define MAX_MARKS   32

struct func_range {
    char name[64];
    unsigned first, last;
};

struct mark {
    unsigned line;
    char caller[64], callee[64];
    bool via_c, thread;
};

struct script {
    struct func_range f[MAX_FUNCS];
    unsigned nf;
    struct mark m[MAX_MARKS];
    unsigned nm;
};

static const struct func_range *func_of(const struct script *sc, const char *name)
{
    for (unsigned i = 0; i < sc->nf; i++)
        if (!strcmp(sc->f[i].name, name))
            return &sc->f[i];
    return NULL;
}

/* The functions of the script (top-level defs: from the def to the line before the next
 * top-level statement), <module> over the whole file, and its marked call sites. */
static void read_script(struct script *sc)
{
    const char *src = getenv("HVPROF_SOURCE_DIR");
    if (!src)
        fail_msg("HVPROF_SOURCE_DIR is not set (run the test through ctest)");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/tests/linux/workloads/chains.py", src);
    uint8_t *text;
    size_t len;
    struct hv_err err;
    if (hv_read_file(path, 1 << 20, &text, &len, &err) < 0)
        fail_msg("%s", err.msg);
    memset(sc, 0, sizeof(*sc));
    unsigned line = 0;
    struct func_range *open = NULL;
    for (char *l = (char *)text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        line++;
        char *end = strchr(l, '\n');
        if (end)
            *end = 0;
        bool top = l[0] && l[0] != ' ' && l[0] != '#';
        if (top && open) {
            open->last = line - 1;
            open = NULL;
        }
        if (!strncmp(l, "def ", 4) && sc->nf < MAX_FUNCS) {
            open = &sc->f[sc->nf++];
            sscanf(l + 4, "%63[A-Za-z0-9_]", open->name);
            open->first = line;
        }
        const char *at = strstr(l, "# -> ");
        if (at && l[0] != '#' && sc->nm < MAX_MARKS) {
            struct mark *m = &sc->m[sc->nm++];
            m->line = line;
            snprintf(m->caller, sizeof(m->caller), "%s", open ? open->name : "<module>");
            sscanf(at + 5, "%63[A-Za-z0-9_]", m->callee);
            m->via_c = strstr(at, "(C)") != NULL;
            m->thread = strstr(at, "(thread)") != NULL;
        }
        if (end)
            *end = '\n';
    }
    if (open)
        open->last = line;
    free(text);
    if (sc->nf < MAX_FUNCS) {
        struct func_range *mod = &sc->f[sc->nf++];
        snprintf(mod->name, sizeof(mod->name), "<module>");
        mod->first = 1;
        mod->last = line;
    }
    assert_true(sc->nf >= 9 && sc->nm >= 10);
}

static const struct mark *mark_at(const struct script *sc, const char *caller, unsigned line,
                                  const char *callee)
{
    for (unsigned i = 0; i < sc->nm; i++)
        if (sc->m[i].line == line && !strcmp(sc->m[i].caller, caller) &&
            !strcmp(sc->m[i].callee, callee))
            return &sc->m[i];
    return NULL;
}

static bool is_root(const struct script *sc, const char *name)
{
    if (!strcmp(name, "<module>"))
        return true;
    for (unsigned i = 0; i < sc->nm; i++)
        if (sc->m[i].thread && !strcmp(sc->m[i].callee, name))
            return true;
    return false;
}

enum chain_kind { K_RECURSE, K_THROUGH_C, K_GENERATOR, K_THREAD, K_COUNT };
static const char *const kind_names[K_COUNT] = {"recursion", "a C builtin calling back",
                                                "a generator resumed", "a thread"};

struct interp {
    const char *process; /* its process name, as the guest's comm */
    uint64_t samples, in_python, exact, frames;
    uint64_t other; /* in Python code of no frame of the script: the interpreter's start-up
                     * (its frozen importlib), before the program runs */
    uint64_t kinds[K_COUNT];
    unsigned shown; /* failures printed */
};

static const struct prof_func *func_at(const struct profile *p, const struct prof_frame *fr)
{
    return fr->loc < p->locs.n ? &p->funcs.v[p->locs.v[fr->loc].func] : NULL;
}

static bool is_eval(const struct profile *p, const struct prof_frame *fr)
{
    const struct prof_func *f = func_at(p, fr);
    return f && !(f->runtime == HVFXT_RUNTIME_PYTHON) && p->locs.v[fr->loc].resolved &&
           !strcmp(f->name, "_PyEval_EvalFrameDefault");
}

static void show(const struct profile *p, const struct prof_sample *s, struct interp *in,
                 const char *why)
{
    if (in->shown++ >= 5)
        return;
    printf("  %s sample not exact (%s):", in->process, why);
    for (uint32_t k = s->nframes; k-- > 0;) {
        const struct prof_frame *fr = &p->frames.v[s->first + k];
        const struct prof_func *f = func_at(p, fr);
        if (f && (f->runtime == HVFXT_RUNTIME_PYTHON))
            printf(" [py %s:%u]", f->name, p->locs.v[fr->loc].line);
        else
            printf(" %s", f ? f->name : "?");
    }
    printf("\n");
}

/* Whether sample s carries a chain the script can have; `kinds` gets its kinds. */
static bool exact_chain(const struct profile *p, const struct prof_sample *s,
                        const struct script *sc, struct interp *in, bool kinds[K_COUNT])
{
    /* The Python frames' indices, root first. */
    uint32_t idx[512], n = 0;
    for (uint32_t k = s->nframes; k-- > 0 && n < 512;) {
        const struct prof_func *f = func_at(p, &p->frames.v[s->first + k]);
        if (f && (f->runtime == HVFXT_RUNTIME_PYTHON))
            idx[n++] = k;
    }
    if (!n) {
        show(p, s, in, "no Python frames, an evaluation loop left");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct prof_frame *fr = &p->frames.v[s->first + idx[i]];
        const struct prof_func *f = func_at(p, fr);
        unsigned line = p->locs.v[fr->loc].line;
        const struct func_range *r = func_of(sc, f->name);
        if (!f->file || strcmp(f->file, SCRIPT_PATH)) {
            show(p, s, in, "a frame of another file");
            return false;
        }
        if (!r || line < r->first || line > r->last) {
            show(p, s, in, "a line outside its function");
            return false;
        }
        if (i == 0 && !is_root(sc, f->name)) {
            show(p, s, in, "not rooted");
            return false;
        }
        if (i + 1 == n)
            break;
        const struct prof_frame *nx = &p->frames.v[s->first + idx[i + 1]];
        const struct prof_func *g = func_at(p, nx);
        const struct mark *m = mark_at(sc, f->name, line, g->name);
        if (!m) {
            show(p, s, in, "a caller not at its call");
            return false;
        }
        /* Native frames between the two exactly where the call goes through C. */
        uint32_t between = idx[i] - idx[i + 1] - 1;
        if ((between > 0) != m->via_c) {
            show(p, s, in,
                 m->via_c ? "no C frames where the call goes through C"
                          : "native frames between two Python frames");
            return false;
        }
        if (!strcmp(f->name, "recurse") && !strcmp(g->name, "recurse"))
            kinds[K_RECURSE] = true;
        if (!strcmp(g->name, "key"))
            kinds[K_THROUGH_C] = true;
        if (!strcmp(g->name, "numbers"))
            kinds[K_GENERATOR] = true;
    }
    const struct prof_func *root = func_at(p, &p->frames.v[s->first + idx[0]]);
    if (strcmp(root->name, "<module>"))
        kinds[K_THREAD] = true;
    in->frames += n;
    return true;
}

/* Google's pprof on `report --comm PROCESS --format pprof`, by line (-lines): the samples pprof
 * gives the lines of leaf_loop in /py/chains.py, which must be lines of leaf_loop's own, and
 * lines outside it found there (the consumers_pprof fixture builds pprof). */
static uint64_t pprof_leaf_lines(const struct tb_result *r, const char *process,
                                 const struct func_range *leaf, uint64_t *outside)
{
    char bin[PATH_MAX], pprof[PATH_MAX], prof[PATH_MAX + 32], cmd[8 * PATH_MAX];
    tb_pprof_paths(bin, pprof);
    snprintf(prof, sizeof(prof), "%s.%s.pb.gz", r->rec, process);
    snprintf(cmd, sizeof(cmd),
             "'%s/cli/hvprof' report '%s' --comm %s --format pprof -o '%s' -q && "
             "HOME=/nonexistent '%s' -top -lines -unit=ms -nodecount=100000 '%s' 2>/dev/null",
             bin, r->rec, process, prof, pprof, prof);
    FILE *p = popen(cmd, "r");
    if (!p)
        fail_msg("%s: cannot run pprof", r->name);
    char line[1024], where[512];
    uint64_t in = 0;
    *outside = 0;
    while (fgets(line, sizeof(line), p)) {
        unsigned long long flat;
        char name[256];
        if (sscanf(line, " %llums %*s %*s %*s %*s %255s %511s", &flat, name, where) != 3 ||
            strcmp(name, "leaf_loop"))
            continue;
        const char *colon = strrchr(where, ':');
        unsigned n = colon ? (unsigned)atoi(colon + 1) : 0;
        if (strncmp(where, SCRIPT_PATH ":", strlen(SCRIPT_PATH) + 1))
            *outside += flat;
        else if (n >= leaf->first && n <= leaf->last)
            in += flat;
        else
            *outside += flat;
    }
    int st = pclose(p);
    if (st != 0)
        fail_msg("%s: pprof exited with %d on %s", r->name, st, prof);
    return in;
}

static void check(const struct tb_result *r, const struct tb_scenario *s, void *ctx)
{
    unsigned *runs = ctx;
    struct script sc;
    read_script(&sc);
    tb_check_boot(r, s);
    char *ref = tb_reference(s->kernel, s->vcpus);
    tb_check_console_clean(r, s, ref);
    free(ref);
    if (!strstr(r->console, "HVTEST python chains done 3.11") ||
        !strstr(r->console, "HVTEST python chains done 3.13"))
        fail_msg("%s: the guest did not run both interpreters:\n%s", r->name, r->console);
    if (!strstr(r->summary, "  python: 2 interpreters (3.11: 1, 3.13: 1)"))
        fail_msg("%s: the recorder did not read both interpreters:\n%s", r->name, r->summary);

    struct profile p;
    profile_init(&p);
    struct hv_err err = {0};
    struct fxt_load_stats st;
    if (fxt_load_profile_file(r->rec, &p, &st, NULL, NULL, &err) < 0 ||
        profile_symbolize(&p, NULL, NULL, &err) < 0)
        fail_msg("%s: %s", r->name, err.msg);
    struct interp in[2] = {{.process = "python3.11"}, {.process = "python3.13"}};
    uint64_t others = 0, others_python = 0;
    for (size_t i = 0; i < p.samples.n; i++) {
        const struct prof_sample *sm = &p.samples.v[i];
        const char *proc = profile_process_name(&p, sm->pid);
        struct interp *it = NULL;
        for (unsigned k = 0; k < 2; k++)
            if (!strcmp(proc, in[k].process))
                it = &in[k];
        /* eval: an evaluation loop left where Python frames should be (rootward of the
         * leaf-most Python frame, or with none at all); one at the leaf end is a loop just
         * entered or leaving, running no frame. */
        bool python = false, eval = false, script = false;
        for (uint32_t k = 0; k < sm->nframes; k++) {
            const struct prof_frame *fr = &p.frames.v[sm->first + k];
            const struct prof_func *f = func_at(&p, fr);
            eval |= is_eval(&p, fr) && python;
            python |= f && (f->runtime == HVFXT_RUNTIME_PYTHON);
            script |= f && (f->runtime == HVFXT_RUNTIME_PYTHON) && f->file &&
                      !strcmp(f->file, SCRIPT_PATH);
        }
        for (uint32_t k = 0; !python && k < sm->nframes; k++)
            eval |= is_eval(&p, &p.frames.v[sm->first + k]);
        if (!it) {
            others++;
            others_python += python;
            continue;
        }
        it->samples++;
        /* In Python code: Python frames shown, or the evaluation loop left unmerged. */
        if (!python && !eval)
            continue;
        if (python && !script) {
            it->other++;
            continue;
        }
        it->in_python++;
        bool kinds[K_COUNT] = {0};
        if (!eval && exact_chain(&p, sm, &sc, it, kinds)) {
            it->exact++;
            for (unsigned k = 0; k < K_COUNT; k++)
                it->kinds[k] += kinds[k];
        } else if (eval && python) {
            show(&p, sm, it, "an evaluation loop left beside Python frames");
        }
    }
    profile_free(&p);
    printf("%s: %" PRIu64 " Python code records; other processes: %" PRIu64 " samples, %" PRIu64
           " with Python frames\n",
           r->name, st.runtime_codes, others, others_python);
    for (unsigned k = 0; k < 2; k++) {
        const struct interp *it = &in[k];
        double share = it->in_python ? (double)it->exact / (double)it->in_python : 0;
        printf("%s: %s: %" PRIu64 " samples, %" PRIu64 " in the start-up's Python code, %" PRIu64
               " in the program's, %" PRIu64
               " with the exact chain (%.1f %%, %.1f frames each); chains seen: %" PRIu64
               " recursion, %" PRIu64 " through C, %" PRIu64 " generator, %" PRIu64 " thread\n",
               r->name, it->process, it->samples, it->other, it->in_python, it->exact,
               100.0 * share, it->exact ? (double)it->frames / (double)it->exact : 0.0,
               it->kinds[K_RECURSE], it->kinds[K_THROUGH_C], it->kinds[K_GENERATOR],
               it->kinds[K_THREAD]);
        /* Start-up is the lesser part: a wrong file on the program's frames would show here. */
        if (it->in_python < 50 || it->other > it->in_python)
            fail_msg("%s: %s has %" PRIu64 " samples in the program's Python code, %" PRIu64
                     " in the start-up's",
                     r->name, it->process, it->in_python, it->other);
        if (share < 0.95)
            fail_msg("%s: %s: %.1f %% of the samples in Python code have the exact chain", r->name,
                     it->process, 100.0 * share);
        for (unsigned c = 0; c < K_COUNT; c++)
            if (!it->kinds[c])
                fail_msg("%s: %s: no sample shows %s", r->name, it->process, kind_names[c]);
    }
    if (others_python)
        fail_msg("%s: %" PRIu64 " samples of other processes have Python frames", r->name,
                 others_python);
    /* What pprof shows of leaf_loop: its own file and lines. */
    for (unsigned k = 0; k < 2; k++) {
        uint64_t outside;
        uint64_t in_ms = pprof_leaf_lines(r, in[k].process, func_of(&sc, "leaf_loop"), &outside);
        printf("%s: pprof -lines: %s: %" PRIu64 " ms in leaf_loop at its lines of %s, %" PRIu64
               " ms elsewhere\n",
               r->name, in[k].process, in_ms, SCRIPT_PATH, outside);
        if (in_ms < 50 || outside)
            fail_msg("%s: pprof shows %s's leaf_loop at its lines for %" PRIu64
                     " ms, elsewhere for %" PRIu64 " ms",
                     r->name, in[k].process, in_ms, outside);
    }
    (*runs)++;
}

static void test_python(void **state)
{
    (void)state;
    char out[4096];
    unsigned runs = 0;
    struct tb_scenario sel[TB_MAX_GROUP];
    unsigned repeat;
    size_t n = tb_run_group("python", 2, sel, &repeat, out, sizeof(out));
    for (size_t i = 0; i < n; i++)
        tb_each_run(out, &sel[i], repeat, check, &runs);
    assert_true(runs > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_python)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
