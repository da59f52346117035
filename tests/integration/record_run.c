#include "record_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cmocka after the system headers */
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include "fxt/reader.h"
#include "schema/decode.h"
#include "guest_run.h"
#include "symbolize/elf_symbols.h"

static char *slurp(const char *path)
{
    char *s = guest_read_file(path, NULL);
    return s ? s : strdup("");
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int record_run(struct record_result *r, int signal_after_ms, int sig, int sig2, ...)
{
    memset(r, 0, sizeof(*r));
    static unsigned seq;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char err_path[256];
    snprintf(r->out_path, sizeof(r->out_path), "%s/hvprof-rec-%d-%u.fxt", tmp, getpid(), seq);
    snprintf(r->console_path, sizeof(r->console_path), "%s/hvprof-rec-%d-%u.log", tmp, getpid(),
             seq);
    snprintf(err_path, sizeof(err_path), "%s/hvprof-rec-%d-%u.err", tmp, getpid(), seq++);

    const char *argv[64] = {guest_build_path("cli/hvprof"),
                            "record",
                            "-o",
                            r->out_path,
                            "--console",
                            r->console_path,
                            "--guest",
                            "demo"};
    int argc = 8;
    va_list ap;
    va_start(ap, sig2);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 62)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;

    fprintf(stderr, "+");
    for (int i = 0; i < argc; i++)
        fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, "\n");

    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (signal_after_ms > 0) {
        sleep_ms(signal_after_ms);
        kill(pid, sig);
        if (sig2) {
            sleep_ms(200);
            kill(pid, sig2);
        }
    }
    int st;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
        FILE *f = fopen(path, "r");
        unsigned long long lo, hi, kib, total = 0;
        bool big = false;
        while (f && fgets(line, sizeof(line), f)) {
            if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2)
                big = hi - lo >= (256ull << 20);
            else if (sscanf(line, "Rss: %llu", &kib) == 1 && !big)
                total += kib;
        }
        if (f) {
            fclose(f);
            if (total && r->nrss < RECORD_RSS_MAX)
                r->rss_kib[r->nrss++] = total;
        }
        sleep_ms(RECORD_RSS_EVERY_MS);
    }
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r->term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    r->summary = slurp(err_path);
    r->console = slurp(r->console_path);
    unlink(err_path);
    fprintf(stderr, "%s", r->summary);
    return 0;
}

void record_result_free(struct record_result *r)
{
    free(r->summary);
    free(r->console);
    unlink(r->out_path);
    unlink(r->console_path);
    memset(r, 0, sizeof(*r));
}

/* ---- the model ---- */

struct prog_elf {
    char name[64];
    struct elf_symbols es;
};

struct module_rec {
    uint64_t id;
    uint8_t build_id[64];
    uint32_t len;
};

struct mapping_rec {
    uint64_t pid, module_id, start, size;
};

struct completion_rec {
    uint64_t id, pid, tid, walk;
    unsigned nuser;
    uint64_t user[RM_MAX_FRAMES];
    unsigned used;
};

struct loader {
    struct prog_elf progs[32];
    unsigned nprogs;
    struct module_rec mods[64];
    unsigned nmods;
    struct mapping_rec maps[512];
    unsigned nmaps;
    struct completion_rec *comp;
    size_t ncomp, comp_cap;
};

static void load_progs(struct loader *l)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", guest_build_path("tests/guest/progs"));
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && l->nprogs < 32) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".elf"))
            continue;
        struct prog_elf *p = &l->progs[l->nprogs];
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct hv_err err;
        if (elf_symbols_load_file(&p->es, path, &err) < 0)
            continue;
        snprintf(p->name, sizeof(p->name), "%.*s", (int)(n - 4), e->d_name);
        l->nprogs++;
    }
    closedir(d);
}

