#include "sampler/sources/tests/fake_env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "schema/recording.h"

static struct fake_env *of(const struct rec_core *c)
{
    return (struct fake_env *)c;
}

static bool fake_may_work(const struct rec_core *c)
{
    return of(c)->may_work;
}

static void fake_address_space(struct rec_core *c, uint32_t proc, const struct guestos_as *as,
                               const struct discover_module *found, size_t n, uint64_t began)
{
    (void)as;
    (void)found;
    struct fake_env *f = of(c);
    f->looks++;
    f->looked_proc = proc;
    f->looked_n = n;
    f->looked_began = began;
}

static uint64_t fake_looked(const struct rec_core *c, uint32_t proc)
{
    return proc && proc == of(c)->looked_proc ? of(c)->looked_began : 0;
}

static void fake_snapshot(struct rec_core *c, const char *why)
{
    struct fake_env *f = of(c);
    f->snapshots++;
    snprintf(f->last_snapshot, sizeof(f->last_snapshot), "%s", why);
}

static void fake_totals(const struct rec_core *c, struct sampler_totals *t)
{
    *t = of(c)->totals;
}

/* No vCPU thread runs in a source test: what is retired goes at once, counted. */
static void fake_retire(struct rec_core *c, void *ptr, void (*free_fn)(void *))
{
    of(c)->retired++;
    free_fn(ptr);
}

static const struct rec_core_ops fake_ops = {
    .may_work = fake_may_work,
    .address_space = fake_address_space,
    .looked = fake_looked,
    .snapshot = fake_snapshot,
    .totals = fake_totals,
    .retire = fake_retire,
};

void fake_env_init(struct fake_env *f, unsigned nvcpus)
{
    memset(f, 0, sizeof(*f));
    struct hv_err err = {0};
    f->cfg = (struct sampler_config){
        .out_path = "fake.fxt", .nvcpus = nvcpus, .hz = 1000, .max_depth = 64};
    if (guestos_open(&f->os, "generic", &err) < 0)
        fail_msg("%s", err.msg);
    f->core.nvcpus = nvcpus;
    f->core.ids = calloc(1, sizeof(*f->core.ids));
    f->core.v = calloc(nvcpus, sizeof(*f->core.v));
    assert_non_null(f->core.ids);
    assert_non_null(f->core.v);
    id_table_init(f->core.ids);
    f->core.os = &f->os;
    for (unsigned i = 0; i < nvcpus; i++) {
        f->core.v[i].core = &f->core;
        f->core.v[i].index = i;
    }
    f->fd = memfd_create("fake-recording", MFD_CLOEXEC);
    assert_true(f->fd >= 0);
    if (hvfxt_recording_open_fd(&f->w, dup(f->fd), "fake.fxt", 1000000000ull, nvcpus, "guest",
                                &err) < 0)
        fail_msg("%s", err.msg);
    f->meta = (struct meta_budget){
        .max = META_BUDGET_DEFAULT, .w = &f->w, .not_meta = f->w.words_written * 8};
    discover_registry_init(&f->modules);
    f->modules.budget = &f->meta;
    f->may_work = true;
    f->env = (struct rec_env){
        .cfg = &f->cfg,
        .os = &f->os,
        .core = &f->core,
        .w = &f->w,
        .meta = &f->meta,
        .modules = &f->modules,
        .files = &f->files,
        .kernel = &f->kernel,
        .start_ns = hv_now_ns(),
        .ops = &fake_ops,
        .c = (struct rec_core *)f,
    };
}

int fake_env_create(struct fake_env *f, const struct rec_source_ops *ops, bool expect_fail)
{
    struct hv_err err = {0};
    f->ops = ops;
    int rc = ops->create ? ops->create(&f->env, &f->st, &err) : 0;
    if (!expect_fail && rc < 0)
        fail_msg("%s: %s", ops->name, err.msg);
    return rc;
}

int fake_env_poll(struct fake_env *f, enum rec_stage stage, uint64_t now, bool final)
{
    struct hv_err err = {0};
    assert_true(f->ops->stages & REC_STAGE_BIT(stage));
    return f->ops->poll(f->st, &f->env, stage, now, final, &err);
}

void fake_env_summary(struct fake_env *f, char *buf, size_t len)
{
    buf[0] = 0;
    FILE *out = fmemopen(buf, len, "w");
    assert_non_null(out);
    if (f->ops->summary)
        f->ops->summary(f->st, &f->env, out);
    fclose(out);
}

uint8_t *fake_env_file(struct fake_env *f, size_t *len)
{
    struct hv_err err = {0};
    if (fxt_writer_flush(&f->w, &err) < 0)
        fail_msg("%s", err.msg);
    off_t n = lseek(f->fd, 0, SEEK_END);
    assert_true(n > 0);
    uint8_t *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(pread(f->fd, buf, (size_t)n, 0), n);
    *len = (size_t)n;
    return buf;
}

void fake_env_each(struct fake_env *f, void (*fn)(void *ctx, const struct hvfxt_record *x),
                   void *ctx)
{
    size_t len;
    uint8_t *buf = fake_env_file(f, &len);
    struct fxtr_reader r;
    fxtr_init(&r, buf, len);
    struct hvfxt_record *x = malloc(sizeof(*x));
    assert_non_null(x);
    struct hv_err err = {0};
    int rc;
    while ((rc = hvfxt_next(&r, x, &err)) == 1)
        fn(ctx, x);
    if (rc < 0)
        fail_msg("the fake's recording: %s", err.msg);
    free(x);
    fxtr_free(&r);
    free(buf);
}

struct count_ctx {
    int kind;
    const char *marker;
    unsigned n;
};

static void count_one(void *ctx, const struct hvfxt_record *x)
{
    struct count_ctx *c = ctx;
    if ((int)x->kind != c->kind)
        return;
    if (c->marker && !(x->fxt.type == FXTR_EVENT && fxtr_str_is(x->fxt.u.event.name, c->marker)))
        return;
    c->n++;
}

unsigned fake_env_count(struct fake_env *f, int kind, const char *marker)
{
    struct count_ctx c = {kind, marker, 0};
    fake_env_each(f, count_one, &c);
    return c.n;
}

void fake_env_fini(struct fake_env *f)
{
    if (f->ops && f->ops->destroy)
        f->ops->destroy(f->st);
    fxt_writer_close(&f->w, NULL);
    close(f->fd);
    discover_registry_free(&f->modules);
    module_files_free(&f->files);
    free(f->core.v);
    free(f->core.ids);
    guestos_close(&f->os);
}
