/* The recorder's sources, in the order the core calls them (sampler/source/source.h), and the
 * core's side of the interface: creating what a recording wants, calling each hook in table
 * order, naming a failing source in its error, and the core's queries the sources call. Adding
 * a source is its folder under sampler/sources/ and one row here (and in CMakeLists.txt). */
#include "sampler/flight.h"
#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"

extern const struct rec_source_ops rec_source_off_cpu;
extern const struct rec_source_ops rec_source_kernel;
extern const struct rec_source_ops rec_source_kernel_modules;
extern const struct rec_source_ops rec_source_user_modules;
extern const struct rec_source_ops rec_source_cfi;
extern const struct rec_source_ops rec_source_runtimes;
extern const struct rec_source_ops rec_source_copied_stacks;
extern const struct rec_source_ops rec_source_steal;
extern const struct rec_source_ops rec_source_exit_events;
extern const struct rec_source_ops rec_source_containers;

/* The order is the summary's (the kernel, its modules, the user modules, their unwind tables,
 * the language runtimes, copied stacks, exit events, off-CPU time), and it is also right where one
 * source's output is another's input within a pass:
 * - REC_STAGE_GUEST: the kernel is described before its modules are read;
 * - a look's modules are recorded (user-modules), then every address_space hook sees them in
 *   this order: cfi's tables are published before a runtime opens its interpreter;
 * - REC_STAGE_DRAINED: the kernel's panic check comes before copied-stacks and steal, which a
 *   flight recorder (the only reader of a panic's snapshot) runs without;
 * - REC_STAGE_NAMED: containers writes the control groups' records before off-CPU writes the
 *   records that carry them. */
const struct rec_source_ops *const rec_sources[] = {
    &rec_source_kernel,      &rec_source_kernel_modules, &rec_source_user_modules,
    &rec_source_cfi,         &rec_source_runtimes,       &rec_source_copied_stacks,
    &rec_source_exit_events, &rec_source_containers,     &rec_source_off_cpu,
    &rec_source_steal,
};
const size_t rec_nsources = sizeof(rec_sources) / sizeof(rec_sources[0]);

/* The core's queries (source.h), on the recording the env belongs to. */
static struct sampler *of(const struct rec_core *c)
{
    return (struct sampler *)c;
}

static bool core_may_work(const struct rec_core *c)
{
    return sampler_drain_may_work(of(c));
}

static void core_address_space(struct rec_core *c, uint32_t proc, const struct guestos_as *as,
                               const struct discover_module *found, size_t n, uint64_t began)
{
    struct sampler *s = of(c);
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].ops->address_space)
            s->src[i].ops->address_space(s->src[i].st, &s->env, proc, as, found, n);
    /* After every source published what it made of the look. */
    if (proc && proc <= ID_MAX_PROCS)
        s->looked[proc - 1] = began;
}

static uint64_t core_looked(const struct rec_core *c, uint32_t proc)
{
    const struct sampler *s = of(c);
    return proc && proc <= ID_MAX_PROCS ? s->looked[proc - 1] : 0;
}

static void core_snapshot(struct rec_core *c, const char *why)
{
    struct sampler *s = of(c);
    if (s->flight_on)
        sampler_flight_snapshot(s, why);
}

static void core_totals(const struct rec_core *c, struct sampler_totals *t)
{
    sampler_get_totals(of(c), t);
}

static void core_retire(struct rec_core *c, void *ptr, void (*free_fn)(void *))
{
    sampler_reclaim_retire(of(c), ptr, free_fn);
}

static const struct rec_core_ops core_ops = {
    .may_work = core_may_work,
    .address_space = core_address_space,
    .looked = core_looked,
    .snapshot = core_snapshot,
    .totals = core_totals,
    .retire = core_retire,
};

/* "source NAME: what failed"; a write error keeps saying which file. */
static void name_failure(const struct sampler *s, const struct rec_source_ops *ops,
                         struct hv_err *err)
{
    if (s->w.failed)
        hv_err_prefix(err, "cannot write %s", s->cfg.out_path);
    hv_err_prefix(err, "recorder source %s", ops->name);
}

int sampler_sources_create(struct sampler *s, struct hv_err *err)
{
    s->env = (struct rec_env){
        .cfg = &s->cfg,
        .os = &s->os,
        .core = &s->core,
        .w = &s->w,
        .meta = &s->meta,
        .modules = &s->modules,
        .files = &s->files,
        .kernel = &s->kernel,
        .flight_on = s->flight_on,
        .ops = &core_ops,
        .c = (struct rec_core *)s,
    };
    for (size_t i = 0; i < rec_nsources; i++) {
        const struct rec_source_ops *ops = rec_sources[i];
        if (ops->wanted && !ops->wanted(&s->cfg))
            continue;
        if (s->nsrc == SAMPLER_MAX_SOURCES)
            return hv_errf(err, "recorder: more than %u sources", SAMPLER_MAX_SOURCES);
        struct sampler_source *src = &s->src[s->nsrc++];
        src->ops = ops;
        if (ops->create && ops->create(&s->env, &src->st, err) < 0) {
            hv_err_prefix(err, "recorder source %s", ops->name);
            return -1; /* sampler_destroy frees what it made */
        }
    }
    return 0;
}

int sampler_sources_begin(struct sampler *s, struct hv_err *err)
{
    s->env.mem = s->mem;
    s->env.vm = s->vm;
    s->env.start_ns = s->start_ns;
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].ops->begin && s->src[i].ops->begin(s->src[i].st, &s->env, err) < 0) {
            name_failure(s, s->src[i].ops, err);
            return -1;
        }
    return 0;
}

int sampler_sources_poll(struct sampler *s, enum rec_stage stage, uint64_t now, bool final,
                         struct hv_err *err)
{
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct rec_source_ops *ops = s->src[i].ops;
        if (!ops->poll || !(ops->stages & REC_STAGE_BIT(stage)))
            continue;
        sampler_stage_begin(s);
        if (ops->poll(s->src[i].st, &s->env, stage, now, final, err) < 0) {
            name_failure(s, ops, err);
            return -1;
        }
    }
    return 0;
}

int sampler_sources_visit(void *ctx, const uint64_t *rec, uint32_t nwords, struct hv_err *err)
{
    struct sampler *s = ctx;
    for (size_t i = 0; i < s->nsrc; i++) {
        const struct rec_source_ops *ops = s->src[i].ops;
        if (ops->visit && ops->visit(s->src[i].st, &s->env, rec, nwords, err) < 0) {
            name_failure(s, ops, err);
            return -1;
        }
    }
    return 0;
}

void sampler_sources_summary(const struct sampler *s, FILE *out)
{
    for (size_t i = 0; i < s->nsrc; i++)
        if (s->src[i].ops->summary)
            s->src[i].ops->summary(s->src[i].st, &s->env, out);
}

void sampler_sources_destroy(struct sampler *s)
{
    for (size_t i = s->nsrc; i-- > 0;)
        if (s->src[i].ops->destroy)
            s->src[i].ops->destroy(s->src[i].st);
    s->nsrc = 0;
}