static const struct prog_elf *prog_of_addr(const struct loader *l, uint64_t pid, uint64_t addr)
{
    for (unsigned i = 0; i < l->nmaps; i++) {
        const struct mapping_rec *m = &l->maps[i];
        if (m->pid != pid || addr < m->start || addr - m->start >= m->size)
            continue;
        for (unsigned j = 0; j < l->nmods; j++) {
            if (l->mods[j].id != m->module_id)
                continue;
            for (unsigned k = 0; k < l->nprogs; k++) {
                const struct prog_elf *p = &l->progs[k];
                if (p->es.build_id_len == l->mods[j].len &&
                    !memcmp(p->es.build_id, l->mods[j].build_id, l->mods[j].len))
                    return p;
            }
        }
    }
    return NULL;
}

static const char *sym_name(const struct prog_elf *p, uint64_t addr)
{
    if (!p)
        return "";
    const struct sym *s = symtab_lookup(&p->es.syms, addr);
    return s ? symtab_name(&p->es.syms, s) : "";
}

static void copy_words(uint64_t *dst, unsigned *n, struct fxtr_words w)
{
    *n = w.n < RM_MAX_FRAMES ? w.n : RM_MAX_FRAMES;
    for (unsigned i = 0; i < *n; i++)
        dst[i] = fxtr_word(w, i);
}

void rm_load(struct rm_trace *t, const char *fxt_path)
{
    memset(t, 0, sizeof(*t));
    struct loader *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    load_progs(l);
    assert_true(l->nprogs > 0);

    const void *buf;
    size_t len;
    struct hv_err err;
    assert_int_equal(fxtr_map_file(fxt_path, &buf, &len, &err), 0);
    struct fxtr_reader rd;
    fxtr_init(&rd, buf, len);
    struct hvfxt_record *rec = malloc(sizeof(*rec));
    assert_non_null(rec);
    size_t cap = 0;
    int rc;
    while ((rc = hvfxt_next(&rd, rec, &err)) == 1) {
        if (rec->kind == HVFXT_REC_LOSS) {
            t->loss_records++;
            t->dropped += rec->u.loss.dropped;
        } else if (rec->kind == HVFXT_REC_MODULE && l->nmods < 64) {
            const struct hvfxt_module_view *mv = &rec->u.module;
            struct module_rec *m = &l->mods[l->nmods++];
            m->id = mv->id;
            m->len = mv->build_id_len > 64 ? 64 : mv->build_id_len;
            memcpy(m->build_id, mv->build_id, m->len);
        } else if (rec->kind == HVFXT_REC_MAPPING && l->nmaps < 512) {
            const struct hvfxt_mapping *mp = &rec->u.mapping;
            l->maps[l->nmaps++] = (struct mapping_rec){mp->pid, mp->module_id, mp->start, mp->size};
        } else if (rec->kind == HVFXT_REC_SAMPLE) {
            const struct hvfxt_sample_view *fs = &rec->u.sample;
            if (fs->fields & HVFXT_SF_CONTINUATION_COMPLETION) {
                if (l->ncomp == l->comp_cap) {
                    l->comp_cap = l->comp_cap ? 2 * l->comp_cap : 256;
                    l->comp = realloc(l->comp, l->comp_cap * sizeof(*l->comp));
                    assert_non_null(l->comp);
                }
                struct completion_rec *c = &l->comp[l->ncomp++];
                memset(c, 0, sizeof(*c));
                c->id = fs->completion;
                c->pid = fs->pid;
                c->tid = fs->tid;
                c->walk = fs->walk;
                copy_words(c->user, &c->nuser, fs->user_stack);
                t->completions++;
                if (hvfxt_stop_is_abandoned(hvfxt_walk_user_stop(fs->walk)))
                    t->abandoned_completions++;
                continue;
            }
            if (t->n == cap) {
                cap = cap ? 2 * cap : 1024;
                t->s = realloc(t->s, cap * sizeof(*t->s));
                assert_non_null(t->s);
            }
            struct rm_sample *s = &t->s[t->n++];
            memset(s, 0, sizeof(*s));
            s->ts = fs->ts;
            s->pid = fs->pid;
            s->tid = fs->tid;
            s->vcpu = fs->vcpu;
            s->cpl = fs->cpl;
            s->pc = fs->pc;
            s->walk = fs->walk;
            s->continuation = (fs->fields & HVFXT_SF_CONTINUATION) ? fs->continuation : 0;
            copy_words(s->user, &s->nuser, fs->user_stack);
            copy_words(s->kernel, &s->nkernel, fs->kernel_stack);
        }
    }
    if (rc < 0)
        fail_msg("%s: %s", fxt_path, err.msg);
    free(rec);
    fxtr_free(&rd);
    fxtr_unmap_file(buf, len);

    /* Join partial records with their completions (RFC-0274: a completion closes every earlier
     * record that carried its id). */
    for (size_t i = 0; i < l->ncomp; i++) {
        bool any = false;
        for (size_t j = 0; j < t->n; j++)
            if (t->s[j].continuation == l->comp[i].id)
                any = true;
        if (!any)
            t->orphan_completions++;
        for (size_t k = 0; k < i; k++)
            if (l->comp[k].id == l->comp[i].id)
                t->duplicate_completions++;
    }
    for (size_t j = 0; j < t->n; j++) {
        struct rm_sample *s = &t->s[j];
        if (!s->continuation)
            continue;
        for (size_t i = 0; i < l->ncomp; i++) {
            const struct completion_rec *c = &l->comp[i];
            if (c->id != s->continuation)
                continue;
            unsigned ustop = (unsigned)((c->walk >> HVFXT_WALK_USER_SHIFT) & 0xff);
            s->completion_pid = c->pid;
            s->completion_tid = c->tid;
            if (ustop >= HVFXT_STOP_ABANDONED_TIMEOUT || c->nuser == 0) {
                s->abandoned = true;
            } else {
                s->completed = true;
                s->nuser = c->nuser;
                memcpy(s->user, c->user, c->nuser * sizeof(uint64_t));
            }
            break;
        }
    }
    /* Symbolize user frames: frame 0 is an exact PC, the others return addresses (look up
     * address - 1, so a call at the very end of a function is not charged to the next one).
     * The program is the one whose ELF the recorder found at 0x400000 in the sample's address
     * space (module discovery from guest memory). */
    for (size_t j = 0; j < t->n; j++) {
        struct rm_sample *s = &t->s[j];
        const struct prog_elf *main_prog = prog_of_addr(l, s->pid, 0x400000);
        s->prog = main_prog ? main_prog->name : "";
        for (unsigned f = 0; f < s->nuser; f++) {
            uint64_t a = f == 0 ? s->user[f] : s->user[f] - 1;
            const struct prog_elf *p = prog_of_addr(l, s->pid, a);
            s->user_sym[f] = sym_name(p, a);
        }
    }
    free(l->comp);
    l->comp = NULL;
    t->priv = l; /* the symbol names point into its ELF tables */
}

void rm_free(struct rm_trace *t)
{
    struct loader *l = t->priv;
    if (l) {
        for (unsigned i = 0; i < l->nprogs; i++)
            elf_symbols_free(&l->progs[i].es);
        free(l);
    }
    free(t->s);
    memset(t, 0, sizeof(*t));
}

const char *rm_user_chain(const struct rm_sample *s, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned i = s->nuser; i-- > 0;) {
        int n = snprintf(buf + off, len - off, "%s%s", off ? ";" : "",
                         s->user_sym[i] && s->user_sym[i][0] ? s->user_sym[i] : "?");
        if (n < 0 || (size_t)n >= len - off)
            break;
        off += (size_t)n;
    }
    return buf;
}

bool rm_user_chain_starts(const struct rm_sample *s, const char *prefix)
{
    char buf[8192];
    rm_user_chain(s, buf, sizeof(buf));
    size_t n = strlen(prefix);
    return !strncmp(buf, prefix, n) && (buf[n] == '\0' || buf[n] == ';');
}
